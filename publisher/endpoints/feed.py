"""/withdrawals/feed.xml: the withdrawal queue's news as an Atom feed (RFC 4287), for a feed reader
to follow instead of polling /withdrawals.

Entries, newest first, the latest ``MAX_ENTRIES``:

- each request's funding, claim, cancel and reclaim, from the receipts the snapshot holds (the
  queue's logs): dated at the block of the step, linking to the requester's file; a funding's
  words are those the feed first published it with (news as of its time);
- the queue's pauses (new requests, ggAVAX deposits, MinipoolManager) and parameter changes. The
  queue emits no event for a parameter change, and the snapshot holds only the values at its
  block, so a build compares this build's /withdrawals ``parameters`` and ``pauses`` with those of
  the last build's /withdrawals (``Context.previous``): a difference is an entry dated at this
  build's block, the first that saw it. Earlier such entries are carried from the last build's
  feed, since no snapshot holds them. A build without a last build (a fresh ``out``) sees no
  change, and starts the record with an entry for each pause in force;
- the depositor starting or stopping to look stale (/withdrawals ``depositor.stale``), found and
  carried the same way (a fresh feed starts with it when it looks stale), but dated when it
  happened where the logs tell: the wait's start plus the bound, or the call that ended it;
- the operator's announced dates (``Context.announcements``), each an entry dated at the block of
  the first build that published it (carried from the last feed like the changes), and once the
  withdrawal window's end has passed, an entry saying what the contracts still allow, dated at the
  first build past it. An entry newer ones pushed out of the feed stays out.

Ids are tag: URIs (RFC 4151) of the network and what the entry is about, and every time is a
block's, never the wall clock's: the file changes only when an entry does.
"""
from __future__ import annotations

import heapq
import time
import xml.etree.ElementTree as ET
from calendar import timegm
from collections.abc import Mapping
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from .. import jsonin
from ..compute.depositor import waited_since
from ..compute.queue import MIN_EXPIRATION_DELAY
from ..snapshot import Receipt
from ..utc import iso, when
from . import withdrawals as W
from .announcements import WINDOW_END, announcement_records
from .calendar import DOMAIN, amount
from .context import Context
from .depositor import depositor_inputs
from .registry import NOT_KEPT, Deferred, endpoint, keeps, kept
from .units import tokens

ATOM = "application/atom+xml"
NS = "http://www.w3.org/2005/Atom"
PATH = "/withdrawals/feed.xml"
MAX_ENTRIES = 100
TAG = f"tag:{DOMAIN},2026:"
AUTHOR = "GoGoPool (Hypha) staking data API"
# Kinds no snapshot holds: carried from the last build's feed.
CARRIED = ("parameter", "pause", "depositor", "announcement")
# /withdrawals parameters whose change is news (nextRequestId moves with every request;
# minExpirationDelay is the contract's constant; paused is pauses.queueRequests).
PARAMETERS = {
    "unstakeDelay": ("Unstake delay", "the time from filing a request to its claimable time, for new requests"),
    "maxExpirationDelay": ("Longest expiration delay", "the longest time after its claimable time a new request may "
                           "stay claimable"),
    "maxRequestsPerDeposit": ("Requests per funding call", "how many requests one call of the depositor serves at most"),
    "minOnBehalfShares": ("Smallest request on behalf of another", "the fewest ggAVAX a request filed for someone "
                          "else may take"),
}
PAUSES = {
    "queueRequests": ("New withdrawal requests", "the queue refuses new requests; claims, cancels and funding go on",
                      "the queue takes new requests again"),
    "ggavaxDeposits": ("ggAVAX deposits", "a funded request can now be neither cancelled nor reclaimed (both "
                       "deposit its AVAX back); a funded request that expires stays stuck until deposits reopen",
                       "a funded request can again be cancelled before its claimable time, and reclaimed once it "
                       "expires, stuck ones included"),
    "minipoolManager": ("MinipoolManager", "no minipool restakes: each hands its liquid stakers' AVAX back to the "
                        "vault at its end", "minipools may restake again at their ends"),
}
ANNOUNCED_AS = {"endOfOperations": "operations end", "withdrawalWindowEnd": "the withdrawal window closes"}


