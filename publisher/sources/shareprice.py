"""The daily ggAVAX share price of the price history: ``convertToAssets(1e18)`` at the last block of
each point's UTC day (the pinned block while that day is still running), rebuilt from the chain so
that a first run has the whole history, not only what runs saw.

The blocks: the last block at or before each day's end, found by searching block headers, every
day together (chain.reader.find_blocks_at). The values, in this order:

1. ``archive``: ``eth_call`` at each of those blocks, in bounded batches. A node that keeps every
   block's state answers them all.
2. ``events``: a node without that state (pruned) still serves headers and logs, and the vault's
   events rebuild its share price exactly. It is computed from five stored values
   (``VaultState``): totalAssets = totalReleasedAssets + lastRewardsAmt · min(t − lastSync,
   rewardsCycleEnd − lastSync) / (rewardsCycleEnd − lastSync), convertToAssets(1e18) = 1e18 ·
   totalAssets / totalSupply, each division rounding down. Every write to them emits an event:
   ``Deposit`` and ``Withdraw`` move totalReleasedAssets by their assets, ERC-20 ``Transfer`` from
   or to the zero address moves totalSupply, ``NewRewardsCycle(cycleEnd, rewardsAmt)`` is a sync
   (totalReleasedAssets grows by the previous lastRewardsAmt; lastRewardsAmt, lastSync = the
   block's time, rewardsCycleEnd are set). ``DepositedFromStaking``, ``WithdrawnForStaking`` and
   ``DepositedAdditionalYield`` move stakingTotalAssets or the WAVAX balance only (the next sync
   picks up rewards), so they do not enter the share price. This holds for every TokenggAVAX version
   on mainnet (V1, V2 and the current one; DESIGN's reference notes) and for the devnet's contract.

   Events give changes, not levels, so the fold needs one known state: the pinned block's, read
   by the run, walked back log by log (or the previous run's, which the published history keeps
   at its cursor, walked forward to the pinned block and required to arrive at it exactly). Walking
   back through a sync needs the rewards of the sync before it; before the first sync a scan sees
   (and without the previous run's state) the share price cannot be known, so those days get none.
   Each sync walked through must match the state it left, and nothing may go negative: any
   mismatch discards every event-derived value of the run (with a warning) rather than publish one
   that events do not determine.
3. Days neither gives keep no share price.

Which points are computed: on a first run, all; on a later run, only days that are new, the point
the previous run left at its pinned block (its day was still running), and, once, the points of a
history written before the day's block was recorded. Every other point is final and kept as it is.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from ..chain import abis
from ..chain.abi import event_topic
from ..chain.codec import DecodingError, topic_bytes
from ..chain.reader import WAD, at_hash, find_blocks_at, headers
from ..chain.rpc import RpcClient, RpcError
from ..errors import PublisherError
from ..snapshot import BlockRef, PricePoint, Snapshot
from . import history
from .history import LogFilter
from .history_file import PriorHistory, VaultState

log = logging.getLogger(__name__)

DAY = 86_400
CALLS_PER_BATCH = 100
TOPIC_DEPOSIT = event_topic("Deposit(address,address,uint256,uint256)")
TOPIC_WITHDRAW = event_topic("Withdraw(address,address,address,uint256,uint256)")
TOPIC_SYNC = event_topic(abis.EV_NEW_REWARDS_CYCLE)
TOPIC_TRANSFER = event_topic("Transfer(address,address,uint256)")
ZERO = "0x" + "00" * 32


class EventsDisagree(PublisherError):
    """The vault's events do not lead to the state the chain reports: not rebuilt from them."""


@dataclass(frozen=True)
class _VaultLog:
    block: int
    index: int
    kind: str  # "deposit", "withdraw", "mint", "burn", "sync"
    amount: int  # assets, shares, or the sync's rewardsAmt
    cycle_end: int = 0  # a sync's


@dataclass
class Filled:
    points: tuple[PricePoint, ...]
    by_source: dict[str, int] = field(default_factory=dict)  # share prices given this run, by source
    missing: int = 0  # days asked for that got none
    ranges: list[tuple[int, int]] = field(default_factory=list)  # log ranges read for the events, if any


