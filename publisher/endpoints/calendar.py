"""/withdrawals/{address}.ics: one requester's withdrawal dates as an iCalendar file (RFC 5545),
beside its JSON, for a calendar client to subscribe to instead of polling.

The calendar is made from the requester's /withdrawals/{address} body, the same inputs and the same
maker, so its times are that file's times by construction. For each open request: its estimated
funding time (when the schedule dates it), its claimable time, and its expiration time with a
display alarm one day before (while that time is ahead: an alarm never ships due; for a request
already expired in line, the alarm is on its estimated funding while ggAVAX deposits are paused,
as that funding would leave it stuck); and the
announced end of the withdrawal window, with alarms a week and a day before (the same way, and only
for a requester with something to do by then: a claim to make or to come, an expired request to
cancel or reclaim; one whose requests are stuck or closed can do nothing). A requester whose requests are all closed
keeps its calendar with the window's end only: a client that subscribed then drops the alarms of
the requests that closed, which a missing file (a failed refresh) would leave in place. Only a
requester with no open request on a network that announces no window has no calendar (RFC 5545
wants at least one component), as an address that never filed a request has no file at all.

Nothing in the file moves with the block's time alone but an alarm's time coming (the alarm then
goes, a change once per alarm) and, through the advice, the depositor starting or stopping to look
stale: each event's DTSTAMP is the block time of
the last step on record of what it is about (a request's filing, or its funding; for the window's
end, the requester's latest step), so a file changes only when its content does, like the JSON.
UIDs are the request id, the kind of date and the network, so a client updates an event in place
when its time moves.
"""
from __future__ import annotations

import time

from ..compute import queue as Q
from ..compute.queue import RequestStatus as RS
from ..utc import when
from . import svg
from . import withdrawals as W
from .announcements import WINDOW_END
from .context import Context
from .registry import Deferred, endpoint

ICS = "text/calendar; charset=utf-8"
CALENDAR_PATH = "/withdrawals/{address}.ics"
# The name UIDs and the feed's tag: URIs are minted under (the protocol's domain).
DOMAIN = "gogopool.com"
PRODID = "-//GoGoPool (Hypha) staking data API//withdrawal reminders//EN"
REFRESH = "PT1H"  # how often a subscribed client should fetch the file again (RFC 7986)
LINE_OCTETS = 75  # RFC 5545 3.1: content lines are folded at 75 octets, CRLF then one space
ALARM, ALARM_SECONDS = "-P1D", 86_400  # the expiration's alarm: a day before
# The window's end: a week before, and a day before the end of its last day (that day).
WINDOW_ALARMS = (("-P7D", "in 7 days", 7 * 86_400), ("-P1D", "in 24 hours", 86_400))
# Request statuses past their expiration: no alarm (it could only fire late).
EXPIRED = {RS.PENDING_EXPIRED, RS.EXPIRED_FUNDED, RS.STUCK}


def uid(network: str, kind: str, request: int | None = None, requester: str | None = None) -> str:
    """A stable UID: the request id (or, for the window's end, the requester) and the kind of date
    and the network, e.g. ``withdrawal-42-expiration@mainnet.gogopool.com``."""
    who = f"withdrawal-{request}" if request is not None else f"withdrawals-{(requester or '').lower()}"
    return f"{who}-{kind}@{network}.{DOMAIN}"