@dataclass(frozen=True)
class Entry:
    id: str
    kind: str  # the category term: funded, claimed, cancelled, reclaimed, parameter, pause, announcement
    updated: int  # a block's time, unix seconds
    title: str
    content: str
    link: str  # relative to the feed: a requester's file, or ../withdrawals


def feed_id(network: str) -> str:
    return f"{TAG}withdrawals/{network}/feed"


@endpoint(
    PATH, tag="Liquid staking", summary="The withdrawal queue's news, as an Atom feed", content_type=ATOM,
    schema={"type": "string", "contentMediaType": ATOM, "description": "an Atom 1.0 (RFC 4287) feed, UTF-8"},
    description=f"An Atom feed (RFC 4287) of the withdrawal queue, newest first, the latest {MAX_ENTRIES}: each "
                "request's funding, claim, cancel and reclaim (from the queue's logs, dated at their block), the "
                "queue's pauses and parameter changes, the depositor starting or stopping to look stale, the operator's "
                "announced dates, and the withdrawal window's "
                "close once it has passed (what the contracts still allow). The queue emits no "
                "event for a parameter change: each build compares /withdrawals' `parameters` and `pauses` with "
                "the last build's and dates a difference at its own block, the first that saw it (a new feed starts "
                "with the pauses in force at its first block). Entry ids are "
                "stable tag: URIs and every time is a block's (a depositor entry's, the time the logs say it happened), "
                "so the file changes only when an entry does.",
)
def queue_feed(ctx: Context):
    s = ctx.snap
    if s.withdraw_queue is None:
        return  # no queue at this block: no feed of it (a noQueue /withdrawals says why)
    carried = previous_entries(ctx.previous.get(PATH), s.network, (*CARRIED, "funded"))
    # An open request's expiration tells whether its funding came in time to be claimed. A funding
    # is news as of its time: an entry the last feed published keeps its words (the expiration it
    # named is not on record once the request closes).
    expirations = {r.id: r.expiration_time for r in s.withdraw_queue.requests}
    receipts = [_as_published(e, carried) for e in receipt_entries(s.network, s.queue_receipts, MAX_ENTRIES, expirations)]
    entries = [*receipts,
               *change_entries(ctx, carried),
               *announcement_entries(ctx, carried)]
    entries.sort(key=lambda e: (-e.updated, e.id))
    # The block's time is an input only when there is no entry to date the feed by.
    yield PATH, Deferred((s.network, tuple(entries[:MAX_ENTRIES]), None if entries else s.block.timestamp), make_feed)


def _as_published(entry: Entry, carried: dict[str, Entry]) -> Entry:
    """A funding's entry as the last feed published it, where it did; any other entry as made."""
    was = carried.get(entry.id)
    if entry.kind != "funded" or was is None:
        return entry
    # The very same funding (time, requester, amount), not another queue's request of that id.
    return was if (was.kind, was.updated, was.link, was.title) == (entry.kind, entry.updated, entry.link, entry.title) else entry


