"""The withdrawal queue's funding schedule against the living devnet: each estimate scored against
the block at which the queue really funds the request.

After a few days of business (deposits, requests, claims, cancels, launches, syncs), a build
forecasts the line. The chain then moves on with only what falls due (validation ends at their
times, the depositor serving the line as AVAX returns): the schedule's assumptions hold, and every
estimate must be exact.
"""
from __future__ import annotations

import pytest
from ggp_devnet import devnet_profile, running_live

from publisher.collect import collect
from publisher.compute import queue as Q
from publisher.compute.nodeid import node_id
from publisher.config import load_profile
from publisher.protocol import MinipoolStatus

DAY = 86_400


@pytest.mark.parametrize(("seed", "days"), [(1, 4), (3, 4)])
def test_every_estimate_is_exact_when_only_what_is_due_happens(seed, days):
    with running_live(seed=seed) as (net, live):
        profile = devnet_profile(load_profile("devnet"), net)
        live.run(days=days, pace=0)
        snap = collect(profile).snapshot
        built_at = snap.block.timestamp
        plan = Q.schedule(snap)
        waiting = {i: p.funding_time for i, p in plan.places.items() if p.funded_by == "returns"}
        now_ids = {i for i, p in plan.places.items() if p.fundable_now}
        uncovered = {i for i, p in plan.places.items() if p.position is not None and p.funded_by is None}
        assert waiting, "no request waits for a minipool return: nothing to score"
        horizon = max(waiting.values())
        live.only_due(horizon + 60)
        funded = {f.request_id: f.time for f in live.fundings if f.time > built_at}

    # A request the forecast dates is funded in the block of that return, to the second.
    assert {i: funded.get(i) for i in waiting} == waiting
    # A request the liquidity covers already is funded at the depositor's next call: on the devnet,
    # the first validation end after the build (the depositor serves the line at every end).
    staking = {node_id(m.node_id) for m in snap.minipools if m.status == MinipoolStatus.STAKING}
    first = min(v.end_timestamp for v in snap.validators if v.node_id in staking and v.end_timestamp > built_at)
    assert {i: funded.get(i) for i in now_ids} == dict.fromkeys(now_ids, first)
    # And none the known returns do not cover is funded by them.
    assert not uncovered & set(funded)
