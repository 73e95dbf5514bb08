"""The build's worker processes (the same bytes as one process, and as the plain core; a failure in
one stops the build) and what a caller's cache keeps from one build for its next (only what equal
inputs or bytes vouch for)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from publisher.build import pipeline, validate
from publisher.build.incremental import Cache, build
from publisher.build.tree import RECORD, sha256
from publisher.build.validate import load_dir, strict_loads
from publisher.compute.nodeid import node_id
from publisher.endpoints.operators import staker_row
from publisher.endpoints.registry import file_for


@pytest.fixture(autouse=True)
def pinned_time(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")


def test_workers_write_what_one_process_and_the_plain_core_write(demo_snapshot, demo_profile, tmp_path):
    trees = {}
    for workers in (1, 3):
        out = tmp_path / str(workers) / "out"
        built = build(demo_snapshot, demo_profile, out, cache=Cache(), workers=workers)
        assert built.rendered == built.count - 1  # all but /status, which is rendered apart
        record = json.loads((out / RECORD).read_bytes())
        # Each file's modification time and inode are the tree's own; the rest is the same.
        record["files"] = {path: entry[:4] for path, entry in record["files"].items()}
        trees[workers] = load_dir(out), record
    assert trees[1] == trees[3]
    plain = tmp_path / "plain" / "out"
    pipeline.build(demo_snapshot, demo_profile, plain)
    assert load_dir(plain) == trees[1][0]


def test_the_shares_of_the_per_entity_files_partition_them_and_keep_an_entitys_files_together(demo_snapshot, demo_profile):
    """Each worker declares only its share of every per-entity endpoint's files; the shares are the
    whole, without overlap, and a staker's /stakers and /rewards files (a requester's JSON, page and
    calendar) fall in one share, so that the worker making them keys their records once."""
    ctx = pipeline.context(demo_snapshot, demo_profile)
    every = [path for _, path, _ in pipeline.bodies(ctx, entities=True)]
    n = 3
    shares = []
    for k in range(n):
        ctx.share = (k, n)
        shares.append([path for _, path, _ in pipeline.bodies(ctx, entities=True)])
    assert sorted(p for share in shares for p in share) == sorted(every)
    assert all(len(s) < len(every) for s in shares)

    def entity(path: str) -> str:
        return path.rsplit("/", 1)[1].split(".")[0]

    owner = {}
    for k, share in enumerate(shares):
        for path in share:
            assert owner.setdefault((path.split("/")[1] == "withdrawals", entity(path)), k) == k, path
    assert {"/stakers", "/rewards", "/withdrawals"} <= {"/" + p.split("/")[1] for p in every}


def test_workers_carry_and_render_an_incremental_build(demo_snapshot, demo_profile, tmp_path):
    out, cache = tmp_path / "out", Cache()
    build(demo_snapshot, demo_profile, out, cache=cache, workers=2)
    entities = sum(1 for _ in pipeline.bodies(pipeline.context(demo_snapshot, demo_profile), entities=True))
    again = build(demo_snapshot, demo_profile, out, cache=cache, workers=2)
    assert again.carried >= entities  # every per-entity file, whichever worker walked it
    # The live record says another build of the publisher wrote it: its keys vouch for nothing.
    record = json.loads((out / RECORD).read_bytes())
    (out / RECORD).write_text(json.dumps({**record, "run": "another build of the publisher"}))
    built = build(demo_snapshot, demo_profile, out, cache=cache, workers=2)
    assert built.carried < 20 and built.rendered > 20
    full = tmp_path / "full" / "out"
    pipeline.build(demo_snapshot, demo_profile, full)
    assert load_dir(out) == load_dir(full)


def test_the_record_holds_each_files_own_modification_time_and_inode(demo_snapshot, demo_profile, tmp_path):
    """Two full builds write every file anew into each tree; an incremental build then keeps the
    copies the tree holds rather than linking the live ones: each entry is the file's own."""
    import os

    out = tmp_path / "out"
    for _ in range(2):
        pipeline.build(demo_snapshot, demo_profile, out)
    again = build(demo_snapshot, demo_profile, out, cache=Cache(), workers=2)
    assert again.written == 0  # the same snapshot and time: the tree held every file already
    record = json.loads((out / RECORD).read_bytes())
    for path, entry in record["files"].items():
        st = os.stat(out / file_for(path))
        assert (entry[1], entry[4], entry[5]) == (st.st_size, st.st_mtime_ns, st.st_ino), path
    assert build(demo_snapshot, demo_profile, out, cache=Cache(), workers=2).written == 0


