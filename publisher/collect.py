"""Stage one: sources -> Snapshot. Reads the chain at one block through the profile's RPC URLs
(the command layer has resolved them: given, configured, or a devnet it started), adds the
off-chain sources, and prints nothing itself."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from functools import partial

from . import snapshot
from .chain.reader import DAY, Reader, Reorged, find_block_at, verify_canonical
from .chain.rpc import Beside, Counters, RpcClient
from .compute.prices import stale_oracle
from .compute.validation import unrecorded_ends
from .config import Profile
from .deadline import Background
from .errors import PublisherError
from .progress import Progress
from .snapshot import Minipool, Snapshot
from .sources import clients, history, history_file, prices, queuelog, shareprice, validators
from .sources.http import HttpCounters


@dataclass
class Collected:
    snapshot: Snapshot
    counters: Counters
    seconds: float
    http: HttpCounters = field(default_factory=HttpCounters)  # requests to third-party APIs
    replaced: Reorged | None = None  # the reorg that made the run read the new head instead


def collect(profile: Profile, block: int | None = None, progress: Progress | None = None, *,
            history_prior: history_file.PriorHistory | None = None,
            queue_prior: queuelog.PriorActivity | None = None, known: snapshot.Known | None = None) -> Collected:
    """The snapshot at ``block``: chain state, checked USD prices, validator records, price history,
    the withdraw queue's activity from its logs.

    ``history_prior`` (e.g. ``history_file.load_published(out/prices/history.json)``) lets the history
    read only the blocks after the previous run; ``queue_prior`` (``queuelog.load_published(
    out/withdrawals.json)``: its activity, and the receipts of the requester files beside it) does
    the same for the queue's logs. ``known``: the records of this process's last read
    (``snapshot.Known``), those read again unchanged taken as they are.

    Every chain read addresses the pinned block by hash and the run ends by checking that the
    block is still canonical. A reorg of the latest block is retried once at the new head (and
    ``Collected.replaced`` says so); a second reorg, or one under an explicit ``block``, ends the run.
    """
    client = RpcClient(list(profile.rpc_urls))
    http = HttpCounters()
    t0 = time.monotonic()
    try:
        return _collect(client, http, t0, profile, block, progress, history_prior, queue_prior, known)
    except Reorged as exc:
        if block is not None:
            raise
        replaced = exc
    # Once more at the new head; a second reorg ends the run.
    return dataclasses.replace(_collect(client, http, t0, profile, block, progress, history_prior, queue_prior, known),
                               replaced=replaced)


def _collect(client: RpcClient, http: HttpCounters, t0: float, profile: Profile, block: int | None,
             progress: Progress | None, history_prior: history_file.PriorHistory | None,
             queue_prior: queuelog.PriorActivity | None = None, known: snapshot.Known | None = None) -> Collected:
    early = _EarlyValidators(clients.glacier(profile, http), clients.pchain(profile, http),
                             guess=tuple(known.last.get(Minipool, {}).values()) if known is not None else ())
    # The price API's quote is the chain's second opinion: asked for while the chain is read.
    api = clients.price_api(profile, http) if profile.avax_usd_feed else None
    quote = Background(partial(prices.fetch_usd, api), "price-quote", api.label) if api is not None else None
    snap = Reader(client, profile, progress, on_minipools=early.start, known=known).read(block)
    # The chain's own invariants first: nothing may derive from values that break them (a zero
    # oracle price would otherwise reach the price cross-check's division).
    snapshot.check(snap)
    warnings = list(snap.warnings)

    price_check = None
    stale = stale_oracle(snap, profile.oracle_max_age)
    if stale:
        warnings.append(f"GGP price is stale: {stale} (published with stale: true)")
    if snap.feed is None:
        warnings.append("no AVAX/USD feed configured: USD prices and price history unavailable")
    else:
        prices.validate_feed(snap.feed, snap.block, profile.feed_max_age)
        if api is not None and quote is not None:
            bounds = {"avax": profile.price_divergence_pct, "ggp": profile.ggp_divergence_pct}
            price_check = prices.cross_check(api, snap, bounds, warnings, ggp_stale=stale is not None, quote=quote.result)

    vals = early.result(warnings)
    listed = {v.node_id: v for v in vals.validators}
    ended = unrecorded_ends(snap.minipools, snap.settings.minipool_cycle_duration, snap.block.timestamp, listed)
    missing = validators.report_missing(vals, ended, warnings)

    # The history and the queue's logs are separate scans: the queue's goes beside, on a connection
    # of its own (a node far away then costs the run its slower scan, not both), its warnings
    # after the history's as in a scan after it, and the progress shown is the history's.
    queue_warnings: list[str] = []
    with Beside(partial(_queue_logs, snap=snap, profile=profile, prior=queue_prior, warnings=queue_warnings, progress=None),
                client, name="queue-logs") as logs:
        points = _history(client, snap, profile, history_prior, warnings, progress)
        activity, receipts = logs.join()
    warnings += queue_warnings
    verify_canonical(client, snap.block)  # after the last chain read: the values are this block's

    snap = dataclasses.replace(
        snap, validators=vals.validators, missing_validators=missing, validator_source=vals.source,
        price_history=points, price_check=price_check, queue_activity=activity, queue_receipts=receipts,
        warnings=tuple(warnings),
    )
    return Collected(snap, client.counters, time.monotonic() - t0, http)


class _EarlyValidators:
    """The validator records, fetched while the chain is read: from its start for the nodes active
    in this process's last read (``guess``: a watch's), else, or when the nodes active now are
    others, from the moment the read has the minipools, while the node still answers the rest.
    Their warnings and their failure are taken where a sequential run meets them, after the
    chain's and the prices' checks, so what a run reports does not change."""

    def __init__(self, glacier: validators.Glacier | None, pchain: validators.PChain | None,
                 guess: tuple[Minipool, ...] = ()):
        self.glacier, self.pchain = glacier, pchain
        self.fetch: tuple[list[str], Background[validators.ValidatorData], list[str]] | None = None
        if guess:
            self._fetch(validators.active_node_ids(guess))

    def _fetch(self, node_ids: list[str]) -> None:
        warnings: list[str] = []
        where = " or ".join(src.http.label for src in (self.glacier, self.pchain) if src is not None) or "validator API"
        self.fetch = (node_ids, Background(partial(validators.fetch, node_ids, self.glacier, self.pchain, warnings),
                                           "validators", where), warnings)

    def start(self, minipools: tuple[Minipool, ...]) -> None:
        node_ids = validators.active_node_ids(minipools)
        if self.fetch is None or self.fetch[0] != node_ids:  # a guessed fetch for other nodes is left to end unread
            self._fetch(node_ids)

    def result(self, warnings: list[str]) -> validators.ValidatorData:
        assert self.fetch is not None  # the chain read has started it
        _, fetch, mine = self.fetch
        try:
            return fetch.result()
        finally:
            warnings += mine


def _history(client: RpcClient, snap: Snapshot, profile: Profile, prior: history_file.PriorHistory | None,
             warnings: list[str], progress: Progress | None):
    """Daily prices and each day's ggAVAX share price, resumed from ``prior`` when it is this
    chain's. A fresh history reaches back ``history_days`` at most, and a failure keeps what the
    previous run had: the history is secondary, so it never stops the other endpoints from
    publishing."""
    start = profile.history_from_block
    span = profile.history_log_span
    try:
        # Inside the guard: a node that cannot answer whether the prior is this chain's leaves the
        # history as it was, like any other failure of the history's reads.
        prior = history.verified(client, prior, snap, warnings)
        if prior is None and snap.feed is not None:
            floor = find_block_at(client, snap.block.timestamp - profile.history_days * DAY, snap.block, start)
            start = max(start, floor.number if floor else 0)
        if progress:
            first = max(start, prior.cursor + 1 if prior else 0)
            progress.start("price history", max(0, snap.block.number - first) // max(1, span) + 1)
        got = history.build_for(client, snap, start=start, span=span, prior=prior, warnings=warnings,
                                on_range=progress.advance if progress else None)
    except PublisherError as exc:
        if prior is None:  # nothing to keep (a live history then refuses the shrink when published)
            warnings.append(f"price history not built ({exc}): publishing none")
            return ()
        warnings.append(f"price history not updated ({exc}): publishing the previous run's points")
        return prior.points
    finally:
        if progress:
            progress.finish()
    if progress:
        progress.start("ggAVAX share price", max(0, snap.block.number - start) // max(1, span) + 1)
    try:
        # A rebuilt history (the prior unusable) has every share price to compute again.
        return shareprice.fill(client, snap, got.points, prior if got.resumed else None, floor=start, span=span,
                               warnings=warnings, on_range=progress.advance if progress else None).points
    finally:
        if progress:
            progress.finish()


def _queue_logs(client: RpcClient, snap: Snapshot, profile: Profile, prior: queuelog.PriorActivity | None,
                warnings: list[str], progress: Progress | None) -> tuple[snapshot.QueueActivity | None, tuple[snapshot.Receipt, ...]]:
    """The depositor's calls, the line's front and every request's receipt from the queue's logs
    (None and none without a queue), resumed from ``prior`` when it is this queue's. Secondary like
    the history: a failure is a warning, the activity None and the receipts the prior's, never the
    end of the run."""
    if snap.withdraw_queue is None:
        return None, ()
    try:
        return queuelog.logs_for(client, snap, start=profile.queue_from_block, span=profile.history_log_span,
                                 prior=prior, warnings=warnings,
                                 on_start=(lambda n: progress.start("withdraw queue logs", n)) if progress else None,
                                 on_range=progress.advance if progress else None)
    finally:
        if progress:
            progress.finish()