def fill(client: RpcClient, snap: Snapshot, points: Sequence[PricePoint], prior: PriorHistory | None, *,
         floor: int, span: int, warnings: list[str], on_range: Callable[[int], None] | None = None) -> Filled:
    """``points`` with the share price of each day that needs one (see the module's notes).
    ``prior`` is the history the points were resumed from (None: built from scratch); ``floor``
    the first block the history may read. A node failure leaves the days it concerns as they were."""
    head = snap.block
    todo = _targets(points, prior)
    out = list(points)
    filled = Filled(tuple(points))
    notes: list[str] = []
    ends = {i: min(_day_end(points[i].date), head.timestamp) for i in todo}
    past = [i for i in todo if ends[i] < head.timestamp]
    for i in todo:
        if ends[i] >= head.timestamp:  # the day is still running: the run's own reading
            out[i] = _with(out[i], snap.ggavax.assets_per_share, head, "run")
            filled.by_source["run"] = filled.by_source.get("run", 0) + 1
    values: dict[int, tuple[int, BlockRef, str]] = {}
    try:
        hints = (prior.cursor,) if prior is not None and floor < prior.cursor < head.number else ()
        refs = dict(zip(past, find_blocks_at(client, [ends[i] for i in past], head, floor, hints=hints), strict=True))
        blocks = {i: r for i, r in refs.items() if r is not None}
        vault = snap.addresses["TokenggAVAX"]
        for i, value in _archive(client, vault, blocks).items():
            values[i] = (value, blocks[i], "archive")
        rest = {i: r for i, r in blocks.items() if i not in values}
        if rest:
            _rebuild(values, rest, blocks, lambda wanted: _from_events(client, snap, vault, wanted, prior, floor, span,
                                                                       filled.ranges, on_range))
    except EventsDisagree as exc:
        notes.append(f"ggAVAX share price not rebuilt from the vault's events ({exc})")
    except PublisherError as exc:
        notes.append(f"ggAVAX share price history not extended ({exc})")
    for i, (value, ref, source) in values.items():
        out[i] = _with(out[i], value, ref, source)
        filled.by_source[source] = filled.by_source.get(source, 0) + 1
    filled.missing = sum(1 for i in past if i not in values)
    if filled.missing:
        notes.append(f"ggAVAX share price unknown for {filled.missing} of {len(todo)} days, left as they were (no "
                     "archive state at their blocks, and the vault's events could not rebuild them)")
    for note in notes:
        log.warning(note)
    warnings += notes
    filled.points = tuple(out)
    return filled


def _rebuild(values: dict[int, tuple[int, BlockRef, str]], rest: dict[int, BlockRef], blocks: dict[int, BlockRef],
             from_events: Callable[[dict[int, BlockRef]], dict[int, int]]) -> None:
    """Add to ``values`` the days in ``rest`` (no archive state) the vault's events rebuild. Days
    the node did read, inside the span the events cover, are rebuilt too: the two must agree, or
    no value from the events is used."""
    first = min(r.number for r in rest.values())
    check = {i: r for i, r in blocks.items() if i in values and r.number >= first}
    rebuilt = from_events({**rest, **check})
    for i, r in check.items():
        if i in rebuilt and rebuilt[i] != values[i][0]:
            raise EventsDisagree(f"at block {r.number} they give {rebuilt[i]}, the node's state {values[i][0]}")
    for i in rest:
        if i in rebuilt:
            values[i] = (rebuilt[i], blocks[i], "events")


def _targets(points: Sequence[PricePoint], prior: PriorHistory | None) -> list[int]:
    """Indices of the points whose share price this run computes."""
    if prior is None:
        return list(range(len(points)))
    before = {p.date: p for p in prior.points}
    newest = prior.points[-1].date if prior.points else None
    # A history written before the vault's state was kept with it holds the share prices runs
    # saw: its empty days are filled once, and its newest point (the last run's reading) redone.
    legacy = prior.vault is None
    out = []
    for i, p in enumerate(points):
        old = before.get(p.date)
        if (old is None or (p.ggavax_block is not None and p.ggavax_block == prior.cursor)
                or (p.date == newest and (legacy or p.ggavax_assets_per_share is None))
                or (legacy and p.ggavax_assets_per_share is None)):
            out.append(i)
    return out


def _day_end(date: str) -> int:
    """The last second of a UTC day."""
    start = datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=UTC)
    return int((start + timedelta(days=1)).timestamp()) - 1