def make_feed(network: str, entries: tuple[Entry, ...], now: int | None) -> str:
    """The feed's XML: ``entries`` as they are, its ``updated`` the newest entry's (``now``, the
    block's time, only when there is none)."""
    out = ['<?xml version="1.0" encoding="utf-8"?>', f'<feed xmlns="{NS}">',
           f"  <id>{escape(feed_id(network))}</id>",
           f"  <title>{escape(f'ggAVAX withdrawal queue ({network})')}</title>",
           f"  <subtitle>{escape(_SUBTITLE)}</subtitle>",
           f"  <updated>{iso(max((e.updated for e in entries), default=now or 0))}</updated>",
           f"  <author><name>{escape(AUTHOR)}</name></author>",
           f'  <link rel="self" type="{ATOM}" href="feed.xml"/>',
           '  <link rel="alternate" type="application/json" href="../withdrawals"/>']
    for e in entries:
        out += ["  <entry>", f"    <id>{escape(e.id)}</id>", f"    <title>{escape(e.title)}</title>",
                f"    <updated>{iso(e.updated)}</updated>", f"    <category term={quoteattr(e.kind)}/>",
                f'    <link rel="alternate" type="application/json" href={quoteattr(e.link)}/>',
                f'    <content type="text">{escape(e.content)}</content>', "  </entry>"]
    out.append("</feed>")
    return "\n".join(out) + "\n"


_SUBTITLE = ("Fundings, claims, cancels and reclaims of ggAVAX withdrawal requests, the queue's pauses and "
             "parameter changes, the depositor looking stale or no longer, and the operator's announced dates: the "
             f"latest {MAX_ENTRIES}, newest first.")


def _short(address: str) -> str:
    return f"{address[:6]}…{address[-4:]}"


def receipt_entries(network: str, receipts: tuple[Receipt, ...], newest: int | None = None,
                    expirations: Mapping[int, int] | None = None) -> list[Entry]:
    """An entry for each funding and each closing (claim, cancel, reclaim) on record; with
    ``newest``, only the entries that sort first in the feed (tens of thousands of receipts, a
    hundred entries shown: only those are written out). ``expirations``: the open requests'
    expiration times, by id (a receipt does not carry it)."""
    expirations = expirations or {}
    if newest is not None and newest <= 0:
        return []
    cutoff = None
    if newest is not None:
        # The newest-th latest time of any step: no step older than it can be shown, so only the
        # steps at or after it are named and sorted (ties at the cutoff sort by id, below).
        times = [t for r in receipts for t in (r.funded.time if r.funded is not None else None,
                                               r.closed_at.time if r.closed is not None and r.closed_at is not None else None)
                 if t is not None]
        cutoff = heapq.nlargest(newest, times)[-1] if len(times) > newest else None
    steps = []  # (sort key as the feed sorts, receipt, what happened)
    for r in receipts:
        if cutoff is not None and not ((r.funded is not None and r.funded.time >= cutoff)
                                       or (r.closed_at is not None and r.closed_at.time >= cutoff)):
            continue
        base = f"{TAG}withdrawals/{network}/request/{r.id}/"
        if r.funded is not None:
            steps.append(((-r.funded.time, base + "funded"), r, "funded"))
        if r.closed is not None and r.closed_at is not None:
            steps.append(((-r.closed_at.time, base + r.closed), r, r.closed))
    chosen = steps if newest is None else heapq.nsmallest(newest, steps, key=lambda x: x[0])
    return [_receipt_entry(key[1], r, what, expirations.get(r.id)) for key, r, what in chosen]


def _receipt_entry(entry_id: str, r: Receipt, what: str, expires: int | None = None) -> Entry:
    link = r.requester.lower()
    filed = (f"Requester {r.requester}. Filed at block {r.requested.block} ({when(r.requested.time)}) for "
             f"{amount(tokens(r.shares))} ggAVAX, to be paid {amount(tokens(r.expected_assets))} AVAX, "
             f"its advertised claimable time {when(r.claimable_time)}.")
    if what == "funded":
        assert r.funded is not None
        avax = amount(tokens(r.allocated or 0))
        return Entry(entry_id, "funded", r.funded.time,
                     f"Request {r.id} funded: {avax} AVAX set aside for {_short(r.requester)}",
                     f"The depositor funded request {r.id} at block {r.funded.block} (transaction "
                     f"{r.funded.tx}): {avax} AVAX is set aside for its requester, {_claim_window(r, expires)} "
                     f"{filed}", link)
    at = r.closed_at
    assert at is not None
    title, text = _closing_words(r, f"at block {at.block} (transaction {at.tx})")
    return Entry(entry_id, what, at.time, title, f"{text} {filed}", link)


