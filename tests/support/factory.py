"""Snapshots built in memory from a few keyword arguments, for tests that need no chain.

Every record is made by field name with defaults shaped like a small mainnet-like protocol: one
block, a ggAVAX vault at a share price of 1.05 with no reward stream running, the ProtocolDAO's
settings, an Oracle price, an AVAX/USD feed, a rewards cycle half way through and an empty
withdrawal queue. ``snapshot()`` fills in every count and sum the chain reports beside the lists
(staker and minipool counts, the total GGP stake, the queue's counters), so the default snapshot,
and any built from consistent records, passes ``publisher.snapshot.check``.

Derived per-staker views (collateralization, effective stake) are worked out here with the
contracts' wad arithmetic, written out independently of ``publisher.compute``.
"""
from __future__ import annotations

from dataclasses import replace

from eth_utils import to_checksum_address

from publisher.protocol import MinipoolStatus
from publisher.snapshot import (
    BlockRef,
    FeedRound,
    GGPToken,
    Minipool,
    OraclePrice,
    PricePoint,
    QueueActivity,
    RewardsPool,
    Settings,
    Snapshot,
    Staker,
    UnstakeRequest,
    Validator,
    Vault,
    WithdrawQueue,
)

WAD = 10**18
DAY = 86_400
NOW = 1_750_000_000  # the default block's time (June 2025)
BLOCK = 60_000_000
UINT256_MAX = 2**256 - 1


def addr(n: int) -> str:
    """A checksummed address made from a small number."""
    return to_checksum_address(f"0x{n:040x}")


ADDRESSES = {name: addr(0xC0DE00 + i) for i, name in enumerate((
    "TokenGGP", "TokenggAVAX", "Staking", "MinipoolManager", "RewardsPool", "ClaimNodeOp", "ProtocolDAO", "Oracle",
    "WAVAX", "WithdrawQueue", "Multicall3", "Storage"))}
FEED = addr(0xFEED)
PAUSED = dict.fromkeys(("TokenggAVAX", "Staking", "MinipoolManager", "RewardsPool", "ClaimNodeOp", "Oracle"), False)


def avax(n: int) -> int:
    """Whole tokens in wei."""
    return n * WAD


def block(number: int = BLOCK, timestamp: int = NOW, hash: str | None = None) -> BlockRef:
    return BlockRef(number, hash or "0x" + f"{number:064x}", timestamp)


