"""Daily price history rebuilt from chain events: the last oracle GGP/AVAX price and AVAX/USD feed
answer of each UTC day, up to the pinned block.

Events: ``Oracle.GGPPriceUpdated(uint256 indexed price, uint256 timestamp)`` and the aggregator's
``AnswerUpdated(int256 indexed current, uint256 indexed roundId, uint256 updatedAt)``. Days come
from the events' own time fields, so no block headers are fetched. Logs are read with
``eth_getLogs`` over bounded block ranges, several per JSON-RPC batch; a range the node refuses
as too large is halved.

The history is a fold over the logs in chain order, so a run can resume from a previous result and
its cursor block: the previous points hold the fold's state, and only logs after the cursor are
read. Resuming and rebuilding from scratch give the same points.

The published file's exact fields, which a run resumes from, are history_file.py's.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from ..chain import abis
from ..chain.abi import Fn, event_topic
from ..chain.codec import DecodingError, topic_bytes
from ..chain.rpc import RpcClient, RpcError
from ..errors import PublisherError
from ..snapshot import LAST_TIME, PricePoint, Snapshot
from .history_file import PriorHistory, share_fields
from .http import one_line

log = logging.getLogger(__name__)

TOPIC_ORACLE = event_topic(abis.EV_GGP_PRICE_UPDATED)
TOPIC_ANSWER = event_topic(abis.EV_ANSWER_UPDATED)
RANGES_PER_BATCH = 8
MAX_REQUESTS = 100_000  # a run that needs more is misconfigured (span or start block)
# How providers say a range is too wide or returns too much (Infura, Alchemy, QuickNode, Ankr,
# avalanchego's api-max-blocks-per-request).
_TOO_MUCH = re.compile(r"too many|more than|too large|too wide|block range|exceed|limited to|response size", re.I)

# Chainlink proxies emit no events: their aggregators do, one per phase.
_phase_id = Fn("phaseId()", "uint16")
_phase_aggregators = Fn("phaseAggregators(uint16)", "address")


@dataclass
class HistoryResult:
    points: tuple[PricePoint, ...]
    ranges: list[tuple[int, int]] = field(default_factory=list)  # block ranges read, inclusive
    warnings: list[str] = field(default_factory=list)
    resumed: bool = False  # the points extend the prior's (False: rebuilt from ``start``)


def build(client: RpcClient, *, oracle: str, feeds: Sequence[str], head: int, start: int = 0,
          prior: PriorHistory | None = None, span: int = 2048,
          on_range: Callable[[int], None] | None = None) -> HistoryResult:
    """Daily points for blocks ``start..head``, resuming from ``prior`` when it is usable."""
    warnings: list[str] = []
    state = _Fold()
    resumed = False
    if prior is not None and prior.points:
        problem = _check_prior(prior, head)
        if problem:
            warnings.append(f"previous price history ignored ({problem}): rebuilding it")
        else:
            state = _Fold.resume(prior.points)
            start = max(start, prior.cursor + 1)
            resumed = True
    ranges: list[tuple[int, int]] = []
    for logs in _logs(client, oracle, list(feeds), start, head, span, ranges, on_range):
        for entry in logs:
            state.apply(entry)
    return HistoryResult(state.points(), ranges, warnings, resumed)


def build_for(client: RpcClient, snap: Snapshot, *, start: int, span: int, prior: PriorHistory | None,
              warnings: list[str], on_range: Callable[[int], None] | None = None) -> HistoryResult:
    """The snapshot's history (none without a feed), with a warning when it does not end at the
    pinned prices."""
    if snap.feed is None:
        return HistoryResult(())
    feeds = feed_event_sources(client, snap.feed.address, snap.block.number)
    got = build(client, oracle=snap.addresses["Oracle"], feeds=feeds, head=snap.block.number,
                start=start, prior=prior, span=span, on_range=on_range)
    last = got.points[-1] if got.points else None
    if last is None or (last.ggp_in_avax, last.avax_usd) != (snap.oracle.price, snap.feed.answer):
        got.warnings.append("price history does not end at the pinned oracle price and feed answer "
                            "(events outside the configured start block or event sources)")
    for w in got.warnings:
        log.warning(w)
    warnings += got.warnings
    return got


def feed_event_sources(client: RpcClient, feed: str, block: int) -> list[str]:
    """Contracts emitting AnswerUpdated for ``feed``: every phase aggregator behind a Chainlink
    proxy, or the feed itself when it is an aggregator."""
    def call(fn: Fn, *args):
        data = client.request("eth_call", [{"to": feed, "data": "0x" + fn.encode(*args).hex()}, hex(block)])
        if type(data) is not str or not data.startswith("0x"):
            raise PublisherError(f"{client.describe()} answered eth_call of {fn.name} on {feed} with a malformed value")
        return fn.decode(bytes.fromhex(data[2:]))

    try:
        phases = call(_phase_id)
    except (RpcError, DecodingError, ValueError):  # not a proxy: no such function
        return [feed]
    out = []
    for phase in range(1, min(phases, 64) + 1):
        try:
            addr = call(_phase_aggregators, phase)
        except (DecodingError, ValueError):
            raise PublisherError(f"{client.describe()} answered phaseAggregators({phase}) of {feed} with a malformed value") from None
        if int(addr, 16):
            out.append(addr)
    return out or [feed]


# -- the fold ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Log:
    block: int
    index: int
    kind: str  # "oracle" or "answer"
    value: int
    timestamp: int


class _Fold:
    """Current oracle price and feed answer, and one point per UTC day in which either changed."""

    def __init__(self) -> None:
        self.price: int | None = None
        self.answer: int | None = None
        self.clock = 0  # event times made monotone, so days never go backwards
        self.days: dict[str, PricePoint] = {}

    @classmethod
    def resume(cls, points: Sequence[PricePoint]) -> _Fold:
        f = cls()
        last = points[-1]
        f.price, f.answer, f.clock = last.ggp_in_avax, last.avax_usd, last.timestamp
        f.days = {p.date: p for p in points}
        return f

    def apply(self, e: _Log) -> None:
        if e.kind == "oracle":
            self.price = e.value
        else:
            self.answer = e.value
        self.clock = max(self.clock, e.timestamp)
        if self.price is None or self.answer is None:
            return
        day = datetime.fromtimestamp(self.clock, UTC).strftime("%Y-%m-%d")
        point = PricePoint(day, self.price, self.answer, e.block, self.clock)
        if day in self.days:  # keep the share price recorded for this day
            point = replace(point, **share_fields(self.days[day]))
        self.days[day] = point

    def points(self) -> tuple[PricePoint, ...]:
        return tuple(self.days[d] for d in sorted(self.days))


def verified(client: RpcClient, prior: PriorHistory | None, snap: Snapshot, warnings: list[str]) -> PriorHistory | None:
    """``prior`` when it belongs to the snapshot's chain; otherwise None, with a warning."""
    if prior is None:
        return None
    problem = _foreign(client, prior, snap)
    if problem:
        warnings.append(f"previous price history ignored ({problem}): rebuilding it")
        return None
    return prior