def _claim_window(r: Receipt, expires: int | None) -> str:
    """Whether its funding came in time to be claimed, as the end of a sentence. ``expires``: the
    request's expiration, known while it is open (no event names it); once closed, a claim says it
    came in time, and so does a funding within the shortest expiration delay after the claimable time."""
    assert r.funded is not None
    late = ("can no longer be claimed, only reclaimed, which deposits the AVAX back into ggAVAX for the requester "
            "and reverts while ggAVAX deposits are paused")
    if expires is not None:
        if r.funded.time < expires:
            return f"who can claim it until the request expires ({when(expires)})."
        return f"but too late to be claimed: the request had expired at {when(expires)}, so it {late}."
    if r.closed == "claimed" or r.funded.time < r.claimable_time + MIN_EXPIRATION_DELAY:
        return "who can claim it until the request expires."
    # Closed otherwise, and funded too long after its claimable time to tell from the receipt alone.
    return (f"who could claim it until the request expired, unless it had expired already when it was funded: no "
            f"event names its expiration, and a request funded after it {late}.")


def _closing_words(r: Receipt, where: str) -> tuple[str, str]:
    """The title and text of a request's claim, cancel or reclaim."""
    if r.closed == "claimed":
        return (f"Request {r.id} claimed: {amount(tokens(r.paid or 0))} AVAX paid to {_short(r.requester)}",
                f"Its requester claimed request {r.id} {where}: {amount(tokens(r.paid or 0))} AVAX paid.")
    if r.closed == "cancelled":
        burnt = r.shares_burnt or 0
        return (f"Request {r.id} cancelled: {amount(tokens(r.shares_returned or 0))} ggAVAX back to {_short(r.requester)}",
                f"Its requester cancelled request {r.id} {where}: {amount(tokens(r.shares_returned or 0))} "
                "ggAVAX returned" + (f", {amount(tokens(burnt))} ggAVAX burnt (the rate rose while it waited)"
                                     if burnt else "") + ".")
    return (f"Request {r.id} reclaimed after its expiration: {amount(tokens(r.shares_returned or 0))} "
            f"ggAVAX back to {_short(r.requester)}",
            f"Request {r.id} expired and was reclaimed {where}: {amount(tokens(r.shares_returned or 0))} "
            "ggAVAX returned to its requester" + (" (its funded AVAX deposited back into ggAVAX)"
                                                  if r.funded is not None else "") + ".")


def _queue_state(ctx: Context) -> dict | None:
    """This build's /withdrawals ``address``, ``parameters`` and ``pauses`` (None without a queue)."""
    s, q = ctx.snap, ctx.snap.withdraw_queue
    if q is None:
        return None
    shown, stale, bound = depositor_inputs(ctx)
    since = waited_since(s) if stale is not None else None
    return {"address": q.address, "parameters": W.parameters_record(q), "pauses": W.pauses_record(W.queue_pauses(s)),
            # whether the depositor looks stale; None: its calls are unknown (the queue's logs not read)
            "stale": None if shown is None else stale is not None, "staleReason": stale,
            "staleFrom": None if since is None else since + bound,  # when the label came to apply
            "lastCall": None if shown is None else (shown.last_call_block, shown.last_call_time)}


# The members of /withdrawals the feed reads back: what ``_state`` makes the last build's state of.
_READ_BACK = ("address", "announcements", "depositor", "meta", "parameters", "pauses", "status")


def previous_state(ctx: Context) -> dict | None:
    """The last build's /withdrawals ``address``, ``parameters`` and ``pauses``, when it is of this
    network and has a queue; None otherwise (nothing to compare with). Read back from the live file
    unless this process wrote those very bytes (see ``registry.keeps``): a watch would otherwise
    parse megabytes at every block."""
    return ctx.cached(_previous_state)


