"""The chain snapshot against the chain itself, read another way.

The reference values come from web3 contract objects built from the devnet artifacts' ABIs, one
eth_call per value at the snapshot's block: a path that shares nothing with the reader's
signatures, Multicall3 batching or decoding.
"""
from __future__ import annotations

import dataclasses
import json

import pytest
from eth_utils import keccak, to_checksum_address
from support.chain import DAY, WAD, artifacts, checkpoint, head, send
from web3 import Web3

from publisher.chain import abis
from publisher.chain.abi import Fn
from publisher.chain.reader import Reader
from publisher.chain.rpc import RpcClient
from publisher.errors import PublisherError
from publisher.progress import Progress
from publisher.snapshot import (
    BlockRef,
    DexReserves,
    FeedRound,
    GGPToken,
    Known,
    Minipool,
    OraclePrice,
    RewardsPool,
    Settings,
    Snapshot,
    Staker,
    Vault,
    instances,
)

CHAIN_FIELDS = ("network", "chain_id", "block", "addresses", "settings", "ggavax", "ggp", "oracle", "rewards_pool",
                "staker_count", "total_ggp_stake", "stakers", "minipool_count", "total_avax_liquid_staker_amt",
                "minipools", "paused", "feed", "dex", "apy_base")


def chain_part(snap: Snapshot) -> dict:
    return {f: getattr(snap, f) for f in CHAIN_FIELDS}


class Chain:
    """web3 contract objects from the devnet artifacts, all calls pinned to one block."""

    def __init__(self, demo, block: int):
        self.w3 = Web3(Web3.HTTPProvider(demo.url))
        self.block = block
        self.c = {name: self.w3.eth.contract(address=addr, abi=artifacts()[name]["abi"])
                  for name, addr in demo.addresses.items() if name in artifacts()}

    def __call__(self, contract: str, function: str, *args, block: int | None = None):
        return getattr(self.c[contract].functions, function)(*args).call(block_identifier=self.block if block is None else block)


def hexs(value: bytes) -> str:
    return "0x" + bytes(value).hex()


def expected_staker(ch: Chain, i: int) -> Staker:
    row = ch("Staking", "getStaker", i)
    addr = row[0]
    return Staker(
        addr, *row[1:],
        effective_ggp_staked=ch("Staking", "getEffectiveGGPStaked", addr),
        collateralization_ratio=ch("Staking", "getCollateralizationRatio", addr),
        effective_rewards_ratio=ch("Staking", "getEffectiveRewardsRatio", addr),
        eligible=ch("ClaimNodeOp", "isEligible", addr),
    )


def expected_minipool(ch: Chain, i: int) -> Minipool:
    values = []
    for (_, typ), v in zip(abis.MINIPOOL_FIELDS, ch("MinipoolManager", "getMinipool", i), strict=True):
        values.append(hexs(v) if typ in ("bytes", "bytes32") else v)
    return Minipool(*values)


def expected_settings(ch: Chain) -> Settings:
    dao = lambda name, *args: ch("ProtocolDAO", name, *args)  # noqa: E731
    return Settings(
        rewards_cycle_seconds=dao("getRewardsCycleSeconds"),
        rewards_eligibility_min_seconds=dao("getRewardsEligibilityMinSeconds"),
        inflation_interval_rate=dao("getInflationIntervalRate"),
        inflation_interval_seconds=dao("getInflationIntervalSeconds"),
        min_collateralization_ratio=dao("getMinCollateralizationRatio"),
        max_collateralization_ratio=dao("getMaxCollateralizationRatio"),
        minipool_node_commission_fee_pct=dao("getMinipoolNodeCommissionFeePct"),
        minipool_min_avax_assignment=dao("getMinipoolMinAVAXAssignment"),
        minipool_max_avax_assignment=dao("getMinipoolMaxAVAXAssignment"),
        minipool_min_avax_staking_amt=dao("getMinipoolMinAVAXStakingAmt"),
        target_ggavax_reserve_rate=dao("getTargetGGAVAXReserveRate"),
        fee_bips=dao("getFeeBips"),
        expected_avax_rewards_rate=dao("getExpectedAVAXRewardsRate"),
        claiming_contract_pct={n: dao("getClaimingContractPct", n) for n in ("ClaimNodeOp", "MultisigManager", "ClaimProtocolDAO")},
        withdraw_for_delegation_enabled=dao("getWithdrawForDelegationEnabled"),
        minipool_cycle_duration=dao("getMinipoolCycleDuration"),
        minipool_cycle_delay_tolerance=dao("getMinipoolCycleDelayTolerance"),
    )