def settings(**kw) -> Settings:
    values = dict(
        rewards_cycle_seconds=28 * DAY, rewards_eligibility_min_seconds=14 * DAY,
        inflation_interval_rate=1_000_133_680_617_113_500, inflation_interval_seconds=DAY,
        min_collateralization_ratio=WAD // 10, max_collateralization_ratio=3 * WAD // 2,
        minipool_node_commission_fee_pct=15 * WAD // 100,
        minipool_min_avax_assignment=avax(1000), minipool_max_avax_assignment=avax(10_000),
        minipool_min_avax_staking_amt=avax(2000), target_ggavax_reserve_rate=WAD // 10, fee_bips=700,
        expected_avax_rewards_rate=WAD // 10,
        claiming_contract_pct={"ClaimNodeOp": 7 * WAD // 10, "ClaimProtocolDAO": WAD // 10, "ClaimMultisig": WAD // 5},
        withdraw_for_delegation_enabled=False, minipool_cycle_duration=14 * DAY, minipool_cycle_delay_tolerance=DAY,
    )
    values.update(kw)
    return Settings(**values)


def streamed(released: int, rewards: int, last_sync: int, cycle_end: int, t: int) -> int:
    """TokenggAVAX.totalAssets at time ``t``: the released assets plus the stream's linear part."""
    if t >= cycle_end or cycle_end <= last_sync:
        return released + rewards
    return released + rewards * (t - last_sync) // (cycle_end - last_sync)


def vault(*, now: int = NOW, released: int = avax(10_500), rewards: int = 0, last_sync: int | None = None,
          cycle_end: int | None = None, supply: int = avax(10_000), staking: int = avax(9_000),
          liquid: int | None = None, available: int | None = None, cycle_length: int = 14 * DAY) -> Vault:
    """ggAVAX's books. ``rewards`` stream from ``last_sync`` to ``cycle_end`` (by default a cycle
    that ended a day ago); totalAssets, the share price and the WAVAX held follow from them."""
    last_sync = now - cycle_length - DAY if last_sync is None else last_sync
    cycle_end = last_sync + cycle_length if cycle_end is None else cycle_end
    total = streamed(released, rewards, last_sync, cycle_end, now)
    liquid = released + rewards - staking if liquid is None else liquid  # every reward received is synced
    return Vault(
        name="Hypha Staked AVAX", symbol="stAVAX", total_assets=total, total_released_assets=released,
        staking_total_assets=staking, amount_available_for_staking=max(0, total - staking - total // 10)
        if available is None else available, last_rewards_amt=rewards, last_sync=last_sync,
        rewards_cycle_end=cycle_end, rewards_cycle_length=cycle_length, total_supply=supply,
        assets_per_share=WAD * total // supply if supply else WAD,
        shares_per_asset=WAD * supply // total if supply and total else WAD, liquid_avax=liquid)


def staker(n: int = 1, *, ggp: int = avax(1000), assigned: int = 0, staked: int | None = None,
           validating: int | None = None, high_water: int | None = None, price: int = WAD // 4,
           max_ratio: int = 3 * WAD // 2, rewards_start: int = NOW - 30 * DAY, now: int = NOW,
           min_seconds: int = 14 * DAY, **kw) -> Staker:
    """A GGP staker ``addr(0x5000 + n)`` with ``assigned`` liquid-staker AVAX (its own AVAX staked
    matches it, as minipools pair them 1:1). Collateralization and effective stake are worked out
    at ``price`` as Staking computes them; pass the snapshot's price when it is not the default."""
    staked = assigned if staked is None else staked
    validating = assigned if validating is None else validating
    high_water = validating if high_water is None else high_water
    value = ggp * price // WAD
    ratio = UINT256_MAX if assigned == 0 else value * WAD // assigned
    eff_ratio = 0 if high_water == 0 or ratio < WAD // 10 else min(value * WAD // high_water, max_ratio)
    effective = (high_water * eff_ratio // WAD) * WAD // price
    values = dict(
        staker_addr=addr(0x5000 + n), avax_assigned=assigned, avax_staked=staked, avax_validating=validating,
        avax_validating_high_water=high_water, ggp_rewards=0, ggp_staked=ggp, last_rewards_cycle_completed=0,
        rewards_start_time=rewards_start if assigned or high_water else 0, ggp_locked_until=0,
        effective_ggp_staked=effective, collateralization_ratio=ratio, effective_rewards_ratio=eff_ratio,
        eligible=bool(rewards_start) and now - rewards_start >= min_seconds and high_water > 0,
    )
    values.update(kw)
    return Staker(**values)


def minipool(index: int = 0, *, status: MinipoolStatus = MinipoolStatus.STAKING, owner: str | None = None,
             liquid: int = avax(1000), node_op: int | None = None, start: int = NOW - 5 * DAY,
             duration: int = 14 * DAY, end: int = 0, reward: int = 0, **kw) -> Minipool:
    """Minipool ``index`` (node id ``addr(0xA000 + index)``) matching ``liquid`` stakers' AVAX with
    as much of its owner's; ``end`` 0 while it validates, as mainnet records it."""
    node_op = liquid if node_op is None else node_op
    values = dict(
        index=index, node_id=addr(0xA000 + index), status=int(status), duration=duration, delegation_fee=20_000,
        owner=owner or addr(0x5001), multisig_addr=addr(0x3333), avax_node_op_amt=node_op,
        avax_node_op_initial_amt=node_op, avax_liquid_staker_amt=liquid, bls_pubkey_and_sig="0x",
        tx_id="0x" + f"{index:064x}", creation_time=start - DAY, initial_start_time=start, start_time=start,
        end_time=end, avax_total_reward_amt=reward, error_code="0x" + "00" * 32, ggp_slash_amt=0,
        avax_node_op_reward_amt=0, avax_liquid_staker_reward_amt=0, hardware_provider="0x" + "00" * 32,
    )
    values.update(kw)
    return Minipool(**values)


def validator(m: Minipool, end: int, *, reward_navax: int = 0, staked_navax: int | None = None) -> Validator:
    """The validator provider's record of minipool ``m``'s node, ending at ``end``."""
    from publisher.compute.nodeid import node_id

    staked = (m.avax_node_op_amt + m.avax_liquid_staker_amt) // 10**9 if staked_navax is None else staked_navax
    return Validator(node_id(m.node_id), "0x" + "11" * 32, m.start_time, end, staked, 0, "2.0000", 0, "99.5000",
                     reward_navax, 0, "avalanchego/1.13.0", "glacier")


def request(id: int, assets: int, *, shares: int | None = None, requester: str | None = None,
            requested: int = NOW - DAY, unstake_delay: int = 7 * DAY, expiration_delay: int = 14 * DAY,
            fulfilled: bool = False) -> UnstakeRequest:
    """An open withdrawal request of ``shares`` ggAVAX (default: as many as ``assets`` AVAX) owed
    ``assets`` AVAX wei, filed at ``requested``; a fulfilled one holds exactly that allocated."""
    claimable = requested + unstake_delay
    return UnstakeRequest(id, requester or addr(0xB000 + id), assets if shares is None else shares, assets, requested,
                          claimable, claimable + expiration_delay, assets if fulfilled else 0, fulfilled)


def queue(requests: tuple[UnstakeRequest, ...] | list[UnstakeRequest] = (), *, next_request_id: int | None = None,
          unstake_delay: int = 7 * DAY, max_expiration_delay: int = 30 * DAY, paused: bool | None = False,
          max_requests_per_deposit: int | None = 50, min_on_behalf: int | None = WAD // 100) -> WithdrawQueue:
    """The WithdrawQueue holding ``requests`` (ordered by id), its counters worked out from them."""
    rs = tuple(sorted(requests, key=lambda r: r.id))
    nxt = (rs[-1].id + 1 if rs else 0) if next_request_id is None else next_request_id
    return WithdrawQueue(
        ADDRESSES["WithdrawQueue"], nxt, sum(r.allocated_funds for r in rs if r.fulfilled), unstake_delay,
        max_expiration_delay, paused, sum(not r.fulfilled for r in rs), sum(r.fulfilled for r in rs),
        max_requests_per_deposit, min_on_behalf, sum(r.shares for r in rs if not r.fulfilled), rs)


def feed(usd: float | int = 25, *, decimals: int = 8, updated: int = NOW - 600) -> FeedRound:
    answer = round(usd * 10**decimals)
    return FeedRound(FEED, 18_446_744_073_709_562_000, answer, updated, updated, 18_446_744_073_709_562_000, decimals)


def price_point(day: int, *, now: int = NOW, ggp_in_avax: int = WAD // 4, avax_usd: int = 25 * 10**8,
                assets_per_share: int | None = None) -> PricePoint:
    """The daily price record ``day`` days before ``now``'s day, its share price taken at its last second."""
    t = (now // DAY - day) * DAY + DAY - 1
    return PricePoint(_date(t), ggp_in_avax, avax_usd, BLOCK - day * 43_200, t,
                      assets_per_share, t if assets_per_share else None, BLOCK - day * 43_200 if assets_per_share else None,
                      "archive" if assets_per_share else None)


def _date(t: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%d")


def snapshot(*, now: int = NOW, number: int = BLOCK, network: str = "mainnet", chain_id: int = 43114,
             price: int = WAD // 4, price_time: int | None = None, ggavax: Vault | None = None,
             settings_: Settings | None = None, stakers=(), minipools=(), withdraw_queue: WithdrawQueue | None = None,
             requests=None, cycle_start: int | None = None, cycle_count: int = 20,
             inflation_start: int | None = None, ggp_supply: int = avax(20_000_000),
             ggp_max_supply: int = avax(22_500_000), avax_usd: float | int | None = 25, paused: dict | None = None,
             line_front: int | None = None, **kw) -> Snapshot:
    """A snapshot at block ``number``, time ``now``. ``requests`` (a list of ``request()``) make
    the withdrawal queue when ``withdraw_queue`` is not given; ``line_front`` adds the queue's
    activity read from its logs (the first id still in the contract's line). ``paused`` overrides
    pause flags by contract name. Any other Snapshot field passes through ``kw``."""
    s = settings_ or settings()
    cycle_start = now - 14 * DAY if cycle_start is None else cycle_start
    inflation_start = cycle_start if inflation_start is None else inflation_start
    if withdraw_queue is None and requests is not None:
        withdraw_queue = queue(requests)
    stakers, minipools = tuple(stakers), tuple(minipools)
    assigned_statuses = (MinipoolStatus.PRELAUNCH, MinipoolStatus.LAUNCHED, MinipoolStatus.STAKING)
    values = dict(
        network=network, chain_id=chain_id, block=block(number, now), addresses=dict(ADDRESSES), settings=s,
        ggavax=ggavax or vault(now=now), ggp=GGPToken(ggp_supply, ggp_max_supply),
        oracle=OraclePrice(price, now - DAY if price_time is None else price_time),
        rewards_pool=RewardsPool(cycle_count, cycle_start, avax(60_000), inflation_start, ggp_supply, ggp_supply,
                                 avax(42_000)),
        staker_count=len(stakers), total_ggp_stake=sum(st.ggp_staked for st in stakers), stakers=stakers,
        minipool_count=len(minipools),
        total_avax_liquid_staker_amt=sum(m.avax_liquid_staker_amt for m in minipools if m.status in assigned_statuses),
        minipools=minipools, paused={**PAUSED, **(paused or {})},
        feed=None if avax_usd is None else feed(avax_usd, updated=now - 600),
        withdraw_queue=withdraw_queue,
        withdraw_queue_note=None if withdraw_queue else "no WithdrawQueue is configured for this network",
        queue_activity=None if line_front is None or withdraw_queue is None else
        QueueActivity(number, line_front, None, None, None, None),
    )
    values.update(kw)
    return Snapshot(**values)


__all__ = ["ADDRESSES", "BLOCK", "DAY", "NOW", "WAD", "addr", "avax", "block", "feed", "minipool", "price_point",
           "queue", "replace", "request", "settings", "snapshot", "staker", "streamed", "validator", "vault"]