def _previous_state(ctx: Context) -> dict | None:
    s, files = ctx.snap, ctx.previous
    record = getattr(files, "record", None)
    entry = record.files.get(W.QUEUE_PATH) if record is not None else None
    members = kept(W.QUEUE_PATH, entry.sha256) if entry is not None else NOT_KEPT
    if members is NOT_KEPT:
        data = files.get(W.QUEUE_PATH)
        if data is None:
            return None
        try:
            members = _members(jsonin.loads(data))
        except ValueError:
            return None
    return _state(members if isinstance(members, dict) else None, s.network, s.chain_id)


def _members(body) -> dict | None:
    """The members of a /withdrawals body the feed reads back, as its file's JSON gives them."""
    return {k: body[k] for k in _READ_BACK if k in body} if isinstance(body, dict) else None


keeps(W.QUEUE_PATH, _READ_BACK)


def _state(body: dict | None, network: str, chain_id: int) -> dict | None:
    if body is None:
        return None
    try:
        meta = body["meta"]
        if body["status"] != "ok" or meta["network"] != network or meta["chainId"] != chain_id:
            return None
        # The announced dates it listed, (key, date) -> passed: each was an entry of that build's feed,
        # and a passed window's end a "closed" one too.
        listed = {(a["key"], a["date"]): a.get("passed") is True for a in body.get("announcements") or ()
                  if type(a.get("key")) is str and type(a.get("date")) is str}
        depositor = body.get("depositor") or {}
        state = {"address": body["address"], "parameters": body["parameters"], "pauses": body["pauses"],
                 "announced": set(listed), "passed": {k for k, passed in listed.items() if passed},
                 # whether the depositor looked stale (None: its calls were unknown, or not published)
                 "stale": depositor.get("stale") if depositor.get("available") is True else None,
                 "lastCallTime": depositor.get("lastCallTime") if type(depositor.get("lastCallTime")) is int else None}
    except (KeyError, TypeError, AttributeError):
        return None
    if not isinstance(state["parameters"], dict) or not isinstance(state["pauses"], dict):
        return None
    return state


def change_entries(ctx: Context, carried: dict[str, Entry]) -> list[Entry]:
    """The pause, parameter and depositor entries of earlier builds, and one for each value that
    differs from the last build's, dated at this block."""
    s = ctx.snap
    out = {i: e for i, e in carried.items() if e.kind in ("parameter", "pause", "depositor")}
    now, before = ctx.cached(_queue_state), previous_state(ctx)
    if now is None:
        return list(out.values())
    base, block, at = f"{TAG}withdrawals/{s.network}/", s.block.number, s.block.timestamp
    if before is None or now["address"] != before["address"]:
        return _first_entries(out, now, base, block, at)
    seen = f"First seen by this API at block {block} ({when(at)}); the last build"
    for name, (label, meaning) in PARAMETERS.items():
        if name not in before["parameters"] or name not in now["parameters"]:
            continue
        old, new = before["parameters"][name], now["parameters"][name]
        if old != new:
            e = Entry(f"{base}parameter/{name}/{block}", "parameter", at,
                      f"{label} changed from {_value(name, old)} to {_value(name, new)}",
                      f"The withdrawal queue's {name} ({meaning}) is now {_value(name, new)}. {seen} had "
                      f"{_value(name, old)}.", "../withdrawals")
            out[e.id] = e
    for name, (label, paused, resumed) in PAUSES.items():
        old, new = before["pauses"].get(name), now["pauses"].get(name)
        if old is None or new is None or old == new:
            continue
        state = "paused" if new else "resumed"
        e = Entry(f"{base}pause/{name}/{block}", "pause", at, f"{label} {state}",
                  f"{label} {state}: {paused if new else resumed}. {seen} saw "
                  f"{'them running' if new else 'them paused'}.", "../withdrawals")
        out[e.id] = e
    # What the feed last said of the depositor, else what the last build published.
    told = _newest(out, f"{base}depositor/")
    was = before["stale"] if told is None else told.title == STALE_TITLES[True]
    if was is not None and now["stale"] is not None and was != now["stale"]:
        e = _depositor_entry(base, block, at, now, f"{seen} did not say so", told, before["lastCallTime"])
        out[e.id] = e
    return list(out.values())


