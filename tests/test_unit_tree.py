"""The tree's record as written: the same bytes as the plain canonical encoding, however many
records the process encoded before. A finished tree holds what its record lists, and nothing else."""
from __future__ import annotations

import hashlib
import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.build.tree import RECORD_FORMAT, Entry, Records, TreeWriter, list_files, read_record, record_chunks
from publisher.endpoints.meta import files_digest

PATHS = st.text(alphabet="/abcdefxyz0123456789.{}é\"\\", min_size=1, max_size=12)
DIGESTS = st.one_of(st.none(), st.text(alphabet="0123456789abcdef", min_size=1, max_size=8))
ENTRIES = st.builds(Entry, DIGESTS.map(lambda d: d or "0"), st.integers(0, 10**12), DIGESTS, DIGESTS,
                    st.integers(0, 2**63), st.integers(0, 2**40))
RECORDS = st.fixed_dictionaries({
    "format": st.just("ggp-publisher-build/3"), "run": DIGESTS, "network": st.sampled_from(["devnet", "mainnet"]),
    "chainId": st.integers(1, 10**6), "block": st.fixed_dictionaries({"number": st.integers(0, 10**9), "hash": DIGESTS}),
    "files": st.dictionaries(PATHS, ENTRIES, max_size=20),
})


def encode_record(record: dict, known: Records | None = None) -> bytes:
    return b"".join(record_chunks(record, known))


def plain(record: dict) -> bytes:
    return json.dumps(record, separators=(",", ":"), sort_keys=True).encode()


@settings(max_examples=200, deadline=None)
@given(RECORDS, RECORDS, st.data())
def test_a_record_encodes_as_its_canonical_json_after_any_other(first, second, data):
    known = Records()
    assert encode_record(first, known) == plain(first)
    # The second record shares some of the first's entries, changes others and adds its own.
    kept = data.draw(st.lists(st.sampled_from(sorted(first["files"])), unique=True) if first["files"] else st.just([]))
    second["files"].update({p: first["files"][p] for p in kept})
    assert encode_record(second, known) == plain(second)
    assert encode_record(second) == plain(second)
    once = Records(rebuilds=False)  # a process that builds once keeps no texts for a next record
    assert encode_record(second, once) == plain(second) and once.encoded is None
    assert dict(zip(known.encoded.paths, known.encoded.entries, strict=True)) == second["files"]
    # The same paths again, some entries moved (equal copies, others changed): the members that moved.
    third = {**second, "files": dict(second["files"])}
    for path in data.draw(st.lists(st.sampled_from(sorted(third["files"])), unique=True) if third["files"] else st.just([])):
        e = third["files"][path]
        third["files"][path] = e._replace(inode=e.inode + 1) if data.draw(st.booleans()) else Entry(*e)
    assert encode_record(third, known) == plain(third)
    assert encode_record(first, known) == plain(first)
    assert encode_record(second, known) == plain(second)


def test_a_record_of_many_files_is_written_in_pieces_that_join_to_its_canonical_json():
    files = {f"/stakers/0x{i:040x}": Entry(f"{i:064x}", i, None if i % 3 else f"{i:032x}", None, i, i) for i in range(9_001)}
    record = {"format": RECORD_FORMAT, "run": None, "network": "devnet", "chainId": 1, "block": {"number": 1}, "files": files}
    for known in (None, Records(), Records(rebuilds=False)):
        pieces = list(record_chunks(record, known))
        assert b"".join(pieces) == plain(record)
        assert max(map(len, pieces)) < len(plain(record)) // 2  # never the whole text at once


def test_the_status_digest_hashed_in_pieces_is_the_digest_of_its_lines():
    files = {f"/withdrawals/0x{i:040x}": (f"{i:064x}", i) for i in range(9_001)}
    lines = "".join(f"{p} {files[p][0]}\n" for p in sorted(files))
    assert files_digest(files) == hashlib.sha256(lines.encode()).hexdigest()


def test_a_finished_tree_holds_its_record_and_nothing_else(tmp_path):
    """What the tree held and no longer should goes, and whatever else was put there: a stray file
    beside wanted ones, a folder of them, a folder the build no longer writes into, a symbolic
    link (not followed). Dot-names stay: the record is one."""
    tree = tmp_path / ".out.a"
    first = TreeWriter(tree)
    files = {}
    for path in ("/a", "/x/b", "/x/y/c", "/gone/d", "/x/old"):
        data = path.encode()
        files[path] = Entry("0" * 64, len(data), None, None, *first.write(path, data, "0" * 64))
    first.finish({"format": RECORD_FORMAT, "run": None, "files": files})
    (tree / "x" / "stray.json").write_text("{}")
    (tree / "x" / "y" / "deep").mkdir()
    (tree / "x" / "y" / "deep" / "e.json").write_text("{}")
    (tree / "elsewhere").symlink_to(tmp_path)
    (tree / "x" / ".hidden").write_text("kept")
    known = Records()
    again = TreeWriter(tree, read_record(tree, known))
    kept = {p: files[p] for p in ("/a", "/x/b", "/x/y/c")}
    again.finish({"format": RECORD_FORMAT, "run": None, "files": kept}, known)
    assert sorted(list_files(os.fspath(tree))) == ["a.json", "x/b.json", "x/y/c.json"]
    assert sorted(os.listdir(tree)) == [".build.json", "a.json", "x"] and (tree / "x" / ".hidden").exists()
    assert tmp_path.exists()  # the link went, not what it pointed at
    # The same paths again (their folders known from the last finish): a stray file still goes.
    (tree / "x" / "y" / "stray.json").write_text("{}")
    TreeWriter(tree, read_record(tree, known)).finish({"format": RECORD_FORMAT, "run": None, "files": kept}, known)
    assert sorted(list_files(os.fspath(tree))) == ["a.json", "x/b.json", "x/y/c.json"]