@endpoint(
    CALENDAR_PATH, tag="Liquid staking", summary="One requester's withdrawal dates, as a calendar",
    content_type=ICS, params=(W.REQUESTER_PARAM,),
    schema={"type": "string", "contentMediaType": "text/calendar",
            "description": "an iCalendar (RFC 5545) VCALENDAR of VEVENTs, UTF-8, CRLF line endings"},
    description="The dates of /withdrawals/{address} as an iCalendar file (RFC 5545) to subscribe to: for each open "
                "request its estimated funding time (when the schedule dates it), its claimable time and its "
                "expiration time, with an alarm a day before the expiration (for one expired in line while ggAVAX "
                "deposits are paused, a day before the estimated funding, which would leave it stuck); and the announced end of the "
                "withdrawal window, with alarms a week and a day before for a requester with something to do by then "
                "(a claim, or an expired request to cancel or reclaim; an alarm whose time has come is left out). Each event's description says what "
                "the requester can do (the request's `advice`). Where a window's end is announced, a requester whose requests "
                "are all closed keeps a calendar with that end only, so a subscribed client drops the closed "
                "requests' alarms; without one, such a requester has no calendar. UIDs are stable (request id, kind of date, network) and no run timestamp is in the "
                "file: it changes only when its dates or words do.",
)
def requester_calendar(ctx: Context):
    s = ctx.snap
    now = s.block.timestamp
    # Whether the window has passed, and which of its alarms are still ahead, are inputs: an alarm
    # goes once its time has come (it could only fire late).
    window = next(((a.date, a.time, a.meaning, a.source, now >= a.time,
                    tuple(trigger for trigger, _, before in WINDOW_ALARMS if now < a.time - before))
                   for a in ctx.announcements if a.key == WINDOW_END), None)
    queue = s.withdraw_queue.address if s.withdraw_queue is not None else None
    for path, value in ctx.own(W.requester_files(ctx)):
        if type(value) is not Deferred or value.make is not W.requester_body:
            raise TypeError(f"{path}: the calendar is made from requester_body's inputs, not from {value!r}")
        items = value.inputs[1]
        if window is None and not items:
            continue  # nothing to put in it: no open request and no window announced
        late = tuple(r.id for r, place, _ in items if now >= _alarmed(r, place) - ALARM_SECONDS)
        yield path + ".ics", Deferred((s.network, window, value.inputs, late, queue), make_calendar)


def _alarmed(r, place) -> int:
    """The time a request's alarm warns of: its expiration, or, once that has passed while it waits
    in line, its estimated funding (funded then, it comes too late; 0: none dated)."""
    if place.status == RS.PENDING_EXPIRED:
        return place.funding_time or 0
    return r.expiration_time


def make_calendar(network: str, window: tuple | None, inputs: tuple, late: tuple[int, ...] = (),
                  queue: str | None = None) -> str:
    """The requester's calendar, from the inputs of its JSON body (``requester_body``); ``late``:
    the requests whose alarm's time has come (``_alarmed``); ``queue``: the queue's address."""
    paused = any(place.deposits_paused for _, place, _ in inputs[1])
    return calendar_text(network, window, W.requester_body(*inputs), deposits_paused=paused, late=frozenset(late),
                         queue=queue)


def _after_expiry(status: str, deposits_paused: bool, blocked: str | None = None) -> str:
    """What the contracts allow a request once it has expired: a funded one can no longer be
    claimed (``blocked``: why reclaiming it reverts, its record's redepositBlocked); a pending one
    stays in line, where it can still be cancelled, reclaimed or funded."""
    if status in (RS.PENDING, RS.PENDING_EXPIRED):
        funded_then = ("stuck while ggAVAX deposits are paused" if deposits_paused
                       else "only reclaimable, which deposits its AVAX back into ggAVAX for the requester")
        return ("it stays in line: the requester can still cancel it and anyone can reclaim it (its ggAVAX goes back "
                f"to the requester), but a funding from now on comes too late to be claimed: the request is then {funded_then}")
    if blocked and blocked != Q.DEPOSITS_PAUSED:
        return f"from now on it can no longer be claimed, nor reclaimed: {blocked.split(':')[0]} (it is stuck)"
    if deposits_paused:
        return ("from now on it can no longer be claimed, and while ggAVAX deposits are paused it cannot be reclaimed "
                "either (it is stuck until they reopen)")
    return ("from now on it can no longer be claimed, only reclaimed: anyone may reclaim it, which deposits its AVAX "
            "back into ggAVAX for the requester")