def _newest(entries: dict[str, Entry], prefix: str) -> Entry | None:
    """The newest of these entries whose id (``prefix`` then the block that saw it) starts with
    ``prefix``: by time, then by that block."""
    def order(e: Entry) -> tuple[int, int]:
        block = e.id.rsplit("/", 1)[-1]
        return e.updated, int(block) if block.isdigit() else -1
    return max((e for i, e in entries.items() if i.startswith(prefix)), default=None, key=order)


def _first_entries(out: dict[str, Entry], now: dict, base: str, block: int, at: int) -> list[Entry]:
    """Nothing to compare with (a fresh feed, another queue, or a last build that published none):
    each pause in force, and the depositor looking stale, that the feed's newest entry about it does
    not already tell is told, which a holder must know (a pause dated at this block, having no
    event to date it by)."""
    for name, (label, paused, _) in PAUSES.items():
        told = _newest(out, f"{base}pause/{name}/")
        if now["pauses"].get(name) and (told is None or not told.title.endswith(" paused")):
            e = Entry(f"{base}pause/{name}/{block}", "pause", at, f"{label} paused",
                      f"{label} paused: {paused}. Seen in force at block {block} ({when(at)}) with no earlier "
                      "build to compare with: when it began is not known here.", "../withdrawals")
            out[e.id] = e
    told = _newest(out, f"{base}depositor/")
    if now["stale"] and (told is None or told.title != STALE_TITLES[True]):
        e = _depositor_entry(base, block, at, now, "Seen at this block with no earlier build to compare with", told)
        out[e.id] = e
    return list(out.values())


# The depositor's entries' titles, by whether it looks stale.
STALE_TITLES = {True: "The depositor looks stale", False: "The depositor no longer looks stale"}


def _depositor_entry(base: str, block: int, at: int, now: dict, seen: str, told: Entry | None,
                     called_before: int | None = None) -> Entry:
    """The depositor starting or stopping to look stale (no event says either), seen at this block
    and dated when it happened where the logs tell: the label applies from the wait's start plus
    the bound, and stops with a call since the last build's (``called_before``: its last call on
    record then) or the feed's last entry on it; else at this block, as a line that emptied by
    cancels leaves no time of its own. Never before the feed's last word on it."""
    reason, last = now["staleReason"], now["lastCall"]
    floor = told.updated if told is not None else 0
    if reason is not None:
        at = max(min(at, now["staleFrom"] or at), floor)
    elif last is not None and last[1] is not None and max(floor, called_before or 0) < last[1] <= at \
            and (told is not None or called_before is not None):
        at = last[1]
    if reason is not None:
        text = (f"The depositor looks stale: {reason}. Nothing in line is funded until it calls depositFromStaking; "
                "a request whose expiration comes first can be cancelled, or reclaimed once it expires. ")
    else:
        call = (f"its last call on record was at block {last[0]} ({when(last[1])})" if last and last[1] is not None
                else "no call of it is on record")
        text = f"The depositor no longer looks stale: it called again, or no request waits in line for it ({call}). "
    return Entry(f"{base}depositor/{block}", "depositor", at, STALE_TITLES[reason is not None], text + seen + ".",
                 "../withdrawals")


def _value(name: str, value) -> str:
    if value is None:
        return "none (not readable on this queue)"
    if name in ("unstakeDelay", "maxExpirationDelay"):
        return _duration(int(value))
    if name == "minOnBehalfShares":
        return f"{amount(value)} ggAVAX"
    return str(value)


def _duration(seconds: int) -> str:
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} seconds"