def expected_vault(ch: Chain) -> Vault:
    g = lambda name, *args: ch("TokenggAVAX", name, *args)  # noqa: E731
    return Vault(
        name=g("name"), symbol=g("symbol"), total_assets=g("totalAssets"),
        total_released_assets=g("totalReleasedAssets"), staking_total_assets=g("stakingTotalAssets"),
        amount_available_for_staking=g("amountAvailableForStaking"), last_rewards_amt=g("lastRewardsAmt"),
        last_sync=g("lastSync"), rewards_cycle_end=g("rewardsCycleEnd"), rewards_cycle_length=g("rewardsCycleLength"),
        total_supply=g("totalSupply"), assets_per_share=g("convertToAssets", WAD), shares_per_asset=g("convertToShares", WAD),
        liquid_avax=ch("WAVAX", "balanceOf", ch.c["TokenggAVAX"].address),
    )


def test_every_snapshot_field_equals_an_individual_call_at_the_same_block(demo, demo_snapshot):
    snap = demo_snapshot
    n = snap.block.number
    ch = Chain(demo, n)
    blk = ch.w3.eth.get_block(n)
    assert snap.network == "devnet" and snap.chain_id == ch.w3.eth.chain_id
    assert snap.block == BlockRef(n, "0x" + bytes(blk["hash"]).hex(), blk["timestamp"])

    storage = ch.c["Storage"]
    expected_addresses = {
        name: storage.functions.getAddress(keccak(b"contract.address" + name.encode())).call(block_identifier=n)
        for name in ("TokenGGP", "TokenggAVAX", "Staking", "MinipoolManager", "RewardsPool", "ClaimNodeOp", "ProtocolDAO", "Oracle")
    }
    expected_addresses |= {"Storage": storage.address, "Multicall3": "0xcA11bde05977b3631167028862bE2a173976CA11",
                           "WAVAX": ch("TokenggAVAX", "asset")}
    assert snap.addresses == expected_addresses
    assert all(snap.addresses[k] == demo.addresses[k] for k in expected_addresses)
    assert snap.paused == {name: ch("ProtocolDAO", "getContractPaused", name) for name in abis.PAUSABLE}

    assert snap.settings == expected_settings(ch)
    assert snap.ggavax == expected_vault(ch)
    assert snap.ggp == GGPToken(ch("TokenGGP", "totalSupply"), ch("TokenGGP", "MAX_SUPPLY"))
    assert snap.oracle == OraclePrice(*ch("Oracle", "getGGPPriceInAVAX"))
    assert snap.rewards_pool == RewardsPool(
        ch("RewardsPool", "getRewardsCycleCount"), ch("RewardsPool", "getRewardsCycleStartTime"),
        ch("RewardsPool", "getRewardsCycleTotalAmt"), ch("RewardsPool", "getInflationIntervalStartTime"),
        *ch("RewardsPool", "getInflationAmt"), ch("ClaimNodeOp", "getRewardsCycleTotal"),
    )
    assert snap.feed == FeedRound(ch.c["PriceFeed"].address, *ch("PriceFeed", "latestRoundData"), ch("PriceFeed", "decimals"))
    assert snap.dex == DexReserves(ch.c["DexPair"].address, ch("DexPair", "token0"), ch("DexPair", "token1"), *ch("DexPair", "getReserves"))

    assert snap.staker_count == ch("Staking", "getStakerCount") == len(snap.stakers) == len(demo.scenario.stakers)
    assert snap.total_ggp_stake == ch("Staking", "getTotalGGPStake")
    for i, staker in enumerate(snap.stakers):
        assert staker == expected_staker(ch, i), f"staker {i}"
    assert snap.minipool_count == ch("MinipoolManager", "getMinipoolCount") == len(snap.minipools) == len(demo.scenario.minipools)
    assert snap.total_avax_liquid_staker_amt == ch("MinipoolManager", "getTotalAVAXLiquidStakerAmt")
    for i, pool in enumerate(snap.minipools):
        assert pool == expected_minipool(ch, i), f"minipool {i}"


def test_apy_base_is_the_last_block_at_or_before_the_window_start(demo, demo_snapshot):
    snap, base = demo_snapshot, demo_snapshot.apy_base
    assert base is not None
    ch = Chain(demo, snap.block.number)
    target = snap.block.timestamp - 30 * DAY
    at, after = ch.w3.eth.get_block(base.block.number), ch.w3.eth.get_block(base.block.number + 1)
    assert base.block == BlockRef(at["number"], "0x" + bytes(at["hash"]).hex(), at["timestamp"])
    assert at["timestamp"] <= target < after["timestamp"]
    assert base.assets_per_share == ch("TokenggAVAX", "convertToAssets", WAD, block=base.block.number)
    assert base.assets_per_share < snap.ggavax.assets_per_share, "the share price grew over the window"