def calendar_text(network: str, window: tuple | None, body: dict, *, deposits_paused: bool = False,
                  late: frozenset[int] = frozenset(), queue: str | None = None) -> str:
    """A requester's VCALENDAR from its /withdrawals/{address} body and the announced window's end
    (date, time, meaning, source, passed, the triggers of its alarms still ahead) or None.
    ``deposits_paused``: ggAVAX takes no deposits, so a funded request can be neither cancelled nor
    reclaimed (an expired one is stuck). ``late``: the ids whose alarm's time has come (it is left
    out): the expiration's, or the estimated funding's of one expired in line. ``queue``: the queue's address, named with the calls a request allows, for a
    holder acting without the site."""
    who = body["requester"]
    steps = {r["id"]: r for r in body.get("receipts", [])}
    events: list[tuple[int, str, list[str]]] = []
    latest = 0
    for r in body["requests"]:
        stamp = _last_step(r, steps.get(r["id"]))
        latest = max(latest, stamp)
        rid, avax = r["id"], amount(r["expectedAvax"])
        todo = f"What you can do now: {r['advice']}"
        allowed = W.calls(r)
        if queue is not None and allowed:
            todo += (f" Without this site: {W.listed(allowed)} on the WithdrawQueue contract {queue} "
                     "(Avalanche C-Chain).")
        nobody = Q.unowned(r["requester"])  # filed for the zero address: no one can act on it, no alarm
        if r["estimatedFundingTime"] is not None:
            # Expired in line, a request funded while ggAVAX deposits are paused is stuck: warned a day before.
            warn = None if r["status"] != RS.PENDING_EXPIRED or not deposits_paused or rid in late or nobody else (
                ALARM, f"ggAVAX withdrawal request {rid} ({avax} AVAX) has expired in line and is expected to be funded "
                       f"at {when(r['estimatedFundingTime'])}: funded, it would be stuck while ggAVAX deposits are "
                       "paused. Cancel or reclaim it before then.")
            events.append(_event(uid(network, "funding", rid), stamp, r["estimatedFundingTime"],
                                 f"ggAVAX withdrawal #{rid}: estimated funding ({avax} AVAX)",
                                 f"Request {rid} of {who} ({avax} AVAX) is expected to be funded about now: an "
                                 "estimate of the queue's funding schedule, which moves when the line or the "
                                 f"minipools' returns do. {todo}", *([warn] if warn else [])))
        # Past its expiration, a request funded or not can no longer be claimed: no promise of a payout.
        # The contract pays a claim as soon as a request is funded, before this time too.
        until = f"until the request expires ({when(r['expirationTime'])})"
        payout = "" if r["status"] in EXPIRED or nobody else (
            (f": it is funded already, so its AVAX can be claimed now, {until}" if r["fulfilled"] else
             f": the contract pays a claim as soon as the request is funded, even before this time, {until}")
            + ("" if deposits_paused or r.get("redepositBlocked") else "; until this time a funded request can also be cancelled for ggAVAX"))
        events.append(_event(uid(network, "claimable", rid), stamp, r["claimableTime"],
                             f"ggAVAX withdrawal #{rid}: claimable time ({avax} AVAX)",
                             f"Request {rid} of {who} ({avax} AVAX) reaches its claimable time, the earliest "
                             f"advertised payout{payout}. {todo}"))
        alarm = None if r["status"] in EXPIRED or rid in late or nobody else (
            ALARM, f"ggAVAX withdrawal request {rid} ({avax} AVAX) expires at {when(r['expirationTime'])}: "
                   + ("claim it before then." if r["fulfilled"] else
                      "claim it before then if it is funded by then; if it is still in line, cancel or reclaim it "
                      "then, as a funding after it comes too late to be claimed"
                      + (" and leaves the request stuck while ggAVAX deposits are paused." if deposits_paused else ".")))
        events.append(_event(uid(network, "expiration", rid), stamp, r["expirationTime"],
                             f"ggAVAX withdrawal #{rid} expires ({avax} AVAX)",
                             f"Request {rid} of {who} ({avax} AVAX) expires: {'only a reclaim can close it, as no one acts for the zero address' if nobody else _after_expiry(r['status'], deposits_paused, r.get('redepositBlocked'))}. "
                             f"{todo}", *([alarm] if alarm else [])))
    for rc in body.get("receipts", []):
        latest = max([latest, *(step["time"] for step in _steps(rc))])
    if window is not None:
        date, at, meaning, source, passed, ahead = window
        # Alarms for a requester with something to do then, while their time is ahead: what each
        # request allows at the alarm's time (one that has expired by then allows what an expired one does).
        alarms = [] if passed else [
            (trigger, f"The announced ggAVAX withdrawal window closes {words} ({when(at)}): before then, "
                      f"{W.listed(asks)}.") for trigger, words, before in WINDOW_ALARMS if trigger in ahead
            for asks in [W.window_asks(body["requests"], at - before, deposits_paused)] if asks]
        # The event sits at the close itself, the moment the announced day begins.
        events.append(_event(uid(network, "window-end", requester=who), latest, at,
                             f"ggAVAX withdrawal window {'closed' if passed else 'closes'} (announced)",
                             f"Announced date {date} (UTC): {meaning} The window "
                             f"{'was' if passed else 'is'} counted as open until {when(at)}. It is not a rule "
                             "of the contracts: after it, a funded request can still be claimed until its own "
                             "expiration while the queue holds its AVAX"
                             + (f", with the queue's calls ({', '.join(fn for _, fn in W.CALLS)} and the request's "
                                f"id) on its contract {queue} (Avalanche C-Chain)" if queue else "")
                             + f". Source: {source}",
                             *alarms))
    if not events:
        raise ValueError(f"no event for {who}: a calendar holds at least one")
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", f"PRODID:{PRODID}", "CALSCALE:GREGORIAN",
             f"NAME:{_text(f'ggAVAX withdrawals of {who} ({network})')}",
             f"X-WR-CALNAME:{_text(f'ggAVAX withdrawals of {who} ({network})')}",
             f"DESCRIPTION:{_text(_CALENDAR_DESCRIPTION)}", f"X-WR-CALDESC:{_text(_CALENDAR_DESCRIPTION)}",
             f"REFRESH-INTERVAL;VALUE=DURATION:{REFRESH}", f"X-PUBLISHED-TTL:{REFRESH}"]
    for _, _, event in sorted(events, key=lambda e: (e[0], e[1])):
        lines += event
    lines.append("END:VCALENDAR")
    return "".join(fold(line) + "\r\n" for line in lines)