def _foreign(client: RpcClient, prior: PriorHistory, snap: Snapshot) -> str | None:
    """Why ``prior`` does not belong to the snapshot's chain, or None."""
    if (prior.network, prior.chain_id) != (snap.network, snap.chain_id):
        return f"it is from {prior.network} (chain {prior.chain_id})"
    if prior.cursor > snap.block.number:
        return f"its cursor {prior.cursor} is after block {snap.block.number}"
    header = client.request("eth_getBlockByNumber", [hex(prior.cursor), False])
    if not isinstance(header, dict) or header.get("hash") != prior.cursor_hash:
        return f"block {prior.cursor} is not the one it was built from"
    return None


def _check_prior(prior: PriorHistory, head: int) -> str | None:
    dates = [p.date for p in prior.points]
    if dates != sorted(set(dates)):
        return "dates are not strictly increasing"
    if prior.cursor > head:
        return f"its cursor {prior.cursor} is after block {head}"
    if max(max(p.block, p.ggavax_block or 0) for p in prior.points) > prior.cursor:
        return "a point is after its cursor"
    return None


# -- reading logs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogFilter:
    """One eth_getLogs filter of a scan: emitting contract(s) and topics, from ``start`` on."""

    address: str | list[str]
    topics: list
    start: int = 0