def test_a_failing_worker_stops_the_build_and_leaves_out_as_it_was(demo_snapshot, demo_profile, tmp_path):
    out, cache = tmp_path / "out", Cache()
    build(demo_snapshot, demo_profile, out, cache=cache, workers=2)  # into .out.a
    m = demo_snapshot.minipools[0]
    changed = dataclasses.replace(demo_snapshot, minipools=(dataclasses.replace(m, delegation_fee=m.delegation_fee + 1),
                                                            *demo_snapshot.minipools[1:]))
    build(changed, demo_profile, out, cache=cache, workers=2)  # into .out.b, the minipool's file changed
    before = load_dir(out)
    # The next build brings .out.a up to date: where it must replace that file, a directory.
    victim = tmp_path / ".out.a" / "minipools" / f"{node_id(m.node_id)}.json"
    victim.unlink()
    victim.mkdir()
    with pytest.raises(IsADirectoryError, match="minipools/NodeID-"):  # raised in a worker, reported here
        build(changed, demo_profile, out, cache=cache, workers=2)
    assert load_dir(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.b", "out"]  # the other tree removed


def test_a_carried_aggregate_is_read_again_only_when_its_bytes_are_not_the_ones_read_last(
        demo_snapshot, demo_profile, tmp_path):
    out, cache = tmp_path / "out", Cache()
    build(demo_snapshot, demo_profile, out, cache=cache, workers=1)
    kept = dict(cache.reads)
    assert {"/stakers", "/minipools"} <= kept.keys() <= validate.extracts().keys()
    build(demo_snapshot, demo_profile, out, cache=cache, workers=1)  # /stakers and /minipools carried
    for path in ("/stakers", "/minipools"):
        assert cache.reads[path][1] is kept[path][1]  # what the invariants read of it: kept, not parsed again
    fresh = Cache()  # another process: the carried files are read
    build(demo_snapshot, demo_profile, out, cache=fresh, workers=1)
    files = load_dir(out)
    assert {"/stakers", "/minipools"} <= fresh.reads.keys()
    for path, (sha, extract) in fresh.reads.items():  # what was kept is what those bytes say
        assert sha == sha256(files[path])
        assert extract == validate.extract(path, strict_loads(files[path]))
    assert fresh.reads["/stakers"][1] is not kept["/stakers"][1]


def test_stakers_rows_are_reused_only_while_their_items_are_equal(demo_snapshot, demo_profile, tmp_path):
    cache = Cache()
    build(demo_snapshot, demo_profile, tmp_path / "a" / "out", cache=cache, workers=1)
    before = [r for _, r in cache.rows.last[staker_row].values()]  # held, so no new row can take an old one's id
    first = demo_snapshot.stakers[0]
    changed = dataclasses.replace(demo_snapshot, stakers=(dataclasses.replace(first, ggp_rewards=first.ggp_rewards + 10**18),
                                                          *demo_snapshot.stakers[1:]))
    build(changed, demo_profile, tmp_path / "b" / "out", cache=cache, workers=1)
    rows = [r for _, r in cache.rows.last[staker_row].values()]
    assert len(rows) == len(changed.stakers)
    reused = {id(r) for r in before}
    assert sum(id(r) in reused for r in rows) == len(changed.stakers) - 1  # all but the changed staker's
    pipeline.build(changed, demo_profile, tmp_path / "c" / "out")  # the plain core: every row made afresh
    assert load_dir(tmp_path / "b" / "out") == load_dir(tmp_path / "c" / "out")
