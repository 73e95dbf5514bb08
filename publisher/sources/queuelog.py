"""What the withdraw queue's own logs say and no view does: when its depositor last called
``depositFromStaking``, when that last funded a request, the front of the queue's private FIFO
line (reference/withdrawals.md §4.2, §5), and every request's life, open or closed: its receipt.

- **A call** leaves at least one of the events only ``depositFromStaking`` emits:
  ``DepositedFromStaking`` and ``StakeDeposited`` (except those naming the source "RESCUE", which
  ``rescueStuckAVAX`` emits through the same deposit path), ``RequestFulfilled``,
  ``InsufficientLiquidity``, ``QueueCleaned`` with the reason "REQUEST_NOT_IN_PENDING_SET",
  ``PendingRequestsNotProcesses`` and ``YieldDeposited``. A call that found nothing to do (no AVAX
  sent, the line empty) leaves no log, so this is evidence of calls, not a record of all of them.
- **A funding** is a ``RequestFulfilled``.
- **The line's front.** Every request id is pushed to the back of the line when filed, and ids
  leave only from the front: funded (``RequestFulfilled(source, id)``) or dropped as closed
  (``QueueCleaned(reason, id)``, both reasons: ``getNextPendingRequestAmount`` pops too, under
  "…_QUERY"). So the front is 1 + the largest id ever popped (0 when none was), every id from it
  on is still in the line, and the closed ones among those are stale entries.
- **A receipt** (snapshot.Receipt) per request id: ``UnstakeRequested`` files it (requester,
  shares, expected AVAX, claimable time); ``RequestFulfilled`` funds it; it closes with
  ``UnstakeClaimed`` (the AVAX paid), ``RequestCancelled`` (the shares returned; an
  ``ExcessSharesBurnt`` of the same transaction names the shares burnt) or
  ``ExpiredFundsReclaimed`` then ``ExpiredSharesReturned`` (the amount it names, the shares
  returned). Each step keeps its block, that block's time and its transaction. A closed request is
  deleted from the queue's storage: only these logs tell what became of it.

The result is a fold over the logs in chain order up to the pinned block, so a run resumes from
the previous run's result (a ``PriorActivity``: the published ``/withdrawals`` ``depositor`` and
``receipts`` objects with every ``/withdrawals/{address}`` file's receipts, or the previous
snapshot) and reads only the blocks after its cursor; resuming and rebuilding give the same
``QueueActivity`` and receipts. The prior is resumed only through the very block it was read at
(its hash is checked): after a reorg below the cursor the logs are read again from the start, so
a step the reorg removed leaves no trace. Logs are read with history.scan (bounded ranges,
batched, a range the node refuses halved); the times come from the headers of the blocks with new
steps (batched, their count bounded), each checked to be the block the logs name. Logs and headers
are all a pruned node needs to answer.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple

from .. import jsonin
from ..chain import abis
from ..chain.abi import event_topic
from ..chain.codec import checksum
from ..chain.rpc import RpcClient
from ..errors import PublisherError
from ..snapshot import QueueActivity, QueueStep, Receipt, Snapshot
from .history import LogFilter, scan

log = logging.getLogger(__name__)

TOPIC_DEPOSITED = event_topic(abis.EV_WQ_DEPOSITED_FROM_STAKING)
TOPIC_STAKE_DEPOSITED = event_topic(abis.EV_WQ_STAKE_DEPOSITED)
TOPIC_FULFILLED = event_topic(abis.EV_WQ_REQUEST_FULFILLED)
TOPIC_INSUFFICIENT = event_topic(abis.EV_WQ_INSUFFICIENT_LIQUIDITY)
TOPIC_CLEANED = event_topic(abis.EV_WQ_QUEUE_CLEANED)
TOPIC_NOT_PROCESSED = event_topic(abis.EV_WQ_PENDING_NOT_PROCESSED)
TOPIC_YIELD = event_topic(abis.EV_WQ_YIELD_DEPOSITED)
TOPIC_REQUESTED = event_topic(abis.EV_WQ_UNSTAKE_REQUESTED)
TOPIC_CLAIMED = event_topic(abis.EV_WQ_UNSTAKE_CLAIMED)
TOPIC_CANCELLED = event_topic(abis.EV_WQ_REQUEST_CANCELLED)
TOPIC_BURNT = event_topic(abis.EV_WQ_EXCESS_SHARES_BURNT)
TOPIC_RECLAIM_FUNDS = event_topic(abis.EV_WQ_EXPIRED_FUNDS_RECLAIMED)
TOPIC_RECLAIMED = event_topic(abis.EV_WQ_EXPIRED_SHARES_RETURNED)

# topic0 -> (topics the log carries, bytes of data)
SHAPES = {
    TOPIC_DEPOSITED: (1, 128),  # baseAmt, rewardAmt, source, value
    TOPIC_STAKE_DEPOSITED: (3, 32),  # indexed source, indexed depositor; amount
    TOPIC_FULFILLED: (3, 32),  # indexed source, indexed requestId; assets
    TOPIC_INSUFFICIENT: (1, 64),
    TOPIC_CLEANED: (3, 0),  # indexed reason, indexed requestId
    TOPIC_NOT_PROCESSED: (1, 32),
    TOPIC_YIELD: (1, 32),
    TOPIC_REQUESTED: (3, 96),  # indexed requestId, indexed requester; shares, expectedAssets, claimableTime
    TOPIC_CLAIMED: (3, 32),  # indexed requestId, indexed claimer; amount
    TOPIC_CANCELLED: (3, 32),  # indexed requestId, indexed requester; shares returned
    TOPIC_BURNT: (2, 32),  # indexed requestId; sharesBurnt
    TOPIC_RECLAIM_FUNDS: (2, 32),  # indexed requestId; amount
    TOPIC_RECLAIMED: (3, 32),  # indexed requestId, indexed requester; shares returned
}
TOPICS = list(SHAPES)
# The receipt step each event is, by topic0 (RequestFulfilled is also the activity's funding).
STEPS = {TOPIC_REQUESTED: "requested", TOPIC_FULFILLED: "funded", TOPIC_CLAIMED: "claimed",
         TOPIC_CANCELLED: "cancelled", TOPIC_BURNT: "burnt", TOPIC_RECLAIM_FUNDS: "reclaimFunds",
         TOPIC_RECLAIMED: "reclaimed"}
OUTCOMES = ("open", "claimed", "cancelled", "reclaimed")
HEADERS_PER_BATCH = 100  # block headers per JSON-RPC batch
MAX_HEADERS = 200_000  # block headers one run may read: more means a misconfigured start block


def _word(text: str) -> bytes:
    return text.encode().ljust(32, b"\0")


RESCUE_HEX = _word("RESCUE").hex()
SERVE_CLEANED_HEX = _word("REQUEST_NOT_IN_PENDING_SET").hex()  # the other reason ("…_QUERY") pops but is no call
CALLS = frozenset((TOPIC_FULFILLED, TOPIC_INSUFFICIENT, TOPIC_NOT_PROCESSED, TOPIC_YIELD))  # only depositFromStaking emits them
POPS = frozenset((TOPIC_FULFILLED, TOPIC_CLEANED))  # the id in topics[2] left the line's front
_HASHES = re.compile(r"0x[0-9a-fA-F]{64}0x[0-9a-fA-F]{64}")  # a block hash and a transaction hash
_WORDS = re.compile(r"(?:0x[0-9a-fA-F]{64})+")  # topics, one after the other
_HEXDATA = re.compile(r"0x(?:[0-9a-fA-F]{64})*")


@dataclass(frozen=True)
class PriorActivity:
    """A previous run's activity and receipts and where they come from: they are resumed only for
    the same queue, on the same chain, through the same cursor block, and only together (one scan
    folds both). ``activity`` None: that run could not read the logs, so nothing is resumed, and
    its ``receipts`` (an earlier run's) are only kept, should this run's read fail too.
    ``receipts`` None: unknown (an earlier version's output), nothing is resumed."""

    activity: QueueActivity | None
    queue: str | None = None
    network: str | None = None
    chain_id: int | None = None
    cursor_hash: str | None = None
    receipts: tuple[Receipt, ...] | None = None
    # Whether the receipts are a snapshot's of this process (``from_snapshot``): folded by this
    # code, so coherent with the cursor by construction; those read back from files are checked.
    own: bool = field(default=False, compare=False)

    @property
    def resumable(self) -> bool:
        return self.activity is not None and self.receipts is not None


@dataclass
class ActivityResult:
    activity: QueueActivity
    receipts: tuple[Receipt, ...] = ()  # every request filed in the blocks folded, by id
    ranges: list[tuple[int, int]] = field(default_factory=list)  # block ranges read, inclusive
    warnings: list[str] = field(default_factory=list)
    resumed: bool = False  # folded on from the prior (False: from ``start``)
    headers: int = 0  # block headers read for the times of new steps


class _Entry(NamedTuple):
    block: int
    log_index: int
    call: bool  # a depositor call's evidence
    funding: bool
    popped: int | None  # the id that left the line's front
    block_hash: str = ""
    step: str | None = None  # the receipt step (STEPS) it is, if any
    request: int = 0  # the request id it names
    who: str = ""  # the address it names (requester, claimer)
    amounts: tuple[int, ...] = ()  # its data words
    tx: str = ""


class _Fold:
    def __init__(self, prior: QueueActivity | None = None) -> None:
        self.front = prior.line_front if prior else 0
        self.call = prior.last_call_block if prior else None
        self.funding = prior.last_funding_block if prior else None
        self.gaps: list[tuple[int, int]] = []  # (expected front, popped id) where they differ

    def apply(self, e: _Entry) -> None:
        if e.call:
            self.call = e.block
        if e.funding:
            self.funding = e.block
        if e.popped is not None:
            if e.popped != self.front:
                self.gaps.append((self.front, e.popped))
            self.front = max(self.front, e.popped + 1)


class _Receipts:
    """The receipts by id, each step applied in chain order. A receipt is made once per run from
    the fields its steps set (the prior's own when it had one); the others are the prior's."""

    def __init__(self, prior: Sequence[Receipt] = ()) -> None:
        self.given = prior
        self._prior: dict[int, Receipt] | None = None
        self.fields: dict[int, dict] = {}  # id -> Receipt fields, for the receipts this run touches
        self.unknown: set[int] = set()  # ids named by a later step but never filed in the logs read
        self.refiled: set[int] = set()

    @property
    def prior(self) -> dict[int, Receipt]:
        """The prior's receipts by id, made when a step first looks one up (most blocks have none)."""
        if self._prior is None:
            self._prior = {r.id: r for r in self.given}
        return self._prior

    def apply(self, e: _Entry, at: QueueStep) -> None:
        i, kind = e.request, e.step
        if kind == "requested":
            if i in self.prior or i in self.fields:
                self.refiled.add(i)
            shares, expected, claimable = e.amounts
            self.fields[i] = {"id": i, "requester": e.who, "shares": shares, "expected_assets": expected,
                              "claimable_time": claimable, "requested": at, "funded": None, "allocated": None,
                              "closed": None, "closed_at": None, "paid": None, "shares_returned": None,
                              "shares_burnt": None}
            return
        f = self.fields.get(i)
        if f is None:
            r = self.prior.get(i)
            if r is None:
                self.unknown.add(i)
                return
            f = self.fields[i] = dict(vars(r))
        (amount,) = e.amounts
        if kind == "funded":
            f["funded"], f["allocated"] = at, amount
        elif kind == "claimed":
            f["closed"], f["closed_at"], f["paid"] = "claimed", at, amount
        elif kind == "burnt":  # before RequestCancelled in its transaction
            f["shares_burnt"] = amount
        elif kind == "cancelled":
            f["closed"], f["closed_at"], f["shares_returned"] = "cancelled", at, amount
            f["shares_burnt"] = f["shares_burnt"] or 0
        elif kind == "reclaimFunds":  # before ExpiredSharesReturned in its transaction
            f["paid"] = amount
        else:  # "reclaimed"
            f["closed"], f["closed_at"], f["shares_returned"] = "reclaimed", at, amount

    def result(self) -> tuple[Receipt, ...]:
        g = self.given
        if not self.fields and type(g) is tuple and all(a.id < b.id for a, b in pairwise(g)):
            return g  # no step: the prior's very receipts, already in order
        made = {i: _receipt(f) for i, f in self.fields.items()}
        every = {**self.prior, **made}
        return tuple(every[i] for i in sorted(every))


_RECEIPT_FIELDS = frozenset(f.name for f in dataclasses.fields(Receipt))


def _receipt(fields: dict) -> Receipt:
    """``Receipt(**fields)``: with every field given, made as its frozen ``__init__`` would but
    without setting each through ``object.__setattr__`` (a first read makes tens of thousands)."""
    if fields.keys() != _RECEIPT_FIELDS:
        return Receipt(**fields)  # a field left to its default
    r = object.__new__(Receipt)
    r.__dict__.update(fields)
    return r


def build(client: RpcClient, *, queue: str, head: int, start: int = 0, prior: QueueActivity | None = None,
          receipts: Sequence[Receipt] = (), span: int = 2048, on_range: Callable[[int], None] | None = None,
          receipts_checked: bool = False) -> ActivityResult:
    """The queue's activity and receipts over blocks ``start..head``, folded on from ``prior`` and
    its ``receipts`` when they are usable (the cursor at or before ``head``, every block they name
    at or before the cursor; ``receipts_checked``: known to be, see ``PriorActivity.own``)."""
    warnings: list[str] = []
    if prior is not None:
        problem = _check_prior(prior, head) or (None if receipts_checked else _check_receipts(receipts, prior.cursor))
        if problem:
            warnings.append(f"previous withdraw queue activity ignored ({problem}): reading the queue's logs again")
            prior = None
    state = _Fold(prior)
    first = max(start, prior.cursor + 1) if prior else start
    ranges: list[tuple[int, int]] = []
    steps, hashes = _fold_logs(client, queue, first, head, span, ranges, on_range, state)
    if state.gaps:
        want, got = state.gaps[0]
        warnings.append(f"withdraw queue logs: the line popped id {got} where id {want} was at its front "
                        f"({len(state.gaps)} such gaps; logs before block {first} not read?): the line's front "
                        "is the largest id popped, the depositor's blocks are the logs read")
    # The prior's blocks keep their times; only the blocks of new steps and a new last call's or
    # funding's are read.
    known = _known_times(prior)
    wanted = {e.block for e in steps} | {b for b in (state.call, state.funding) if b is not None}
    fetched = _times(client, [b for b in wanted if b not in known], hashes)
    times = {**known, **fetched}
    book = _Receipts(receipts if prior else ())
    _apply_steps(book, steps, times)
    warnings += _book_warnings(book, first)
    activity = QueueActivity(
        cursor=head, line_front=state.front,
        last_call_block=state.call, last_call_time=None if state.call is None else times[state.call],
        last_funding_block=state.funding, last_funding_time=None if state.funding is None else times[state.funding])
    return ActivityResult(activity, book.result(), ranges, warnings, prior is not None, len(fetched))


def _fold_logs(client: RpcClient, queue: str, first: int, head: int, span: int, ranges: list[tuple[int, int]],
               on_range: Callable[[int], None] | None, state: _Fold) -> tuple[list[_Entry], dict[int, str]]:
    """Fold the queue's logs of blocks ``first..head`` into ``state`` in chain order: the receipt
    steps among them, and each block's hash as the logs name it."""
    steps: list[_Entry] = []
    hashes: dict[int, str] = {}
    for a, b, (raw,) in scan(client, [LogFilter(queue, [TOPICS])], first, head, span, ranges, on_range,
                             what="withdraw queue logs"):
        for entry in sorted(_decode(raw, queue, a, b), key=lambda e: (e.block, e.log_index)):
            state.apply(entry)
            if entry.step is not None:
                steps.append(entry)
            if hashes.setdefault(entry.block, entry.block_hash) != entry.block_hash:
                raise PublisherError(f"withdraw queue logs: two hashes for block {entry.block}: the chain moved while "
                                     "its logs were read")
    return steps, hashes


def _known_times(prior: QueueActivity | None) -> dict[int, int]:
    """The times of the prior's last call and last funding, by block: not read again."""
    known: dict[int, int] = {}
    if prior:
        for block, t in ((prior.last_call_block, prior.last_call_time), (prior.last_funding_block, prior.last_funding_time)):
            if block is not None and t is not None:
                known[block] = t
    return known


def _apply_steps(book: _Receipts, steps: list[_Entry], times: dict[int, int]) -> None:
    """Apply ``steps`` to ``book`` in chain order, each dated by its block's time."""
    at: dict[tuple[int, str], QueueStep] = {}  # one step object per transaction (a funding call serves many)
    for e in steps:
        step = at.get((e.block, e.tx))
        if step is None:
            step = at[e.block, e.tx] = QueueStep(e.block, times[e.block], e.tx)
        book.apply(e, step)


def _book_warnings(book: _Receipts, first: int) -> list[str]:
    """What the receipts could not account for: steps of requests filed before ``first``, ids filed twice."""
    warnings = []
    if book.unknown:
        warnings.append(f"withdraw queue logs: {len(book.unknown)} request(s) funded or closed but filed before block "
                        f"{first} (not read), e.g. id {min(book.unknown)}: they have no receipt")
    if book.refiled:
        warnings.append(f"withdraw queue logs: {len(book.refiled)} request id(s) filed twice, e.g. id {min(book.refiled)}: "
                        "the later filing is kept")
    return warnings


def logs_for(client: RpcClient, snap: Snapshot, *, start: int, span: int, prior: PriorActivity | None,
             warnings: list[str], on_start: Callable[[int], None] | None = None,
             on_range: Callable[[int], None] | None = None) -> tuple[QueueActivity | None, tuple[Receipt, ...]]:
    """The snapshot's queue activity and receipts up to its block ((None, ()) without a queue). A
    prior from another chain or queue, past the block, or not read through the same cursor block
    is ignored with a warning. A failure to read the logs does not stop the run: it is a warning,
    the activity None (the evidence unavailable) and the receipts the prior's (see ``kept``)."""
    q = snap.withdraw_queue
    if q is None:
        return None, ()
    try:
        usable = verified(client, prior, snap, warnings)
        first = max(start, usable.activity.cursor + 1) if usable and usable.activity else start
        if on_start:
            on_start(max(0, snap.block.number - first) // max(1, span) + 1)
        got = build(client, queue=q.address, head=snap.block.number, start=start,
                    prior=usable.activity if usable else None, receipts=(usable.receipts or ()) if usable else (),
                    span=span, on_range=on_range, receipts_checked=bool(usable and usable.own))
    except PublisherError as exc:
        receipts = kept(prior, snap)
        problem = (f"withdraw queue logs not read ({exc}): the depositor's activity is unavailable, and the receipts "
                   + (f"are the previous run's {len(receipts)} (later steps missing)" if receipts else "unknown"))
        log.warning(problem)
        warnings.append(problem)
        return None, receipts
    for w in got.warnings:
        log.warning(w)
    warnings += got.warnings
    return got.activity, got.receipts


def activity_for(client: RpcClient, snap: Snapshot, *, start: int, span: int, prior: PriorActivity | None,
                 warnings: list[str], on_start: Callable[[int], None] | None = None,
                 on_range: Callable[[int], None] | None = None) -> QueueActivity | None:
    """``logs_for``'s activity alone."""
    return logs_for(client, snap, start=start, span=span, prior=prior, warnings=warnings, on_start=on_start,
                    on_range=on_range)[0]


def verified(client: RpcClient, prior: PriorActivity | None, snap: Snapshot, warnings: list[str]) -> PriorActivity | None:
    """``prior`` when it can be resumed for the snapshot's queue and chain; otherwise None, with a
    warning."""
    if prior is None:
        return None
    if not prior.resumable:
        why = "its run could not read the logs" if prior.activity is None else "it has no receipts"
        warnings.append(f"previous withdraw queue activity not resumed ({why}): reading the queue's logs from the start")
        return None
    problem = _foreign(client, prior, snap)
    if problem:
        warnings.append(f"previous withdraw queue activity ignored ({problem}): reading the queue's logs again")
        return None
    return prior


def kept(prior: PriorActivity | None, snap: Snapshot) -> tuple[Receipt, ...]:
    """The receipts a run publishes when it cannot read the logs: the prior's, when it is of the
    same queue on the same chain and names no block after the snapshot's (no header is read: the
    node is failing); else none. They may miss the steps since, which /withdrawals says."""
    q = snap.withdraw_queue
    if prior is None or not prior.receipts or q is None:
        return ()
    if (prior.network, prior.chain_id) != (snap.network, snap.chain_id) or (prior.queue or "").lower() != q.address.lower():
        return ()
    if _last_block(prior.receipts) > snap.block.number:
        return ()
    return prior.receipts


def _foreign(client: RpcClient, prior: PriorActivity, snap: Snapshot) -> str | None:
    q = snap.withdraw_queue
    if (prior.network, prior.chain_id) != (snap.network, snap.chain_id):
        return f"it is from {prior.network} (chain {prior.chain_id})"
    if q is None or (prior.queue or "").lower() != q.address.lower():
        return f"it is of queue {prior.queue}"
    assert prior.activity is not None
    cursor = prior.activity.cursor
    if cursor > snap.block.number:
        return f"its cursor {cursor} is after block {snap.block.number}"
    if cursor == snap.block.number and prior.cursor_hash == snap.block.hash:
        return None
    header = client.request("eth_getBlockByNumber", [hex(cursor), False])
    if not isinstance(header, dict) or header.get("hash") != prior.cursor_hash:
        return f"block {cursor} is not the one it was read at"
    return None


def _check_prior(p: QueueActivity, head: int) -> str | None:
    if p.cursor > head:
        return f"its cursor {p.cursor} is after block {head}"
    if p.line_front < 0:
        return "its line front is negative"
    for what, block, t in (("call", p.last_call_block, p.last_call_time), ("funding", p.last_funding_block, p.last_funding_time)):
        if (block is None) != (t is None):
            return f"its last {what} has a block or a time but not both"
        if block is not None and not 0 <= block <= p.cursor:
            return f"its last {what} is after its cursor"
    return None


def _check_receipts(receipts: Sequence[Receipt], cursor: int) -> str | None:
    ids = [r.id for r in receipts]
    if len(set(ids)) != len(ids):
        return "a receipt appears twice"
    for r in receipts:
        if r.closed not in (None, "claimed", "cancelled", "reclaimed") or (r.closed is None) != (r.closed_at is None):
            return f"receipt {r.id} has no coherent outcome"
        if (r.funded is None) != (r.allocated is None):
            return f"receipt {r.id} has a funding without an amount, or the reverse"
    if receipts and _last_block(receipts) > cursor:
        return "a receipt names a block after its cursor"
    return None


def _last_block(receipts: Iterable[Receipt]) -> int:
    return max((s.block for r in receipts for s in (r.requested, r.funded, r.closed_at) if s is not None), default=-1)


def _decode(raw: list, queue: str, a: int, b: int) -> list[_Entry]:
    """The logs of one range, checked (address, range, shape, hex) and decoded; tens of thousands
    on a first read, so the words are read from the hex text directly."""
    out = []
    queue = queue.lower()
    hashes, words, hexdata = _HASHES.fullmatch, _WORDS.fullmatch, _HEXDATA.fullmatch
    for item in raw:
        try:
            if item.get("removed"):
                continue
            block, index = int(item["blockNumber"], 16), int(item["logIndex"], 16)
            topics, data = item["topics"], item["data"]
            if item["address"].lower() != queue or not a <= block <= b:
                raise ValueError("unexpected log")
            t0 = topics[0]
            shape = SHAPES.get(t0)
            if shape is None or shape != (len(topics), (len(data) - 2) // 2) or not hexdata(data) or not words("".join(topics)):
                raise ValueError("unexpected topics")
            block_hash, tx = item["blockHash"], item["transactionHash"]
            if not hashes(block_hash + tx):
                raise ValueError("no block or transaction hash")
            call = _is_call(t0, topics, data)
            popped = int(topics[2], 16) if t0 in POPS else None
            step = STEPS.get(t0)
            if step is None:
                out.append(_Entry(block, index, call, False, popped, block_hash))
                continue
            funding, request, who, amounts = _step_fields(t0, topics, data)
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):
            raise PublisherError(f"withdraw queue logs: eth_getLogs for blocks {a}..{b} returned a malformed log") from None
        out.append(_Entry(block, index, call, funding, popped, block_hash, step, request, who, amounts, tx.lower()))
    return out


def _is_call(t0: str, topics: list[str], data: str) -> bool:
    """Whether a log is evidence of a depositor call (the module's docstring says which are)."""
    if t0 == TOPIC_DEPOSITED:
        return data[130:194].lower() != RESCUE_HEX
    if t0 == TOPIC_STAKE_DEPOSITED:
        return topics[1][2:].lower() != RESCUE_HEX
    if t0 == TOPIC_CLEANED:
        return topics[1][2:].lower() == SERVE_CLEANED_HEX
    return t0 in CALLS


def _step_fields(t0: str, topics: list[str], data: str) -> tuple[bool, int, str, tuple[int, ...]]:
    """A receipt step's log read: whether it is a funding, the request id and the address it
    names, and its data words."""
    funding = t0 == TOPIC_FULFILLED
    request = int(topics[2 if funding else 1], 16)
    who = checksum("0x" + topics[2][-40:]) if len(topics) == 3 and not funding else ""
    amounts = (int(data[2:66], 16),) if len(data) == 66 else tuple([int(data[k : k + 64], 16) for k in range(2, len(data), 64)])
    if t0 == TOPIC_REQUESTED and amounts[2] >= 1 << 48:
        raise ValueError("claimable time is not a uint48")
    return funding, request, who, amounts


def _times(client: RpcClient, blocks: Sequence[int], hashes: dict[int, str] | None = None) -> dict[int, int]:
    """The timestamps of ``blocks``, their headers read in batches; a header whose hash is not the
    one the logs named for its block means the chain moved while it was read."""
    blocks = sorted(set(blocks))
    if len(blocks) > MAX_HEADERS:
        raise PublisherError(f"withdraw queue logs need the times of {len(blocks)} blocks, more than {MAX_HEADERS}: "
                             "raise the queue's start block")
    hashes = hashes or {}
    out = {}
    for k in range(0, len(blocks), HEADERS_PER_BATCH):
        part = blocks[k : k + HEADERS_PER_BATCH]
        headers = client.batch([("eth_getBlockByNumber", [hex(n), False]) for n in part])
        for n, h in zip(part, headers, strict=True):
            try:
                if int(h["number"], 16) != n:
                    raise ValueError
                out[n] = int(h["timestamp"], 16)
                same = n not in hashes or h["hash"] == hashes[n]
            except (KeyError, TypeError, ValueError):
                raise PublisherError(f"withdraw queue logs: no usable header for block {n}") from None
            if not same:
                raise PublisherError(f"withdraw queue logs: block {n} is not the block its logs came from: the chain "
                                     "moved while its logs were read")
    return out


# -- the previous run's activity and receipts ---------------------------------------------------------


def from_snapshot(snap: Snapshot) -> PriorActivity | None:
    a, q = snap.queue_activity, snap.withdraw_queue
    if a is None or q is None:
        return None
    return PriorActivity(a, q.address, snap.network, snap.chain_id,
                         snap.block.hash if a.cursor == snap.block.number else None, snap.queue_receipts, own=True)


def load_published(path: str | Path, requesters: str | Path | None = None) -> PriorActivity | None:
    """The activity and receipts a published tree carries: ``/withdrawals`` (``path``) with its
    ``depositor`` object (endpoints/depositor.py ``depositor_record``), its ``receipts`` object,
    ``address`` and ``meta``, the logs folded in through ``meta.block``; and the receipts of
    every ``/withdrawals/{address}`` file in ``requesters`` (default: the folder beside ``path``),
    as many as ``receipts.count`` says. None when the file is absent or unusable; activity None
    when that run could not read the logs (its receipts then are only kept, should this run fail
    too); receipts None when the tree has none (an earlier version's). Each costs only reading
    the logs from the start block again."""
    path = Path(path)
    try:
        data = jsonin.loads(path.read_text())
        meta, summary = data["meta"], data.get("receipts")
        block = meta["block"]
        queue, network, chain_id, number, block_hash = data["address"], meta["network"], meta["chainId"], block["number"], block["hash"]
        if not all(isinstance(v, str) for v in (queue, network, block_hash)) or not isinstance(chain_id, int):
            raise TypeError("unexpected meta")
        activity = _depositor_activity(data.get("depositor"), number)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ArithmeticError) as exc:
        log.warning("cannot resume the withdraw queue activity from %s (%s): reading the queue's logs again",
                    path, type(exc).__name__)
        return None
    receipts = None
    if isinstance(summary, dict):
        receipts = _published_receipts(path, requesters, summary)
        if summary.get("complete") is not True:
            activity = None  # the receipts are an earlier run's: kept, not resumed
    if activity is None and not receipts:
        return None
    return PriorActivity(activity, queue, network, chain_id, block_hash, receipts)


def _depositor_activity(d, block: int) -> QueueActivity | None:
    """The activity a published ``depositor`` object holds through ``block``, its file's
    ``meta.block`` (None: that run could not read the logs). A file whose content no block since
    has changed keeps an earlier block there: its values hold through it still, and the scan
    resumes after it."""
    if not (isinstance(d, dict) and d.get("available") is True):
        return None
    return QueueActivity(
        cursor=_int(block), line_front=_int(d["lineFront"]),
        last_call_block=_opt(d["lastCallBlock"]), last_call_time=_opt(d["lastCallTime"]),
        last_funding_block=_opt(d["lastFundingBlock"]), last_funding_time=_opt(d["lastFundingTime"]))


def _published_receipts(path: Path, requesters: str | Path | None, summary: dict) -> tuple[Receipt, ...] | None:
    """The requester files' receipts, as many as ``/withdrawals``' ``receipts`` object counts; None
    (with a warning) when they cannot be read or are not that many."""
    try:
        receipts = load_receipts(Path(requesters) if requesters is not None else path.with_suffix(""))
        if len(receipts) != _int(summary["count"]):
            raise ValueError(f"{len(receipts)} receipts in the requester files, /withdrawals says {summary['count']}")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ArithmeticError) as exc:
        log.warning("cannot resume the withdraw queue receipts from %s (%s): reading the queue's logs again",
                    path, exc if isinstance(exc, ValueError) else type(exc).__name__)
        return None
    return receipts


# The receipts of each requester file last read, by path, with the file's identity (inode, size,
# modification time): a file the next tree links unchanged (incremental.py) is not parsed again by
# the same process (publisher watch reads its tree every block). Only the latest read's are kept.
_PARSED: dict[str, tuple[tuple[int, int, int], list[Receipt]]] = {}


def load_receipts(folder: Path) -> tuple[Receipt, ...]:
    """Every receipt of the ``/withdrawals/{address}`` files in ``folder``, by id (none when the
    folder is absent)."""
    out: list[Receipt] = []
    seen: dict[str, tuple[tuple[int, int, int], list[Receipt]]] = {}
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith("0x") and e.name.endswith(".json")]
    except FileNotFoundError:
        return ()
    for entry in entries:
        st = entry.stat()
        identity = (st.st_ino, st.st_size, st.st_mtime_ns)
        hit = _PARSED.get(entry.path)
        if hit is None or hit[0] != identity:
            with open(entry.path, "rb") as fh:
                body = jsonin.loads(fh.read())
            who = body["requester"]
            if not isinstance(who, str) or checksum(who) != who or who.lower() != entry.name[:-5]:
                raise ValueError(f"{entry.name} names requester {who!r}")
            hit = (identity, [receipt_from_record(who, rec) for rec in body["receipts"]])
        seen[entry.path] = hit
        out += hit[1]
    _PARSED.clear()
    _PARSED.update(seen)
    out.sort(key=lambda r: r.id)
    if any(a.id == b.id for a, b in pairwise(out)):
        raise ValueError("a request has receipts in two files")
    return tuple(out)