def test_a_pinned_read_returns_the_old_values_after_new_blocks(demo, demo_profile, rpc):
    number, now = head(rpc)
    pinned = number  # the seeded head: the stakers and minipools are written in its block
    known = Known()  # what a watch's reads share: the records of the last read
    first = Reader(RpcClient([demo.url]), demo_profile, known=known).read(block=pinned)
    assert first.block.number == pinned
    ch = Chain(demo, pinned)
    assert first.oracle == OraclePrice(*ch("Oracle", "getGGPPriceInAVAX"))
    assert first.ggavax.total_assets == ch("TokenggAVAX", "totalAssets")
    assert first.stakers[0] == expected_staker(ch, 0)
    assert first.minipools[-1] == expected_minipool(ch, len(first.minipools) - 1)

    a = demo.addresses
    staker = demo.scenario.stakers[3]
    row = tuple(staker[k] for k, _ in abis.STAKER_FIELDS)
    changed = (*row[:6], row[6] + 1000 * WAD, *row[7:])
    node = next(m["nodeID"] for m in demo.scenario.minipools if m["status"] == 2)
    with checkpoint(rpc):
        send(rpc, a["Oracle"], Fn("setGGPPriceInAVAX(uint256,uint256)").encode(first.oracle.price * 2, now + 100))
        send(rpc, a["Staking"], Fn(f"setStakers({abis.STAKER}[])").encode([changed]))
        send(rpc, a["MinipoolManager"], Fn("setStatus(address,uint256)").encode(node, 3))
        for _ in range(3):
            rpc.request("evm_mine", [])
        latest = Reader(RpcClient([demo.url]), demo_profile, known=known).read()
        fresh = Reader(RpcClient([demo.url]), demo_profile).read(block=latest.block.number)
        again = Reader(RpcClient([demo.url]), demo_profile).read(block=pinned)
    # The new blocks did change what "latest" reads...
    assert latest.block.number >= pinned + 6
    assert latest.oracle.price == first.oracle.price * 2
    assert latest.total_ggp_stake == first.total_ggp_stake + 1000 * WAD
    assert [m.status for m in latest.minipools if m.node_id == to_checksum_address(node)] == [3]
    # A read after another takes the records it finds unchanged as that read made them, and reads
    # the same as one without it.
    assert chain_part(latest) == chain_part(fresh)
    for now, then in ((latest.stakers, first.stakers), (latest.minipools, first.minipools)):
        same = [a is b for a, b in zip(now, then, strict=True)]
        assert same == [a == b for a, b in zip(now, then, strict=True)] and any(same) and not all(same)
    # ...but not what the pinned block reads.
    assert chain_part(again) == chain_part(first)
    assert again.to_json() == first.to_json()


class _Asked(Progress):
    """What each of a reader's rounds asks for, as its progress is told."""

    def __init__(self) -> None:
        super().__init__(enabled=False)
        self.rounds: dict[str, int] = {}

    def start(self, label: str, total: int) -> None:
        self.rounds[label] = total


def test_a_read_after_another_asks_the_views_only_where_the_answer_can_differ(demo, demo_profile, rpc):
    """The staker views of a row read again unchanged, with the Oracle, the settings and the
    contracts unchanged, are the last read's; a changed row, a staker whose eligibility comes with
    time, a new price and an hour of chain time are asked again, and every read equals a read
    without the last one's answers."""
    known = Known()

    def read(block: int | None = None) -> tuple[Snapshot, int]:
        asked = _Asked()
        snap = Reader(RpcClient([demo.url]), demo_profile, asked, known=known).read(block)
        assert chain_part(snap) == chain_part(Reader(RpcClient([demo.url]), demo_profile).read(snap.block.number))
        q = snap.withdraw_queue  # its open requests are asked in the same round, one call each
        requests = q.pending_count + q.fulfilled_count if q is not None else 0
        return snap, (asked.rounds.get("staker views and open requests", requests) - requests) // 4  # four views a staker

    def at(t: int) -> None:
        rpc.request("evm_setNextBlockTimestamp", [hex(t)])

    pinned, now = head(rpc)
    first, asked = read(pinned)
    assert asked == len(first.stakers)
    a, wait = demo.addresses, first.settings.rewards_eligibility_min_seconds
    fields = [name for name, _ in abis.STAKER_FIELDS]
    rows = [tuple(dataclasses.astuple(st)[: len(fields)]) for st in first.stakers]
    changed, soon = rows[0], next(r for r in rows[1:] if r[fields.index("avaxValidatingHighWater")] > 0)
    changed = (*changed[:6], changed[6] + 1000 * WAD, *changed[7:])
    soon = (*soon[:8], now + 20 - wait + 30, *soon[9:])  # eligible 30 s after the block that stores it
    set_stakers = Fn(f"setStakers({abis.STAKER}[])")
    with checkpoint(rpc):
        assert read(pinned)[1] == 0  # the same block again: every answer kept
        at(now + 20)
        send(rpc, a["Staking"], set_stakers.encode([changed, soon]))
        second, asked = read()
        assert asked == 2  # the two rows that changed
        who = {st.staker_addr: st for st in second.stakers}
        assert not who[to_checksum_address(soon[0])].eligible
        at(now + 40)
        rpc.request("evm_mine", [])
        assert read()[1] == 0  # 20 s later: not eligible yet
        at(now + 60)
        rpc.request("evm_mine", [])
        third, asked = read()
        assert asked == 1 and {st.staker_addr: st for st in third.stakers}[to_checksum_address(soon[0])].eligible
        at(now + 80)
        send(rpc, a["Oracle"], Fn("setGGPPriceInAVAX(uint256,uint256)").encode(first.oracle.price * 3, now + 80))
        assert read()[1] == len(first.stakers)  # a new price: every view again
        assert read()[1] == 0
        at(now + 80 + 3600)
        rpc.request("evm_mine", [])
        assert read()[1] == len(first.stakers)  # an hour of chain time: every view again
        assert read(pinned)[1] == len(first.stakers)  # an earlier block: its time, eligibility's too, moved back


