"""The snapshot factory (tests/support/factory.py): its defaults make a snapshot that passes the
publisher's own invariants and survives the on-disk round trip, and the invariants still bite."""
from __future__ import annotations

import pytest
from support import factory as F
from support.factory import avax, replace

from publisher.errors import PublisherError
from publisher.protocol import MinipoolStatus
from publisher.snapshot import Snapshot, check


def full():
    return F.snapshot(stakers=[F.staker(1, assigned=avax(1000)), F.staker(2, ggp=avax(50))],
                      minipools=[F.minipool(0), F.minipool(1, status=MinipoolStatus.FINISHED, end=F.NOW - F.DAY)],
                      requests=[F.request(0, avax(5)), F.request(1, avax(3), fulfilled=True)], line_front=0)


def test_defaults_pass_the_snapshots_invariants_and_the_file_round_trip():
    for s in (F.snapshot(), full()):
        check(s)
        assert Snapshot.from_json(s.to_json()) == s
    s = full()
    assert (s.staker_count, s.total_ggp_stake, s.minipool_count) == (2, avax(1050), 2)
    assert s.total_avax_liquid_staker_amt == avax(1000)  # the staking pool's, not the finished one's
    q = s.withdraw_queue
    assert (q.next_request_id, q.pending_count, q.fulfilled_count, q.total_allocated_funds) == (2, 1, 1, avax(3))


@pytest.mark.parametrize("broken", [
    lambda s: replace(s, staker_count=3),
    lambda s: replace(s, total_ggp_stake=1),
    lambda s: replace(s, withdraw_queue=replace(s.withdraw_queue, total_allocated_funds=0)),
    lambda s: replace(s, ggavax=replace(s.ggavax, amount_available_for_staking=s.ggavax.total_assets + 1)),
])
def test_an_inconsistent_snapshot_is_refused(broken):
    with pytest.raises(PublisherError, match="invariant"):
        check(broken(full()))