def announcement_entries(ctx: Context, carried: dict[str, Entry]) -> list[Entry]:
    """One entry per announced date, dated at the block of the first build that published it. One the
    last build published whose feed no longer carries it was pushed out by newer entries: it is not
    news again (dated now, it would come back at the top every time)."""
    s = ctx.snap
    before = previous_state(ctx)
    fed = before is not None and ctx.previous.get(PATH) is not None  # both from the last build
    shown, passed = (before["announced"], before["passed"]) if before is not None and fed else (set(), set())
    now = s.block.timestamp
    out = []

    def add(entry_id: str, seen: bool, title: str, text: str) -> None:
        was = carried.get(entry_id)
        if was is None and seen:
            return
        out.append(Entry(entry_id, "announcement", was.updated if was is not None else now, title, text, "../withdrawals"))

    for a in ctx.announcements:
        base = f"{TAG}withdrawals/{s.network}/announcement/{a.key}/{a.date}"
        what = ANNOUNCED_AS.get(a.key, a.key)
        add(base, (a.key, a.date) in shown, f"Announced: {what} {a.date}",
            f"{a.meaning} ({when(a.time)}.) Announced by the protocol's operator; no contract holds this date. "
            f"Source: {a.source}")
        if a.key == WINDOW_END and now >= a.time:
            # The window's close is news of its own, dated at the first build past it: what still works.
            window = W.window_record(announcement_records([a], now))
            add(base + "/closed", (a.key, a.date) in passed, f"Closed: the withdrawal window, {a.date}", window["note"])
    return out


def previous_entries(data: bytes | None, network: str, kinds: tuple[str, ...] = CARRIED) -> dict[str, Entry]:
    """The entries of these kinds in the last build's feed (by default those no snapshot holds), by
    id; empty when there is none, it is another network's, or it does not read as this module
    writes it."""
    if data is None:
        return {}
    try:
        root = ET.fromstring(data)
        if root.tag != f"{{{NS}}}feed" or root.findtext(f"{{{NS}}}id") != feed_id(network):
            return {}
        out = {}
        for e in root.iter(f"{{{NS}}}entry"):
            category, link = e.find(f"{{{NS}}}category"), e.find(f"{{{NS}}}link")
            kind = category.get("term") if category is not None else None
            if kind not in kinds:
                continue
            entry = Entry(e.findtext(f"{{{NS}}}id") or "", kind, parse_iso(e.findtext(f"{{{NS}}}updated") or ""),
                          e.findtext(f"{{{NS}}}title") or "", e.findtext(f"{{{NS}}}content") or "",
                          link.get("href", "") if link is not None else "")
            if entry.id:
                out[entry.id] = entry
        return out
    except (ET.ParseError, ValueError):
        return {}


def parse_iso(text: str) -> int:
    return timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


# ---- publisher check ----------------------------------------------------------------------------


def problems(data: bytes) -> list[str]:
    """Why ``data`` is not an Atom feed as this module writes them (XML; a feed with its id, title
    and updated; each entry with a unique id, a title and an RFC 3339 updated); empty when it is one."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        return [f"feed: not XML ({exc})"]
    if root.tag != f"{{{NS}}}feed":
        return [f"feed: the root is {root.tag}, not an Atom feed"]
    out = [f"feed: no {name}" for name in ("id", "title", "updated") if not root.findtext(f"{{{NS}}}{name}")]
    ids: set[str] = set()
    for e in root.iter(f"{{{NS}}}entry"):
        entry_id = e.findtext(f"{{{NS}}}id") or ""
        if not entry_id or not e.findtext(f"{{{NS}}}title") or entry_id in ids:
            out.append(f"feed: an entry without an id or a title, or with a repeated id ({entry_id[:80]!r})")
        ids.add(entry_id)
        try:
            parse_iso(e.findtext(f"{{{NS}}}updated") or "")
        except ValueError:
            out.append(f"feed: entry {entry_id[:80]!r}: updated is not an RFC 3339 UTC time")
    return out[:3]