def receipt_from_record(who: str, rec: dict) -> Receipt:
    """The Receipt a published receipt record (endpoints/withdrawals.py ``receipt_record``) holds."""
    req, funded = rec["requested"], rec["funded"]
    closes = [k for k in ("claimed", "cancelled", "reclaimed") if rec[k] is not None]
    if len(closes) > 1 or rec["outcome"] != (closes[0] if closes else "open"):
        raise ValueError(f"receipt {rec.get('id')} has no coherent outcome")
    kind = closes[0] if closes else None
    c = rec[kind] if kind else {}
    return Receipt(
        _int(rec["id"]), who, _wei(req["sharesWei"]), _wei(req["expectedAvaxWei"]), _int(rec["claimableTime"]), _step(req),
        funded=None if funded is None else _step(funded), allocated=None if funded is None else _wei(funded["avaxWei"]),
        closed=kind, closed_at=_step(c) if kind else None,
        paid=_wei(c["avaxWei"]) if kind in ("claimed", "reclaimed") else None,
        shares_returned=_wei(c["sharesReturnedWei"]) if kind in ("cancelled", "reclaimed") else None,
        shares_burnt=_wei(c["sharesBurntWei"]) if kind == "cancelled" else None)


def _step(rec: dict) -> QueueStep:
    tx = rec["tx"]
    if not isinstance(tx, str) or len(tx) != 66:
        raise ValueError("not a transaction hash")
    return QueueStep(_int(rec["block"]), _int(rec["time"]), tx)


def _wei(value) -> int:
    if not isinstance(value, str) or not value.isdigit():
        raise TypeError("expected a decimal string")
    return int(value)


def _int(value) -> int:
    if type(value) is not int:
        raise TypeError("expected an integer")
    return value


def _opt(value) -> int | None:
    return None if value is None else _int(value)
