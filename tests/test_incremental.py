"""The incremental build against a full one, on a devnet that moves between builds.

Each step changes a few things on a private demo devnet through the devnet-only setters (a
staker's unclaimed rewards, a staker's stake — which moves every estimate —, a new staker, or
nothing but a new block), reads it again, and builds twice: with the incremental layer over the
previous tree (one cache for every step, as ``publisher watch``; forked workers), and with the plain
core (every file rendered and validated) over its own previous tree. The two trees must hold the
same bytes every time.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import threading

import pytest
from ggp_devnet import devnet_profile, running
from ggp_devnet.changes import write_stakers

from publisher.build import pipeline
from publisher.build.incremental import Cache
from publisher.build.incremental import build as incremental
from publisher.build.tree import RECORD
from publisher.build.validate import load_dir
from publisher.collect import collect
from publisher.compute import params as P
from publisher.compute import rewards as R
from publisher.config import load_profile
from publisher.errors import PublisherError
from publisher.snapshot import Staker

EPOCH = "1800000000"
WAD = 10**18


@pytest.fixture(scope="module")
def net():
    with running("demo") as devnet:  # its own devnet: these tests change the chain
        yield devnet


@pytest.fixture(scope="module")
def profile(net):
    return devnet_profile(load_profile("devnet"), net)


@pytest.fixture(autouse=True)
def pinned_time(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)


KINDS = ("rewards", "stake", "new", "nothing")


def build(snap, profile, out, cache: Cache | None = None):
    """The incremental build, as a watch makes it (with its cache) or a fresh process (without)."""
    return incremental(snap, profile, out, cache=cache or Cache(), workers=2)


def change(net, snap, rng: random.Random, kind: str) -> str:
    stakers = list(snap.stakers)
    picked: list[Staker] = []
    if kind == "rewards":
        for st in rng.sample(stakers, rng.randint(1, 4)):
            picked.append(dataclasses.replace(st, ggp_rewards=st.ggp_rewards + rng.randint(1, 50) * WAD))
    elif kind == "stake":
        st = rng.choice([s for s in stakers if s.ggp_staked > 10 * WAD])
        picked.append(dataclasses.replace(st, ggp_staked=st.ggp_staked - rng.randint(1, 10) * WAD))
    elif kind == "new":
        addr = "0x" + rng.getrandbits(160).to_bytes(20, "big").hex()
        picked.append(dataclasses.replace(stakers[0], staker_addr=addr, ggp_rewards=rng.randint(0, 9) * WAD))
    write_stakers(net.url, net.addresses["Staking"], picked)
    return f"{kind} x{len(picked)}"


def test_incremental_builds_equal_full_builds_over_random_changes(net, profile, tmp_path):
    rng = random.Random(int(os.environ.get("INCREMENTAL_SEED", "15")))
    inc, full, cache = tmp_path / "inc" / "out", tmp_path / "full" / "out", Cache()
    snap = collect(profile).snapshot
    build(snap, profile, inc, cache)
    pipeline.build(snap, profile, full)
    kinds = [*KINDS, *rng.choices(KINDS, k=3)]
    rng.shuffle(kinds)  # every kind of change at least once, in a random order
    steps: list[str] = []
    for kind in kinds:
        steps.append(change(net, snap, rng, kind))
        before = load_dir(inc)
        snap = collect(profile).snapshot
        built = build(snap, profile, inc, cache)
        pipeline.build(snap, profile, full)
        after = load_dir(inc)
        assert after == load_dir(full), f"after {steps}"
        assert json.loads(after["/status"])["block"]["number"] == snap.block.number
        changed = {p for p in after if before.get(p) != after[p]}
        assert built.rendered < len(after)  # the static docs at least are carried
        if steps[-1].startswith(("rewards", "nothing")):
            # Local changes: every staker's file not named stays as it was, and so does /minipools
            # (its meta.block included), while /status moves to the new block.
            assert not any(p.startswith("/minipools") for p in changed), steps
            assert "/status" in changed and len([p for p in changed if p.startswith("/stakers/")]) <= 4
            assert built.rendered <= 30, (steps, built.rendered)


def test_an_unchanged_aggregate_keeps_its_bytes_and_block(net, profile, tmp_path):
    out = tmp_path / "out"
    first = collect(profile).snapshot
    build(first, profile, out)
    kept = (out / "minipools.json").read_bytes()
    write_stakers(net.url, net.addresses["Staking"], [])  # a block that changes nothing
    second = collect(profile).snapshot
    assert second.block.number > first.block.number
    built = build(second, profile, out)
    assert (out / "minipools.json").read_bytes() == kept
    assert json.loads(kept)["meta"]["block"]["number"] == first.block.number
    assert json.loads((out / "status.json").read_bytes())["block"]["number"] == second.block.number
    assert built.rendered < 20 and os.readlink(out) == ".out.b"


def test_out_is_never_missing_while_builds_swap_it(net, profile, tmp_path):
    out = tmp_path / "out"
    snap = collect(profile).snapshot
    build(snap, profile, out)
    seen, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            try:
                seen.append(json.loads((out / "status.json").read_bytes())["block"]["number"])
            except (OSError, ValueError):
                seen.append(None)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(6):
            pipeline.build(snap, profile, out)
    finally:
        stop.set()
        reader.join()
    assert seen and None not in seen


def test_a_refused_build_leaves_the_live_tree_and_its_record(net, profile, tmp_path):
    out = tmp_path / "out"
    snap = collect(profile).snapshot
    build(snap, profile, out)
    before, record = load_dir(out), (out / RECORD).read_bytes()
    older = dataclasses.replace(snap, block=dataclasses.replace(snap.block, number=snap.block.number - 1))
    with pytest.raises(PublisherError, match="older than the last run"):
        build(older, profile, out)
    assert load_dir(out) == before and (out / RECORD).read_bytes() == record
    assert not (tmp_path / ".out.b").exists()


@pytest.mark.parametrize("at", [1, 2], ids=["in another worker's share", "in the same share"])
def test_a_path_rendered_twice_fails_the_build_wherever_its_copy_falls(net, profile, tmp_path, monkeypatch, at):
    """Each worker checks only its own share of paths: a path made twice is still found when its
    two files fall to two workers, and the live tree stays as it was."""
    from publisher.endpoints import registry

    out = tmp_path / "out"
    snap = collect(profile).snapshot
    build(snap, profile, out)
    before = load_dir(out)
    ep = registry.load_all()["/minipools/{nodeID}"]

    def twice(ctx):
        # The first file again, at place ``at`` of every minipool's file; each worker then takes
        # its share of that list (with two workers, the copy at place 1 falls to the other one).
        share, ctx.share = ctx.share, (0, 1)
        files = list(ep.render(ctx))
        ctx.share = share
        return iter(ctx.own([*files[:at], files[0], *files[at:]]))

    monkeypatch.setitem(registry.REGISTRY, ep.path, dataclasses.replace(ep, render=twice))
    with pytest.raises(PublisherError, match="two responses for /minipools/"):
        build(snap, profile, out)
    assert load_dir(out) == before


def test_serve_follows_the_link_to_the_new_tree_and_hides_the_record(net, profile, tmp_path):
    from publisher.serve import Site

    out = tmp_path / "out"
    snap = collect(profile).snapshot
    build(snap, profile, out)
    site = Site(out)
    assert json.loads(site.get("/status", "", "GET")[2])["block"]["number"] == snap.block.number
    newer = dataclasses.replace(snap, block=dataclasses.replace(snap.block, number=snap.block.number + 1))
    build(newer, profile, out)
    assert json.loads(site.get("/status", "", "GET")[2])["block"]["number"] == snap.block.number + 1
    assert site.get("/.build", "", "GET")[0] == 404 and site.get("/" + RECORD, "", "GET")[0] == 404


def test_a_file_missing_from_the_live_tree_is_rendered_again(net, profile, tmp_path):
    out = tmp_path / "out"
    snap = collect(profile).snapshot
    build(snap, profile, out)
    full = load_dir(out)
    victim = next((out / "stakers").glob("*.json"))
    victim.unlink()
    build(snap, profile, out)
    assert load_dir(out) == full


# What a change to one eligible staker's stake moves besides that staker's two files: the list of
# stakers, the totals (/metrics' total and effective stake and node-operator APRs, /rewards/params'
# tegs), the grid (every point's share of the pool is over tegs), the pages that show them and the
# run stamp. Every other staker's files stay as they are: its estimate, which divides by tegs, is
# the function's (/rewards/estimate?address=).
STAKE_MOVES = {"/stakers", "/metrics", "/rewards/params", "/rewards/grid", "/", "/docs.html", "/status"}


def test_one_stake_change_rewrites_that_stakers_files_and_the_totals(net, profile, tmp_path):
    out, cache = tmp_path / "out", Cache()
    snap = collect(profile).snapshot
    build(snap, profile, out, cache)
    # A block with no change first: what moves with the block's time alone (the vault's stream,
    # the queue's schedule) moves in the next one too, whatever else changes.
    write_stakers(net.url, net.addresses["Staking"], [])
    before = load_dir(out)
    snap = collect(profile).snapshot
    build(snap, profile, out, cache)
    after = load_dir(out)
    ticking = {p for p in after if before.get(p) != after[p]}
    assert not any(p.startswith(("/stakers", "/rewards/0x", "/rewards/grid")) for p in ticking), sorted(ticking)

    when = P.next_distribution_time(snap)
    st = next(s for s in snap.stakers if P.eligible_at(s, when, snap.settings.rewards_eligibility_min_seconds)
              and s.effective_ggp_staked == s.ggp_staked > 100 * WAD and s.collateralization_ratio > 3 * R.TENTH)
    write_stakers(net.url, net.addresses["Staking"], [dataclasses.replace(st, ggp_staked=st.ggp_staked - 7 * WAD)])
    before, tegs = after, P.tegs(snap)
    snap = collect(profile).snapshot
    assert P.tegs(snap)[0] == tegs[0] - 7 * WAD  # the total every estimate divides by moved
    built = build(snap, profile, out, cache)
    after = load_dir(out)
    changed = {p for p in after if before.get(p) != after[p]}
    own = {f"/stakers/{st.staker_addr.lower()}", f"/rewards/{st.staker_addr.lower()}"}
    assert own <= changed and {"/stakers", "/metrics", "/rewards/params", "/rewards/grid"} <= changed
    # The withdrawal queue's files move with time alone (a request's deadline passing), in any block.
    other = {p for p in changed - ticking - own - STAKE_MOVES if not p.startswith("/withdrawals")}
    assert not other, sorted(other)
    assert not {p for p in changed - own if p.startswith(("/stakers/", "/rewards/0x"))}
    assert built.rendered <= len(changed) + 4, built.rendered
    # The staker's file holds its new inputs, exactly; the estimate over the new total is the function's.
    mine = json.loads(after[f"/rewards/{st.staker_addr.lower()}"])
    assert mine["ggpStakedWei"] == str(st.ggp_staked - 7 * WAD) and "estimate" not in mine


def test_the_dashboard_is_rendered_only_when_what_it_shows_changes(net, profile, tmp_path):
    out, cache = tmp_path / "out", Cache()
    snap = collect(profile).snapshot
    build(snap, profile, out, cache)
    page = out / "index.html"
    before = page.stat().st_ino
    # A staker's unclaimed rewards: its files and /stakers move, no figure of the dashboard does.
    st = snap.stakers[0]
    changed = dataclasses.replace(snap, stakers=(dataclasses.replace(st, ggp_rewards=st.ggp_rewards + WAD), *snap.stakers[1:]))
    build(changed, profile, out, cache)
    assert json.loads((out / f"rewards/{st.staker_addr.lower()}.json").read_bytes())["ggpRewardsWei"] == str(st.ggp_rewards + WAD)
    assert page.stat().st_ino == before  # carried from the live tree (a hard link), not rendered again
    # A figure it shows: rendered again, naming the block it was read at.
    moved = dataclasses.replace(changed, block=dataclasses.replace(snap.block, number=snap.block.number + 1))
    build(moved, profile, out, cache)
    assert page.stat().st_ino != before and f'<a href="status">{snap.block.number + 1}</a>' in page.read_text()