def _with(p: PricePoint, value: int, ref: BlockRef, source: str) -> PricePoint:
    return replace(p, ggavax_assets_per_share=value, ggavax_time=ref.timestamp, ggavax_block=ref.number, ggavax_source=source)


# -- archive reads ------------------------------------------------------------------------------------


def _archive(client: RpcClient, vault: str, blocks: dict[int, BlockRef]) -> dict[int, int]:
    """convertToAssets(1e18) at each block the node has the state of, by point index."""
    data = "0x" + abis.convertToAssets.encode(WAD).hex()
    items = sorted(blocks.items(), key=lambda kv: kv[1].number)
    out = {}
    for k in range(0, len(items), CALLS_PER_BATCH):
        part = items[k : k + CALLS_PER_BATCH]
        answers = client.batch([("eth_call", [{"to": vault, "data": data}, at_hash(ref)]) for _, ref in part],
                               raise_errors=False)
        for (i, _), answer in zip(part, answers, strict=True):
            if isinstance(answer, RpcError):
                continue  # most often: no state at that block
            try:
                value = abis.convertToAssets.decode(bytes.fromhex(answer[2:]))
            except (DecodingError, ValueError, TypeError, IndexError):
                continue  # no contract there yet, or an answer that is not one
            if isinstance(value, int) and value > 0:
                out[i] = value
    return out


# -- the vault's events -------------------------------------------------------------------------------


def _from_events(client: RpcClient, snap: Snapshot, vault: str, blocks: dict[int, BlockRef],
                 prior: PriorHistory | None, floor: int, span: int, ranges: list[tuple[int, int]],
                 on_range: Callable[[int], None] | None) -> dict[int, int]:
    """The share price at each block from the vault's events, by point index (days the events
    cannot determine are left out). Raises EventsDisagree when they contradict the chain."""
    head = snap.block
    anchor = VaultState.of(snap)
    if anchor.assets_per_share(head.timestamp) != snap.ggavax.assets_per_share:
        raise EventsDisagree(f"the share-price formula does not give convertToAssets(1e18) at block {head.number}")
    first = min(r.number for r in blocks.values())
    start: VaultState | None = None
    if prior is not None and prior.vault is not None and prior.cursor <= first:
        # Walk from the previous run's pinned block, whose state the history keeps.
        start, scan_from = prior.vault, prior.cursor + 1
    else:
        # Back far enough to see the sync before the earliest day (syncs follow cycle ends).
        earliest = min(r.timestamp for r in blocks.values())
        reach = earliest - max(snap.ggavax.rewards_cycle_length, DAY) - DAY
        found = find_blocks_at(client, [reach], head, floor)[0]
        scan_from = found.number if found is not None else floor
    filters = [LogFilter(vault, [[TOPIC_DEPOSIT, TOPIC_WITHDRAW, TOPIC_SYNC]]),
               LogFilter(vault, [TOPIC_TRANSFER, ZERO]), LogFilter(vault, [TOPIC_TRANSFER, None, ZERO])]
    logs: dict[tuple[int, int], _VaultLog] = {}
    for a, b, raws in history.scan(client, filters, scan_from, head.number, span, ranges, on_range, what="ggAVAX share price"):
        for raw in (r for group in raws for r in group):
            entry = _decode(raw, vault, a, b)
            if entry is not None:
                key = (entry.block, entry.index)
                if key in logs and logs[key] != entry:
                    raise EventsDisagree(f"log {entry.index} of block {entry.block} is both a mint and a burn")
                logs[key] = entry
    ordered = [logs[k] for k in sorted(logs)]
    sync_blocks = sorted({e.block for e in ordered if e.kind == "sync"})
    times = {n: ref.timestamp for n, ref in headers(client, sync_blocks).items()}
    at = fold_back(ordered, times, anchor, start, [r for r in blocks.values() if r.number >= scan_from - 1])
    return {i: value for i, r in blocks.items() if (value := at.get(r.number)) is not None}