_CALENDAR_DESCRIPTION = ("Estimated funding, claimable and expiration times of each open ggAVAX withdrawal request, "
                         "and the announced end of the withdrawal window, from the GoGoPool (Hypha) staking data "
                         "API. Times are UTC; estimates move as the queue does.")


def _event(event_uid: str, stamp: int, at: int, summary: str, description: str,
           *alarms: tuple[str, str]) -> tuple[int, str, list[str]]:
    lines = ["BEGIN:VEVENT", f"UID:{event_uid}", f"DTSTAMP:{_utc(stamp)}", f"DTSTART:{_utc(at)}",
             f"SUMMARY:{_text(summary)}", f"DESCRIPTION:{_text(description)}", "TRANSP:TRANSPARENT"]
    for trigger, text in alarms:
        lines += ["BEGIN:VALARM", "ACTION:DISPLAY", f"TRIGGER:{trigger}", f"DESCRIPTION:{_text(text)}", "END:VALARM"]
    lines.append("END:VEVENT")
    return at, event_uid, lines


def _steps(receipt: dict) -> list[dict]:
    return [receipt[k] for k in ("requested", "funded", "claimed", "cancelled", "reclaimed") if receipt.get(k)]


def _last_step(request: dict, receipt: dict | None) -> int:
    """The block time of the last step on record of an open request: its filing, or its funding."""
    return max([request["requestTime"], *(s["time"] for s in (_steps(receipt) if receipt else []))])


def _utc(t: int) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t))


def amount(x: float) -> str:
    """Whole tokens in words: thousands separated, at most 6 decimals, no trailing zeros; a dust
    amount is "less than 0.000001", never 0."""
    text = svg.number(x, 0.000001)  # "less than 0.000001" for a positive amount below it
    return text.rstrip("0").rstrip(".") if text[-1] == "0" else text


