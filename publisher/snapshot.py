"""The snapshot: everything the API needs, read at one pinned block, as frozen typed data.

Exact integers stay ints in memory. On disk (``publisher snapshot --out``) integers too large for
a JSON double are written as decimal strings, so a saved snapshot reloads to an equal object and
rebuilds the same bytes offline.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from . import jsonin
from .errors import PublisherError, every_cause
from .protocol import MinipoolStatus

# 9999-12-31 23:59:59 UTC: the last second a date can show (a calendar's, an ISO date's). A later
# time read from the chain or an API is no protocol's, and would fail every page that dates it.
LAST_TIME = 253_402_300_799

SNAPSHOT_FORMAT = 1
T = typing.TypeVar("T")


@dataclass(frozen=True)
class BlockRef:
    number: int
    hash: str
    timestamp: int


@dataclass(frozen=True)
class Staker:
    staker_addr: str
    avax_assigned: int
    avax_staked: int
    avax_validating: int
    avax_validating_high_water: int
    ggp_rewards: int
    ggp_staked: int
    last_rewards_cycle_completed: int
    rewards_start_time: int
    ggp_locked_until: int
    # Per-staker views read at the same block.
    effective_ggp_staked: int
    collateralization_ratio: int
    effective_rewards_ratio: int
    eligible: bool


class Known:
    """The records this process's last read made, by class and by what they were made from: a read
    takes the very object for a record read again unchanged, so that a build finds it as it left it
    (its digest, its rows) without comparing it field by field, and the reader skips converting it.
    The key is the decoded answer, whose every position has one type in every read (the codec's),
    so an equal key is the same record. It also holds the answers of views a read may take again
    instead of asking (``answered``). Owned by the caller (``incremental.Cache``); each read that
    ends replaces what it holds."""

    def __init__(self) -> None:
        self.last: dict[type, dict] = {}
        self.made: dict[type, dict] = {}
        # Answers of views, by what they were asked of, that a read may take instead of asking
        # again (``answered``): name -> (what else the views read, since when, as of when, {row: answers}).
        self.answers: dict[str, tuple[object, int, int, dict]] = {}
        self.kept: dict[str, tuple[object, int, int, dict]] = {}

    def begin(self) -> None:
        self.made, self.kept = {}, {}

    def end(self) -> None:
        self.last, self.made = self.made, {}
        self.answers, self.kept = self.kept, {}

    def answered(self, name: str, inputs: object, now: int, within: int) -> tuple[int, dict]:
        """(since, {row: answers}) the last read kept of the views ``name``, when everything else
        they read was ``inputs``, as it is now, at a time no later than ``now`` (a view may read
        the time: one moving back is asked again), and all of them were asked less than
        ``within`` seconds of chain time ago; else (``now``, nothing)."""
        kept = self.answers.get(name)
        if kept is None or kept[0] != inputs or not kept[1] <= kept[2] <= now < kept[1] + within:
            return now, {}
        return kept[1], kept[3]

    def keep(self, name: str, inputs: object, since: int, now: int, answers: dict) -> None:
        """What this read answered at ``now`` (see ``answered``), for the next read once this one ends."""
        self.kept[name] = (inputs, since, now, answers)


def instances(cls: type[T], rows: Iterable, known: Known | None = None,
              convert: Callable[[typing.Any], Iterable] | None = None) -> tuple[T, ...]:
    """Frozen dataclass instances from their field values in declaration order (``convert(row)``
    when given), set the way pickle restores them. A frozen dataclass's __init__ guards every field
    with object.__setattr__; for the 10 000 stakers of a large read that costs more than all the
    rest of making them. With ``known``, a row the last read made a record from is that record."""
    names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]  # any dataclass
    new = object.__new__
    last = known.last.get(cls, {}) if known is not None else {}
    made = known.made.setdefault(cls, {}) if known is not None else None
    out = []
    for row in rows:
        obj = last.get(row) if last else None
        if obj is None:
            obj = new(cls)
            obj.__dict__.update(zip(names, row if convert is None else convert(row), strict=True))
        if made is not None:
            made[row] = obj
        out.append(obj)
    return tuple(out)


@dataclass(frozen=True)
class Minipool:
    index: int
    node_id: str  # raw 20 bytes as a checksummed hex address, as stored on-chain
    status: int
    duration: int
    delegation_fee: int
    owner: str
    multisig_addr: str
    avax_node_op_amt: int
    avax_node_op_initial_amt: int
    avax_liquid_staker_amt: int
    bls_pubkey_and_sig: str
    tx_id: str
    creation_time: int
    initial_start_time: int
    start_time: int
    end_time: int
    avax_total_reward_amt: int
    error_code: str
    ggp_slash_amt: int
    avax_node_op_reward_amt: int
    avax_liquid_staker_reward_amt: int
    hardware_provider: str


@dataclass(frozen=True)
class Vault:
    """TokenggAVAX (stAVAX) state."""

    name: str
    symbol: str
    total_assets: int
    total_released_assets: int
    staking_total_assets: int
    amount_available_for_staking: int
    last_rewards_amt: int
    last_sync: int
    rewards_cycle_end: int
    rewards_cycle_length: int
    total_supply: int
    assets_per_share: int  # convertToAssets(1e18)
    shares_per_asset: int  # convertToShares(1e18)
    liquid_avax: int  # WAVAX held by the vault


@dataclass(frozen=True)
class Settings:
    """ProtocolDAO settings used by the API (wad-scaled unless named otherwise)."""

    rewards_cycle_seconds: int
    rewards_eligibility_min_seconds: int
    inflation_interval_rate: int
    inflation_interval_seconds: int
    min_collateralization_ratio: int
    max_collateralization_ratio: int
    minipool_node_commission_fee_pct: int
    minipool_min_avax_assignment: int
    minipool_max_avax_assignment: int
    minipool_min_avax_staking_amt: int
    target_ggavax_reserve_rate: int
    fee_bips: int
    expected_avax_rewards_rate: int
    claiming_contract_pct: dict[str, int]
    withdraw_for_delegation_enabled: bool
    # Optional (abis.OPTIONAL_DAO_SETTINGS): None when the ProtocolDAO has no such getter.
    minipool_cycle_duration: int | None = None  # seconds
    minipool_cycle_delay_tolerance: int | None = None  # seconds


@dataclass(frozen=True)
class OraclePrice:
    price: int  # AVAX per GGP, wei
    timestamp: int


@dataclass(frozen=True)
class FeedRound:
    address: str
    round_id: int
    answer: int
    started_at: int
    updated_at: int
    answered_in_round: int
    decimals: int


@dataclass(frozen=True)
class DexReserves:
    pair: str
    token0: str
    token1: str
    reserve0: int
    reserve1: int
    block_timestamp_last: int


@dataclass(frozen=True)
class RewardsPool:
    cycle_count: int
    cycle_start_time: int
    cycle_total_amt: int  # GGP minted at the last cycle start
    inflation_interval_start_time: int
    inflation_current_supply: int
    inflation_new_supply: int
    nodeop_cycle_total: int  # ClaimNodeOp.getRewardsCycleTotal(): last cycle's operator allotment


@dataclass(frozen=True)
class GGPToken:
    total_supply: int
    max_supply: int


@dataclass(frozen=True)
class VaultPoint:
    """ggAVAX share price at an older block: the APY window's far end."""

    block: BlockRef
    assets_per_share: int


@dataclass(frozen=True)
class Validator:
    """One validator record from the data provider (Glacier) or the P-Chain fallback, exact units."""

    node_id: str  # NodeID-…
    tx_hash: str
    start_timestamp: int
    end_timestamp: int
    amount_staked: int  # nAVAX
    amount_delegated: int  # nAVAX
    delegation_fee_pct: str  # decimal string as the provider gives it, e.g. "2.0000"
    delegator_count: int
    uptime_pct: str | None  # decimal string, percent
    validation_reward: int  # potential reward, nAVAX
    delegation_reward: int  # potential delegation fee reward, nAVAX
    avalanchego_version: str | None
    source: str  # "glacier" or "pchain"


@dataclass(frozen=True)
class PricePoint:
    """Last oracle and feed values of one UTC day."""

    date: str  # YYYY-MM-DD
    ggp_in_avax: int  # wei
    avax_usd: int  # feed answer, feed decimals
    block: int  # last block of the day that the point reflects
    timestamp: int
    # ggAVAX convertToAssets(1e18) at the day's last block (the pinned block while the day is
    # still running), that block's time and number, and how it was obtained (sources/shareprice.py):
    # "archive" (read at that block), "events" (rebuilt from the vault's events), "run" (the run's
    # pinned block). The APY's window when the node cannot read state 30 days back. Histories
    # written before the block was recorded hold the share price a run saw that day, block None.
    ggavax_assets_per_share: int | None = None
    ggavax_time: int | None = None
    ggavax_block: int | None = None
    ggavax_source: str | None = None


@dataclass(frozen=True)
class PriceCheck:
    """Outcome of the optional cross-check against an HTTP price API."""

    source: str
    status: str  # "ok" or "unavailable"
    avax_usd: str | None = None  # decimal strings as the API gave them
    ggp_usd: str | None = None
    note: str = ""


@dataclass(frozen=True)
class UnstakeRequest:
    """One open WithdrawQueue request: the struct's seven fields and the set it is in."""

    id: int
    requester: str
    shares: int  # ggAVAX wei taken at request time
    expected_assets: int  # AVAX wei the requester is paid, fixed at request time
    request_time: int
    claimable_time: int
    expiration_time: int
    allocated_funds: int  # AVAX wei set aside at fulfilment (0 while pending)
    fulfilled: bool  # in the fulfilled set (else in the pending set)


@dataclass(frozen=True)
class WithdrawQueue:
    """The ggAVAX withdrawal queue at the pinned block. Optional views (absent on older
    implementations) are None."""

    address: str
    next_request_id: int
    total_allocated_funds: int
    unstake_delay: int
    max_expiration_delay: int
    paused: bool | None
    pending_count: int
    fulfilled_count: int
    max_requests_per_deposit: int | None
    min_on_behalf: int | None
    shares_held: int  # ggAVAX balanceOf(queue): the pending requests' shares (and anything sent to it)
    requests: tuple[UnstakeRequest, ...]  # every open request, by id


@dataclass(frozen=True)
class QueueActivity:
    """What the queue's own logs say up to the pinned block: when the depositor last called
    (any event only ``depositFromStaking`` emits) and last funded a request, and the line's front:
    ids below it were popped (funded, or dropped as closed) and ids from it on are still in the
    contract's private line, closed ones as stale entries that count against the per-call limit."""

    cursor: int  # last block whose logs are folded in (the pinned block)
    line_front: int  # first id the line has not popped (0 when none was ever popped)
    last_call_block: int | None
    last_call_time: int | None
    last_funding_block: int | None
    last_funding_time: int | None


@dataclass(frozen=True)
class QueueStep:
    """Where one step of a request's life happened: its block, that block's time, the transaction."""

    block: int
    time: int
    tx: str


@dataclass(frozen=True)
class Receipt:
    """One request as the queue's logs tell its life, open or closed: filed, maybe funded, and how
    it closed (claimed, cancelled or reclaimed), with the amounts each step moved."""

    id: int
    requester: str
    shares: int  # ggAVAX wei taken when filed
    expected_assets: int  # AVAX wei it was to be paid
    claimable_time: int
    requested: QueueStep
    funded: QueueStep | None = None
    allocated: int | None = None  # AVAX wei set aside at funding
    closed: str | None = None  # "claimed", "cancelled" or "reclaimed"; None while open
    closed_at: QueueStep | None = None
    paid: int | None = None  # claimed: AVAX wei paid; reclaimed: the amount the event names
    shares_returned: int | None = None  # cancelled or reclaimed: ggAVAX wei sent back
    shares_burnt: int | None = None  # cancelled: ggAVAX wei burnt (the rate rose while it waited)


@dataclass(frozen=True)
class PstAvax:
    """The principal-only token that parks AVAX as ggAVAX and exits through the queue."""

    address: str
    total_supply: int  # AVAX principal owed to holders, wei
    vault_shares: int  # ggAVAX it holds


@dataclass(frozen=True)
class Snapshot:
    network: str
    chain_id: int
    block: BlockRef
    addresses: dict[str, str]
    settings: Settings
    ggavax: Vault
    ggp: GGPToken
    oracle: OraclePrice
    rewards_pool: RewardsPool
    staker_count: int
    total_ggp_stake: int
    stakers: tuple[Staker, ...]
    minipool_count: int
    total_avax_liquid_staker_amt: int
    minipools: tuple[Minipool, ...]
    paused: dict[str, bool]
    feed: FeedRound | None = None
    dex: DexReserves | None = None
    dex_pair: str | None = None  # the configured pair, read or not
    dex_error: str | None = None  # why the pair could not be read (``dex`` is then None)
    apy_base: VaultPoint | None = None
    apy_window_days: int = 30
    # Off-chain sources (sources/): validator provider records, daily prices, USD cross-check.
    validators: tuple[Validator, ...] = ()
    missing_validators: tuple[str, ...] = ()  # NodeIDs of active minipools the provider lacks (not those whose period ended)
    validator_source: str | None = None
    price_history: tuple[PricePoint, ...] = ()
    price_check: PriceCheck | None = None
    warnings: tuple[str, ...] = ()
    # The withdrawal queue: None with the reason in ``withdraw_queue_note`` where the network has
    # none configured or the queue has no code at the block.
    withdraw_queue: WithdrawQueue | None = None
    withdraw_queue_note: str | None = None
    pst_avax: PstAvax | None = None
    queue_activity: QueueActivity | None = None  # from the queue's logs (None: not read)
    queue_receipts: tuple[Receipt, ...] = ()  # every request ever filed, by id, from the queue's logs
    format: int = SNAPSHOT_FORMAT

    def to_json(self) -> str:
        return json.dumps(to_jsonable(self), sort_keys=True, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        try:
            data = jsonin.loads(text)
        except ValueError as exc:
            raise PublisherError(f"snapshot is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
            raise PublisherError(f"snapshot format is not {SNAPSHOT_FORMAT}")
        try:
            return from_jsonable(cls, data)
        except (TypeError, ValueError, KeyError) as exc:
            raise PublisherError(f"snapshot does not match the model: {exc}") from None

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Snapshot:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise PublisherError(f"cannot read snapshot {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise PublisherError(f"snapshot {path} is not UTF-8 text") from None
        return cls.from_json(text)


# What a run reads at most: ten times the largest protocol the publisher is measured at (100 000
# stakers, docs/performance.md), far below what would exhaust memory. A count read from the chain
# beyond its bound is refused before anything is allocated or paged for it.
MAX_STAKERS = 1_000_000
MAX_MINIPOOLS = 1_000_000
MAX_REQUEST_IDS = 1_000_000
_LAST_STATUS = max(MinipoolStatus)  # a status past it is none MinipoolManager knows


def count_problems(staker_count: int, minipool_count: int, queue: str | None = None, next_request_id: int = 0,
                   pending_count: int = 0, fulfilled_count: int = 0) -> list[str]:
    """The counts a read pages by, each bounded and checked against the others: what the reader
    asks before it reads the lists, and ``check`` asks of a snapshot. ``queue``: the queue's label
    (its counts follow), None without one."""
    out = []
    if not 0 <= staker_count <= MAX_STAKERS:
        out.append(f"Staking.getStakerCount() is {staker_count}, outside the 0 to {MAX_STAKERS:,} stakers a run reads")
    if not 0 <= minipool_count <= MAX_MINIPOOLS:
        out.append(f"MinipoolManager.getMinipoolCount() is {minipool_count}, outside the 0 to {MAX_MINIPOOLS:,} "
                   "minipools a run reads")
    if queue is not None:
        if not 0 <= next_request_id <= MAX_REQUEST_IDS:
            out.append(f"{queue}: nextRequestId() is {next_request_id}, outside the 0 to {MAX_REQUEST_IDS:,} request ids "
                       "a run reads")
        if pending_count < 0 or fulfilled_count < 0 or pending_count + fulfilled_count > next_request_id:
            out.append(f"{queue}: it counts {pending_count} pending and {fulfilled_count} fulfilled requests, but has "
                       f"issued {next_request_id} ids (nextRequestId)")
    return out


def queue_problems(q: WithdrawQueue) -> list[str]:
    """The queue's open records against its own counters: a queue whose sets and records disagree
    is read wrong or broken, and is not published."""
    label = f"WithdrawQueue {q.address}"
    out = []
    ids = [r.id for r in q.requests]
    if any(not 0 <= i < q.next_request_id for i in ids) or any(b <= a for a, b in itertools.pairwise(ids)):
        out.append(f"{label}: its records are not distinct ids below nextRequestId() ({q.next_request_id}), in order")
    n_done = sum(r.fulfilled for r in q.requests)
    if (len(q.requests) - n_done, n_done) != (q.pending_count, q.fulfilled_count):
        out.append(f"{label}: {len(q.requests) - n_done} pending and {n_done} fulfilled open records, but the queue "
                   f"counts {q.pending_count} pending and {q.fulfilled_count} fulfilled")
    allocated = sum(r.allocated_funds for r in q.requests if r.fulfilled)
    if allocated != q.total_allocated_funds:
        out.append(f"{label}: fulfilled requests hold {allocated} wei, totalAllocatedFunds() says {q.total_allocated_funds}")
    for r in q.requests:
        if not r.request_time <= r.claimable_time <= r.expiration_time <= LAST_TIME:
            out.append(f"{label}: request {r.id} has times out of order or past year 9999 "
                       f"({r.request_time}, {r.claimable_time}, {r.expiration_time})")
        elif r.fulfilled != (r.allocated_funds > 0) and r.expected_assets > 0:
            out.append(f"{label}: request {r.id} is {'fulfilled' if r.fulfilled else 'pending'} "
                       f"with {r.allocated_funds} wei allocated")
        elif r.allocated_funds > r.expected_assets:
            # Fulfilment sets aside exactly what the request is owed, never more.
            out.append(f"{label}: request {r.id} has {r.allocated_funds} wei allocated, more than the "
                       f"{r.expected_assets} wei it is owed")
        else:
            continue
        break  # one request named is enough
    return out


def check(snap: Snapshot) -> None:
    """Every invariant of the snapshot, in one place, before anything derives from it: whether it
    was just read (the reader asks ``count_problems`` before paging, then this) or loaded from a
    file. The counts against their bounds and each other, the exact sums and counts of the chain
    data, the queue's records against its counters. (What the rewards formula refuses of the
    chain's values is the formula's to say, as a build parses its parameters first.)"""
    q = snap.withdraw_queue
    problems = count_problems(snap.staker_count, snap.minipool_count, *(
        (f"WithdrawQueue {q.address}", q.next_request_id, q.pending_count, q.fulfilled_count) if q else ()))
    if problems:
        raise PublisherError(f"snapshot invariant violated: {every_cause(problems)}")
    problems = _data_problems(snap)
    if q is not None:
        problems += queue_problems(q)
    if problems:
        raise PublisherError(f"snapshot invariant violated: {every_cause(problems)}")


def _data_problems(snap: Snapshot) -> list[str]:
    """The chain data against its own counts and sums, one line each."""
    problems = []
    if len(snap.stakers) != snap.staker_count:
        problems.append(f"{len(snap.stakers)} stakers read, getStakerCount() is {snap.staker_count}")
    total = sum(s.ggp_staked for s in snap.stakers)
    if total != snap.total_ggp_stake:
        problems.append(f"sum of staker ggpStaked ({total}) != getTotalGGPStake ({snap.total_ggp_stake})")
    if len(snap.minipools) != snap.minipool_count:
        problems.append(f"{len(snap.minipools)} minipools read, getMinipoolCount() is {snap.minipool_count}")
    if any(m.status > _LAST_STATUS for m in snap.minipools):
        problems.append("a minipool has an unknown status")
    late = next((m for m in snap.minipools if max(m.creation_time, m.initial_start_time, m.start_time, m.end_time) > LAST_TIME), None)
    if late is not None:
        problems.append(f"minipool {late.index} has a time past year 9999")
    late_v = next((v for v in snap.validators if max(v.start_timestamp, v.end_timestamp) > LAST_TIME), None)
    if late_v is not None:
        problems.append(f"the validator record of {late_v.node_id} has a time past year 9999")
    if snap.oracle.price <= 0:
        problems.append("oracle GGP price is not positive")
    if snap.ggavax.amount_available_for_staking > snap.ggavax.total_assets:
        problems.append("ggAVAX amountAvailableForStaking exceeds totalAssets")
    over = next((s for s in snap.stakers if s.effective_ggp_staked > s.ggp_staked), None)
    if over is not None:
        problems.append(f"staker {over.staker_addr}: effective stake exceeds stake")
    return problems


_SAFE = 2**53


def to_jsonable(obj):
    if dataclasses.is_dataclass(obj):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, int) and not isinstance(obj, bool) and abs(obj) >= _SAFE:
        return str(obj)
    return obj


def from_jsonable(tp: typing.Any, data: typing.Any) -> typing.Any:
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _record_from(tp, data)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        return from_jsonable(next(a for a in args if a is not type(None)), data)
    if origin is tuple:
        if not isinstance(data, list):
            raise TypeError(f"expected a list, got {type(data).__name__}")
        item = typing.get_args(tp)[0]
        return tuple(from_jsonable(item, v) for v in data)
    if origin is dict:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object, got {type(data).__name__}")
        _, vt = typing.get_args(tp)
        return {str(k): from_jsonable(vt, v) for k, v in data.items()}
    return _scalar_from(tp, data)


def _record_from(tp: type, data: typing.Any) -> typing.Any:
    """A dataclass from its JSON object: every field given or defaulted."""
    if not isinstance(data, dict):
        raise TypeError(f"{tp.__name__}: expected an object")
    hints = typing.get_type_hints(tp)
    kwargs = {}
    for f in dataclasses.fields(tp):
        if f.name in data:
            kwargs[f.name] = from_jsonable(hints[f.name], data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise KeyError(f"{tp.__name__}.{f.name}")
    return tp(**kwargs)


def _scalar_from(tp: typing.Any, data: typing.Any) -> typing.Any:
    """An int (from a JSON number or decimal string), a bool or a str as given; anything else as is."""
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, (int, str)):
            raise TypeError(f"expected an integer, got {data!r}")
        return int(data)
    if tp is bool:
        if not isinstance(data, bool):
            raise TypeError(f"expected a boolean, got {data!r}")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise TypeError(f"expected a string, got {data!r}")
        return data
    return data