def _decode(raw, vault: str, a: int, b: int) -> _VaultLog | None:
    try:
        if raw.get("removed"):
            return None
        block, index = int(raw["blockNumber"], 16), int(raw["logIndex"], 16)
        topics, data = raw["topics"], bytes.fromhex(raw["data"][2:])
        if raw["address"].lower() != vault.lower() or not a <= block <= b:
            raise ValueError("unexpected log")
        words = [int.from_bytes(data[k : k + 32], "big") for k in range(0, len(data), 32)]
        kind, n_topics, n_words = {TOPIC_DEPOSIT: ("deposit", 3, 2), TOPIC_WITHDRAW: ("withdraw", 4, 2),
                                   TOPIC_SYNC: ("sync", 2, 1), TOPIC_TRANSFER: ("transfer", 3, 1)}[topics[0]]
        if len(topics) != n_topics or len(data) != 32 * n_words:
            raise ValueError("unexpected layout")
        indexed = [int.from_bytes(topic_bytes(t), "big") for t in topics[1:]]
    except (AttributeError, KeyError, TypeError, ValueError, IndexError):
        raise PublisherError(f"ggAVAX share price: eth_getLogs for blocks {a}..{b} returned a malformed log") from None
    if kind == "sync":
        return _VaultLog(block, index, "sync", words[0], indexed[0])
    if kind == "transfer":
        mint, burn = indexed[0] == 0, indexed[1] == 0
        if mint and burn:
            raise EventsDisagree(f"log {index} of block {block} moves shares from and to the zero address")
        return _VaultLog(block, index, "mint" if mint else "burn", words[0])
    return _VaultLog(block, index, kind, words[0])  # Deposit and Withdraw: their assets


# Walking back through a vault event other than a reward sync: (sign of its amount in the released
# assets, in the share supply).
_UNDO = {"deposit": (-1, 0), "withdraw": (1, 0), "mint": (0, -1), "burn": (0, 1)}


def _before_sync(e: _VaultLog, held: tuple[int, int, int], sync_times: dict[int, int], prev: _VaultLog | None,
                 start: VaultState | None) -> tuple[int, int, int] | None:
    """(rewards, last sync, cycle end) before the reward sync ``e``, which must have left ``held``:
    the previous sync's, or the known starting state's; None when neither is known."""
    if held != (e.amount, sync_times[e.block], e.cycle_end):
        raise EventsDisagree(f"the reward sync in block {e.block} does not lead to the vault's later state")
    if prev is not None:
        return prev.amount, sync_times[prev.block], prev.cycle_end
    if start is not None:
        return start.last_rewards_amt, start.last_sync, start.rewards_cycle_end
    return None


def fold_back(logs: Sequence[_VaultLog], sync_times: dict[int, int], head: VaultState, start: VaultState | None,
              targets: Sequence[BlockRef]) -> dict[int, int | None]:
    """convertToAssets(1e18) at each target block (by number; None where the events cannot tell),
    walking the state at the last block back through ``logs`` (chain order, every vault event
    after the scan's first block). ``start``: the known state before the first log's block, which
    the walk must arrive at."""
    syncs = [e for e in logs if e.kind == "sync"]
    before = {id(e): (syncs[k - 1] if k else None) for k, e in enumerate(syncs)}
    released, rewards, synced, cycle_end, supply = (head.total_released_assets, head.last_rewards_amt,
                                                     head.last_sync, head.rewards_cycle_end, head.total_supply)
    known = True
    out: dict[int, int | None] = {}
    pending = sorted(targets, key=lambda r: r.number, reverse=True)

    def emit_down_to(block: int) -> None:
        while pending and pending[0].number >= block:
            ref = pending.pop(0)
            state = VaultState(released, rewards, synced, cycle_end, supply)
            out[ref.number] = state.assets_per_share(ref.timestamp) if known else None

    for e in reversed(logs):
        emit_down_to(e.block)
        if not known:
            break
        undo = _UNDO.get(e.kind)
        if undo is not None:
            released += undo[0] * e.amount
            supply += undo[1] * e.amount
        else:  # a sync: it must have left the state we hold
            earlier = _before_sync(e, (rewards, synced, cycle_end), sync_times, before[id(e)], start)
            if earlier is None:
                known = False  # the rewards it released are not in the logs read
                continue
            rewards, synced, cycle_end = earlier
            released -= rewards
        if released < 0 or supply < 0:
            raise EventsDisagree(f"the vault's events before block {e.block} take its assets or supply below zero")
    emit_down_to(-1)
    if start is not None and known and (released, rewards, synced, cycle_end, supply) != (
            start.total_released_assets, start.last_rewards_amt, start.last_sync, start.rewards_cycle_end, start.total_supply):
        raise EventsDisagree("the events since the previous run do not lead from its vault state to this block's")
    return out