def _text(value: str) -> str:
    """An RFC 5545 TEXT value (3.3.11): backslash, semicolon, comma and line breaks escaped."""
    return (value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
            .replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n"))


def fold(line: str) -> str:
    """A content line folded as RFC 5545 3.1 asks: at most 75 octets of UTF-8 per line, each
    continuation starting with one space, never splitting a character."""
    if line.isascii():  # most lines: one octet a character
        if len(line) <= LINE_OCTETS:
            return line
        return "\r\n ".join([line[:LINE_OCTETS], *(line[i:i + LINE_OCTETS - 1]
                                                     for i in range(LINE_OCTETS, len(line), LINE_OCTETS - 1))])
    data = line.encode()
    if len(data) <= LINE_OCTETS:
        return line
    parts, start, limit = [], 0, LINE_OCTETS
    while start < len(data):
        end = min(start + limit, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # inside a UTF-8 sequence: break before it
            end -= 1
        parts.append(data[start:end].decode())
        start, limit = end, LINE_OCTETS - 1  # the leading space counts
    return "\r\n ".join(parts)


# ---- publisher check ----------------------------------------------------------------------------


def problems(data: bytes) -> list[str]:
    """Why ``data`` is not a calendar as this module writes them (RFC 5545 framing: UTF-8, CRLF
    lines of at most 75 octets, components opened and closed in order, a VEVENT's UID, DTSTAMP and
    DTSTART, an alarm's ACTION and TRIGGER); empty when it is one. Cheap: a scan of the lines."""
    lines = _content_lines(data)
    if isinstance(lines, str):
        return [lines]
    if not lines or lines[0] != "BEGIN:VCALENDAR" or lines[-1] != "END:VCALENDAR":
        return ["calendar: not one VCALENDAR"]
    out = _component_problems(lines)
    if "BEGIN:VEVENT" not in lines:
        out.append("calendar: no event")
    return out[:3]


def _content_lines(data: bytes) -> list[str] | str:
    """The calendar's content lines, unfolded; or why its framing is wrong."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return "calendar: not UTF-8"
    if not text.endswith("\r\n"):
        return "calendar: does not end with CRLF"
    raw = text[:-2].split("\r\n")
    if any("\n" in line or "\r" in line for line in raw):
        return "calendar: a line break that is not CRLF"
    if any(len(line.encode()) > LINE_OCTETS for line in raw):
        return f"calendar: a line longer than {LINE_OCTETS} octets (not folded)"
    lines: list[str] = []
    for line in raw:
        if line.startswith(" ") and lines:
            lines[-1] += line[1:]
        else:
            lines.append(line)
    return lines


# The properties each component this module writes must hold.
_REQUIRED = {"VEVENT": {"UID", "DTSTAMP", "DTSTART"}, "VALARM": {"ACTION", "TRIGGER"}, "VCALENDAR": {"VERSION", "PRODID"}}


def _component_problems(lines: list[str]) -> list[str]:
    """Content lines that are not, components not closed in order, required properties missing."""
    out: list[str] = []
    stack: list[str] = []
    props: list[set[str]] = []
    for line in lines:
        name = line.split(":", 1)[0].split(";", 1)[0]
        if ":" not in line or not name:
            out.append(f"calendar: not a content line: {line[:40]!r}")
        elif name == "BEGIN":
            stack.append(line[6:])
            props.append(set())
        elif name == "END":
            if not stack or stack[-1] != line[4:]:
                out.append(f"calendar: {line} closes {stack[-1] if stack else 'nothing'}")
                break
            kind, have = stack.pop(), props.pop()
            need = _REQUIRED.get(kind, set())
            if need - have:
                out.append(f"calendar: a {kind} without {', '.join(sorted(need - have))}")
        elif props:
            props[-1].add(name)
    if stack:
        out.append(f"calendar: {stack[-1]} is not closed")
    return out
