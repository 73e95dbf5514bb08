"""The build's worker processes (the same bytes as one process; a failure in one stops the build)
and what a process keeps from one build for its next (only what equal inputs or bytes vouch for)."""
from __future__ import annotations

import dataclasses

import pytest

from publisher import pipeline
from publisher.endpoints import operators
from publisher.endpoints.registry import Rows
from publisher.pipeline import build
from publisher.tree import RECORD
from publisher.validate import load_dir


@pytest.fixture(autouse=True)
def pinned_time(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")


def test_workers_write_what_one_process_writes(demo_snapshot, demo_profile, tmp_path, monkeypatch):
    trees = {}
    for cores in (1, 3):
        monkeypatch.setattr(pipeline, "_cores", lambda cores=cores: cores)
        out = tmp_path / str(cores) / "out"
        built = build(demo_snapshot, demo_profile, out, full=True)
        assert built.rendered == built.count - 1  # all but /status, which is rendered apart
        trees[cores] = load_dir(out), (out / RECORD).read_bytes()
    assert trees[1] == trees[3]


def test_workers_carry_and_render_an_incremental_build(demo_snapshot, demo_profile, tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "_cores", lambda: 2)
    out = tmp_path / "out"
    build(demo_snapshot, demo_profile, out)
    entities = sum(1 for _ in pipeline.bodies(pipeline.context(demo_snapshot, demo_profile), entities=True))
    again = build(demo_snapshot, demo_profile, out)
    assert again.carried >= entities  # every per-entity file, whichever worker walked it
    monkeypatch.setattr(pipeline, "code_digest", lambda: "another build of the publisher")  # every key differs
    built = build(demo_snapshot, demo_profile, out)
    assert built.carried < 20 and built.rendered > 20
    full = tmp_path / "full" / "out"
    build(demo_snapshot, demo_profile, full, full=True)
    assert load_dir(out) == load_dir(full)


def test_a_failing_worker_stops_the_build_and_leaves_out_as_it_was(demo_snapshot, demo_profile, tmp_path, monkeypatch):
    out = tmp_path / "out"
    build(demo_snapshot, demo_profile, out)
    before = load_dir(out)
    encode = pipeline.encode

    def broken(path, body):
        if path.startswith("/minipools/NodeID-"):
            raise RuntimeError(f"cannot encode {path}")
        return encode(path, body)

    monkeypatch.setattr(pipeline, "encode", broken)
    monkeypatch.setattr(pipeline, "_cores", lambda: 2)
    with pytest.raises(RuntimeError, match="cannot encode /minipools/NodeID-"):
        build(demo_snapshot, demo_profile, out, full=True)
    assert load_dir(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.a", "out"]  # the other tree removed


def test_a_carried_aggregate_is_parsed_again_only_when_its_bytes_are_not_the_ones_read_last(
        demo_snapshot, demo_profile, tmp_path, monkeypatch):
    reads: list[str] = []
    loads = pipeline.strict_loads
    monkeypatch.setattr(pipeline, "strict_loads", lambda data: (reads.append(data[:40]), loads(data))[1])
    out = tmp_path / "out"
    build(demo_snapshot, demo_profile, out)
    reads.clear()
    build(demo_snapshot, demo_profile, out)  # /stakers carried, its extract kept from the last build
    assert not [r for r in reads if b'"stakers":' in r or b'"count":' in r]
    monkeypatch.setattr(pipeline, "_REMEMBERED", {})  # another process: the carried files are read
    build(demo_snapshot, demo_profile, out)
    assert len(reads) >= 2
    bodies = {path: pipeline.strict_loads(data) for path, data in load_dir(out).items() if path in pipeline.INVARIANT_READS}
    assert {"/stakers", "/minipools"} <= pipeline._REMEMBERED.keys() <= bodies.keys()
    for path, (sha, extract) in pipeline._REMEMBERED.items():  # what was kept is what those bytes say
        assert sha == pipeline.sha256(load_dir(out)[path])
        assert extract == pipeline._kept(path, bodies[path])


def test_stakers_rows_are_reused_only_while_their_inputs_are_equal(demo_snapshot, demo_profile, tmp_path, monkeypatch):
    monkeypatch.setattr(operators, "_STAKER_ROWS", Rows())
    build(demo_snapshot, demo_profile, tmp_path / "a" / "out")
    before = {id(r) for r in operators._STAKER_ROWS.last.values()}
    first = demo_snapshot.stakers[0]
    changed = dataclasses.replace(demo_snapshot, stakers=(dataclasses.replace(first, ggp_rewards=first.ggp_rewards + 10**18),
                                                          *demo_snapshot.stakers[1:]))
    build(changed, demo_profile, tmp_path / "b" / "out")
    rows = operators._STAKER_ROWS.last
    assert len(rows) == len(changed.stakers)
    assert sum(id(r) in before for r in rows.values()) == len(changed.stakers) - 1  # all but the changed staker's
    monkeypatch.setattr(operators, "_STAKER_ROWS", Rows())  # another process: every row made afresh
    build(changed, demo_profile, tmp_path / "c" / "out", full=True)
    assert load_dir(tmp_path / "b" / "out") == load_dir(tmp_path / "c" / "out")