# ---- saved snapshots ---------------------------------------------------------------------------


def test_a_saved_snapshot_reloads_to_an_equal_object(demo_snapshot, tmp_path):
    path = tmp_path / "snap.json"
    demo_snapshot.save(path)
    loaded = Snapshot.load(path)
    assert loaded == demo_snapshot
    assert loaded.to_json() == path.read_text()
    # Exact integers survive JSON: wad amounts and the uint256 "no AVAX assigned" ratio.
    assert any(s.collateralization_ratio == 2**256 - 1 for s in loaded.stakers)
    assert isinstance(json.loads(path.read_text())["ggp"]["total_supply"], str)


def test_instances_made_without_init_are_the_dataclass_s_own(demo_snapshot):
    rows = [dataclasses.astuple(s) for s in demo_snapshot.stakers[:5]]
    made = instances(Staker, rows)
    assert made == tuple(Staker(*r) for r in rows) == demo_snapshot.stakers[:5]
    assert [hash(s) for s in made] == [hash(s) for s in demo_snapshot.stakers[:5]]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made[0].eligible = not made[0].eligible  # type: ignore[misc]
    with pytest.raises(ValueError):
        instances(Staker, [rows[0][:-1]])


def test_a_snapshot_with_every_optional_part_empty_round_trips(demo_snapshot, tmp_path):
    bare = dataclasses.replace(demo_snapshot, feed=None, dex=None, apy_base=None, validators=(), price_history=(),
                               price_check=None, stakers=(), minipools=(), warnings=("a", "b"))
    bare.save(tmp_path / "bare.json")
    assert Snapshot.load(tmp_path / "bare.json") == bare


def _changed(doc: dict, path: list, value) -> str:
    copy = json.loads(json.dumps(doc))
    node = copy
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return json.dumps(copy)


MALFORMED = {
    "not JSON": lambda doc: "{ this is not json",
    "truncated": lambda doc: json.dumps(doc)[:-40],
    "a list": lambda doc: "[]",
    "other format": lambda doc: _changed(doc, ["format"], 99),
    "missing block": lambda doc: _changed(doc, ["block"], KeyError),
    "block as list": lambda doc: _changed(doc, ["block"], [1, 2, 3]),
    "number as text": lambda doc: _changed(doc, ["block", "number"], "twelve"),
    "number as float": lambda doc: _changed(doc, ["staker_count"], 1.5),
    "stakers as object": lambda doc: _changed(doc, ["stakers"], {"a": 1}),
    "addresses as list": lambda doc: _changed(doc, ["addresses"], ["0x00"]),
    "paused flag as int": lambda doc: _changed(doc, ["paused", "Oracle"], 1),
    "staker missing a field": lambda doc: _changed(doc, ["stakers", 0, "ggp_staked"], KeyError),
    "deeply nested": lambda doc: "[" * 100_000 + "]" * 100_000,
    "not UTF-8": lambda doc: b"\xff\xfe{}",
}


@pytest.mark.parametrize("case", [*MALFORMED, "missing file"])
def test_a_malformed_snapshot_file_is_a_publisher_error(case, demo_snapshot, tmp_path):
    path = tmp_path / "bad.json"
    if case != "missing file":
        body = MALFORMED[case](json.loads(demo_snapshot.to_json()))
        path.write_bytes(body if isinstance(body, bytes) else body.encode())
    with pytest.raises(PublisherError) as err:
        Snapshot.load(path)
    assert "\n" not in str(err.value)
