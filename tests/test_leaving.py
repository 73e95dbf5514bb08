"""What a node operator leaving is told it can take out (/stakers/{address} ``leaving``), replayed
on the demo chain: withdrawGGP of the amount published goes through from the staker's address at
the build block, and one wei more reverts, for the reason published (the lock, the collateral its
assigned AVAX needs, or no more GGP staked)."""
from __future__ import annotations

import json

import pytest
from eth_utils import keccak
from support.chain import eth_call

from publisher.build.pipeline import build
from publisher.chain.abi import Fn
from publisher.chain.rpc import RpcError
from publisher.compute.nodeid import node_id
from publisher.protocol import MinipoolStatus

withdraw_ggp = Fn("withdrawGGP(uint256)")


@pytest.fixture(scope="module")
def leaving(demo_snapshot, demo_profile, tmp_path_factory):
    out = tmp_path_factory.mktemp("leaving") / "out"
    build(demo_snapshot, demo_profile, out)
    return {st.staker_addr: json.loads((out / "stakers" / f"{st.staker_addr.lower()}.json").read_text())
            for st in demo_snapshot.stakers}


def reverts(rpc, sender: str, to: str, data: bytes, block: int) -> str | None:
    """The custom error a call from ``sender`` reverts with at ``block``, or None when it goes through."""
    try:
        rpc.request("eth_call", [{"from": sender, "to": to, "data": "0x" + data.hex()}, hex(block)])
    except RpcError as exc:
        return str(exc)
    return None


# The custom error each reason reverts with, by its selector (what the node's message carries).
ERRORS = {why: "0x" + keccak(text=f"{name}()")[:4].hex() for why, name in (
    ("lock", "GGPLocked"), ("collateral", "CannotWithdrawUnder150CollateralizationRatio"), (None, "InsufficientBalance"))}


def test_withdrawable_ggp_is_what_the_chain_lets_each_staker_take(demo, demo_snapshot, leaving, rpc):
    staking, block = demo.addresses["Staking"], demo_snapshot.block.number
    kept = {}
    for st in demo_snapshot.stakers:
        out = leaving[st.staker_addr]["leaving"]
        wei = int(out["withdrawableGGPWei"])
        assert out["withdrawableGGP"] == wei / 10**18 and wei <= st.ggp_staked
        kept[out["ggpKeptBy"]] = kept.get(out["ggpKeptBy"], 0) + 1
        if wei:
            assert reverts(rpc, st.staker_addr, staking, withdraw_ggp.encode(wei), block) is None, st.staker_addr
        said = reverts(rpc, st.staker_addr, staking, withdraw_ggp.encode(wei + 1), block)
        assert said is not None and ERRORS[out["ggpKeptBy"] if wei < st.ggp_staked else None] in said, (st.staker_addr, said)
        assert eth_call(rpc, staking, Fn("getGGPStake(address)", "uint256"), st.staker_addr, block=block) == st.ggp_staked
    # The demo holds every case: all of it free, some kept by the collateral, some by the lock.
    assert kept.get(None) and kept.get("collateral") and kept.get("lock"), kept


def test_minipool_funds_and_rewards_are_told_as_the_records_hold_them(demo_snapshot, leaving):
    for st in demo_snapshot.stakers:
        out = leaving[st.staker_addr]["leaving"]
        mine = [m for m in demo_snapshot.minipools if m.owner == st.staker_addr
                and m.status in (MinipoolStatus.WITHDRAWABLE, MinipoolStatus.ERROR)]
        assert out["minipoolFunds"] == [{"nodeID": node_id(m.node_id), "avax": (m.avax_node_op_amt + m.avax_node_op_reward_amt) / 10**18,
                                         "avaxWei": str(m.avax_node_op_amt + m.avax_node_op_reward_amt)} for m in mine]
        assert out["ggpRewardsClaimable"] == (st.ggp_rewards > 0)  # claimAndRestake checks no pause flag
        for f in out["minipoolFunds"]:
            assert f"Minipool {f['nodeID']}: withdrawMinipoolFunds pays you" in out["advice"]


def test_the_advice_never_offers_more_than_the_chain_allows_nor_ggp_there_is_not(demo_snapshot, leaving):
    """An amount offered is rounded down; no GGP staked is said so; a lock over GGP the collateral
    keeps anyway says what lifting it leaves (nothing)."""
    import re
    from decimal import Decimal

    told = set()
    for st in demo_snapshot.stakers:
        out = leaving[st.staker_addr]["leaving"]
        wei, advice = int(out["withdrawableGGPWei"]), out["advice"]
        if m := re.search(r"Up to ([0-9,.]+) GGP of your", advice):
            assert Decimal(m.group(1).replace(",", "")) * 10**18 <= wei, advice
            told.add("up to")
        if not st.ggp_staked:
            assert "No GGP is staked to withdraw" in advice and "can be withdrawn (withdrawGGP)" not in advice
            told.add("none staked")
        if out["ggpKeptBy"] == "lock":
            assert "locked until" in advice and "after that," in advice
            told.add("lock")
    assert {"up to", "lock"} <= told, told


def test_the_watch_publishes_when_a_ggp_lock_lifts(demo, demo_profile, rpc):
    """A lock lifting changes what withdrawGGP allows with no log: the watch takes its time as a
    deadline, as it does a withdrawal request's."""
    import dataclasses

    from ggp_devnet.changes import write_stakers
    from support.chain import checkpoint, mine_at

    from publisher.collect import collect
    from publisher.watch import Follower

    with checkpoint(rpc):
        snap = collect(demo_profile).snapshot
        st = next(s for s in snap.stakers if s.ggp_staked and s.ggp_locked_until <= snap.block.timestamp)
        lift = snap.block.timestamp + 100
        write_stakers(demo.url, demo.addresses["Staking"], [dataclasses.replace(st, ggp_locked_until=lift)])
        snap = collect(demo_profile).snapshot
        follower = Follower(rpc, demo_profile)
        follower.published(snap)
        assert follower.examined.deadline is not None and follower.examined.deadline <= lift
        while follower.examined.deadline < lift:  # a request's time first: published as the watch would
            mine_at(rpc, follower.examined.deadline)
            follower.published(collect(demo_profile).snapshot)
        mine_at(rpc, lift - 1)
        assert follower.look()[1] is None
        mine_at(rpc, lift)
        assert follower.look()[1].startswith("deadline")