def scan(client: RpcClient, filters: Sequence[LogFilter], start: int, head: int, span: int,
         ranges: list[tuple[int, int]], on_range: Callable[[int], None] | None = None, *,
         what: str = "price history") -> Iterator[tuple[int, int, list[list]]]:
    """(first block, last block, raw logs of each filter) per block range from ``start`` to
    ``head``, ranges in ascending order. Several ranges go in one JSON-RPC batch, every filter of a
    range in it, errors returned per item; a range the node refuses as too large is halved. A filter is asked only for the blocks from its own start."""
    span = max(1, span)
    todo = [(a, min(a + span - 1, head)) for a in range(start, head + 1, span)]
    requests = 0
    while todo:
        batch, todo = todo[:RANGES_PER_BATCH], todo[RANGES_PER_BATCH:]
        calls, asked = _log_calls(filters, batch)
        requests += 1
        if requests > MAX_REQUESTS:
            raise PublisherError(f"{what} needs more than {MAX_REQUESTS} eth_getLogs batches: raise the log span or the start block")
        out = client.batch(calls, raise_errors=False)
        split: list[tuple[int, int]] = []
        at = 0
        for (a, b), mine in zip(batch, asked, strict=True):
            got, at = out[at : at + len(mine)], at + len(mine)
            errors = [g for g in got if isinstance(g, RpcError)]
            if errors:
                if a < b and any(_TOO_MUCH.search(e.rpc_message) for e in errors):
                    mid = (a + b) // 2
                    split += [(a, mid), (mid + 1, b)]
                    continue
                raise PublisherError(f"{what}: eth_getLogs for blocks {a}..{b} failed: {one_line(errors[0].rpc_message)}")
            if split:
                # Keep chain order: a later range waits until the halves before it are read.
                split.append((a, b))
                continue
            ranges.append((a, b))
            if on_range:
                on_range(1)
            yield a, b, _logs_by_filter(len(filters), mine, got, f"{what}: eth_getLogs for blocks {a}..{b}")
        todo = split + todo


def _log_calls(filters: Sequence[LogFilter], batch: list[tuple[int, int]]) -> tuple[list, list[list[int]]]:
    """The eth_getLogs calls of a batch of ranges, and which filters each range asks: those
    started by its last block, each from its own start."""
    calls, asked = [], []
    for a, b in batch:
        mine = [k for k, f in enumerate(filters) if f.start <= b]
        asked.append(mine)
        for k in mine:
            f = filters[k]
            window = {"fromBlock": hex(max(a, f.start)), "toBlock": hex(b)}
            calls.append(("eth_getLogs", [{**window, "address": f.address, "topics": f.topics}]))
    return calls, asked


def _logs_by_filter(count: int, mine: list[int], got: list, what: str) -> list[list]:
    """Each filter's raw logs of one range (empty for those it did not ask)."""
    logs: list[list] = [[] for _ in range(count)]
    for k, raw in zip(mine, got, strict=True):
        if not isinstance(raw, list):
            raise PublisherError(f"{what} returned no list")
        logs[k] = raw
    return logs


def _logs(client: RpcClient, oracle: str, feeds: list[str], start: int, head: int, span: int,
          ranges: list[tuple[int, int]], on_range) -> Iterator[list[_Log]]:
    """Decoded logs in chain order, one list per block range, ranges in ascending order."""
    filters = [LogFilter(oracle, [TOPIC_ORACLE]), LogFilter(feeds, [TOPIC_ANSWER])]
    for a, b, (oracle_logs, answer_logs) in scan(client, filters, start, head, span, ranges, on_range):
        both = _decode(oracle_logs, oracle, "oracle", a, b) + _decode(answer_logs, feeds, "answer", a, b)
        yield sorted(both, key=lambda e: (e.block, e.index))


def _decode(raw, sources, kind: str, a: int, b: int) -> list[_Log]:
    if not isinstance(raw, list):
        raise PublisherError(f"price history: eth_getLogs for blocks {a}..{b} returned no list")
    allowed = {s.lower() for s in ([sources] if isinstance(sources, str) else sources)}
    out = []
    for item in raw:
        try:
            if item.get("removed"):
                continue
            block, index = int(item["blockNumber"], 16), int(item["logIndex"], 16)
            topics, data = item["topics"], bytes.fromhex(item["data"][2:])
            if item["address"].lower() not in allowed or not a <= block <= b or len(data) != 32:
                raise ValueError("unexpected log")
            if kind == "oracle" and len(topics) == 2 and topics[0] == TOPIC_ORACLE:
                value = int.from_bytes(topic_bytes(topics[1]), "big")
            elif kind == "answer" and len(topics) == 3 and topics[0] == TOPIC_ANSWER:
                value = int.from_bytes(topic_bytes(topics[1]), "big", signed=True)
            else:
                raise ValueError("unexpected topics")
            timestamp = int.from_bytes(data, "big")
            if timestamp > LAST_TIME:
                raise ValueError("a timestamp past year 9999")
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):
            raise PublisherError(f"price history: eth_getLogs for blocks {a}..{b} returned a malformed log") from None
        out.append(_Log(block, index, kind, value, timestamp))
    return out
