"""Reminders without a server: every requester's calendar (/withdrawals/{address}.ics) read by two
calendar parsers against its JSON, and the queue's Atom feed (/withdrawals/feed.xml) read by a feed
reader against the receipts and the parameter changes it was built from; both byte-stable, served
and published with their content types, and checked by `publisher check`."""
from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import feedparser
import icalendar
import pytest
import requests
import vobject
import yaml
from support import utc_text

from publisher.build.pipeline import build, context
from publisher.build.tree import sha256
from publisher.build.validate import load_dir, text_problems, validate
from publisher.compute import queue as Q
from publisher.compute.depositor import waited_since
from publisher.endpoints import calendar as C
from publisher.endpoints import feed as F
from publisher.endpoints import registry
from publisher.endpoints import withdrawals as W
from publisher.endpoints.announcements import WINDOW_END
from publisher.endpoints.registry import match, resolve
from publisher.publish.plan import items
from publisher.serve import make_server
from publisher.snapshot import QueueStep, Receipt

ROOT = Path(__file__).resolve().parents[1]
DAY = timedelta(days=1)
BASE = "https://api.example"  # where a feed reader fetched the feed: its relative links resolve against it


def _at(t: int) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _requester_files(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((out / "withdrawals").glob("0x*.json"))}


def _events(data: bytes) -> dict[str, icalendar.Event]:
    cal = icalendar.Calendar.from_ical(data)
    return {str(e["UID"]): e for e in cal.walk("VEVENT")}


# ---- the calendars ------------------------------------------------------------------------------


def test_every_requester_has_a_calendar_with_the_times_of_its_json(built):
    files = _requester_files(built)
    queue = json.loads((built / "withdrawals.json").read_text())
    network, window_end = queue["meta"]["network"], queue["window"]["closesAt"]
    block_time = queue["meta"]["block"]["timestamp"]
    assert files and window_end is not None
    closed_only = 0
    for who, body in files.items():
        path = built / "withdrawals" / f"{who}.ics"
        data = path.read_bytes()
        # RFC 5545 framing: CRLF line endings only, no line over 75 octets, folded lines unfold.
        assert data.endswith(b"\r\n") and b"\n" not in data.replace(b"\r\n", b"")
        assert max(len(line) for line in data.split(b"\r\n")) <= 75
        events = _events(data)
        ids = set()
        for r in body["requests"]:
            rid = r["id"]
            claim, expire = events[C.uid(network, "claimable", rid)], events[C.uid(network, "expiration", rid)]
            assert claim["DTSTART"].dt == _at(r["claimableTime"])
            assert expire["DTSTART"].dt == _at(r["expirationTime"])
            funding = events.get(C.uid(network, "funding", rid))
            if r["estimatedFundingTime"] is None:
                assert funding is None
            else:
                assert funding["DTSTART"].dt == _at(r["estimatedFundingTime"])
            ids |= {C.uid(network, k, rid) for k in ("claimable", "expiration", "funding")}
            for e in (claim, expire, funding):
                if e is not None:
                    # The words of the JSON, and a stamp of the chain's time, not the wall clock's.
                    assert r["advice"] in str(e["DESCRIPTION"]) and f"#{rid}" in str(e["SUMMARY"])
                    # The calls it allows now, on the queue's contract, for acting without the site.
                    allowed = [f"{fn}({rid})" for flag, fn in (("canClaim", "claimUnstake"), ("canCancel", "cancelRequest"),
                                                               ("canReclaim", "reclaimExpiredRequest")) if r[flag]]
                    said = str(e["DESCRIPTION"])
                    assert all(c in said for c in allowed) and (queue["address"] in said) == bool(allowed), said
                    assert e["DTSTAMP"].dt <= _at(block_time)
            alarms = expire.walk("VALARM")
            # A request in line stays there past its expiration (cancel, reclaim or a funding still
            # possible); a funded one can no longer be claimed.
            in_line = r["status"] in ("pending", "pendingExpired")
            assert ("it stays in line" in str(expire["DESCRIPTION"])) == in_line
            assert ("from now on it can no longer be claimed" in str(expire["DESCRIPTION"])) == (not in_line)
            past = r["status"] in ("pendingExpired", "expiredFunded", "stuck")
            # Past its expiration a request can no longer be claimed, funded or not: no payout promised.
            assert (f"until the request expires ({utc_text(r['expirationTime'])})" in str(claim["DESCRIPTION"])) == (not past)
            assert ("it is funded already" in str(claim["DESCRIPTION"])) == (r["fulfilled"] and not past)
            if past or block_time >= r["expirationTime"] - DAY.total_seconds():
                assert not alarms  # its time has come: an alarm could only fire late
            else:
                assert [(a["ACTION"], a["TRIGGER"].dt) for a in alarms] == [("DISPLAY", -DAY)]
                assert expire["DTSTART"].dt + alarms[0]["TRIGGER"].dt == _at(r["expirationTime"]) - DAY
                # What to do by then: a funded request is claimed; one still in line is cancelled or reclaimed.
                said = str(alarms[0]["DESCRIPTION"])
                assert said.endswith("claim it before then.") == r["fulfilled"], said
                assert ("if it is still in line, cancel or reclaim it then" in said) == (not r["fulfilled"]), said
            assert not claim.walk("VALARM") and (funding is None or not funding.walk("VALARM"))
        # The announced window's end, in every calendar, with its alarms a week and a day before for
        # a requester with something to do then: what each request allows by the alarm's time (one
        # expired by then allows what an expired one does; a stuck one allows nothing).
        window = events[C.uid(network, "window-end", requester=who)]
        assert window["DTSTART"].dt == _at(window_end)
        assert block_time < window_end - 7 * DAY.total_seconds()
        paused = queue["pauses"]["ggavaxDeposits"]
        due = {-before: W.window_asks(body["requests"], window_end - before.total_seconds(), paused) for before in (7 * DAY, DAY)}
        assert sorted(a["TRIGGER"].dt for a in window.walk("VALARM")) == sorted(t for t, asks in due.items() if asks)
        for a in window.walk("VALARM"):
            said, asks = str(a["DESCRIPTION"]), due[a["TRIGGER"].dt]
            assert said.endswith(f"before then, {W.listed(asks)}."), said
            expired_by_then = [r for r in body["requests"] if r["expirationTime"] <= window_end + a["TRIGGER"].dt.total_seconds()]
            if body["requests"] and len(expired_by_then) == len(body["requests"]):
                assert "claim each request" not in said  # none of them can be claimed by then
        assert set(events) == {i for i in ids if i in events} | {C.uid(network, "window-end", requester=who)}
        if not body["requests"]:
            closed_only += 1
            assert len(events) == 1  # a requester whose requests are all closed: the window's end only
        # A second, independent parser reads the same events at the same times.
        parsed = vobject.readOne(data.decode())
        assert {(str(v.uid.value), v.dtstart.value) for v in parsed.vevent_list} == {
            (u, e["DTSTART"].dt) for u, e in events.items()}
    assert {p.stem for p in (built / "withdrawals").glob("0x*.ics")} == set(files)
    print(f"{len(files)} calendars, {closed_only} of requesters whose requests are all closed")


def test_calendars_follow_the_announced_window(demo_snapshot, demo_profile):
    """Without an announced window a calendar holds the requests' dates only, and a requester with
    no open request has none (a calendar holds at least one event)."""
    ctx = context(demo_snapshot, demo_profile)
    ctx.announcements = tuple(a for a in ctx.announcements if a.key != WINDOW_END)
    made = {path: resolve(value) for path, value in C.requester_calendar(ctx)}
    open_requesters = {r.requester.lower() for r in demo_snapshot.withdraw_queue.requests}
    assert {p.rsplit("/", 1)[1][:-4] for p in made} == open_requesters
    for text in made.values():
        assert "window-end" not in text and "BEGIN:VEVENT" in text


def test_the_windows_alarms_go_once_it_has_passed(demo_snapshot, demo_profile):
    """After the announced window's end its event stays, dated, without the alarms that could
    only fire late (a holder subscribing then would get them as missed reminders)."""
    end = next(a.time for a in demo_profile.announced() if a.key == WINDOW_END)

    def at(t: int):
        # The requests kept from expiring meanwhile (as a longer expiration delay would), so some still have a claim to come.
        q = demo_snapshot.withdraw_queue
        later = tuple(dataclasses.replace(r, expiration_time=r.expiration_time + t - demo_snapshot.block.timestamp) for r in q.requests)
        return dataclasses.replace(demo_snapshot, block=dataclasses.replace(demo_snapshot.block, timestamp=t),
                                   withdraw_queue=dataclasses.replace(q, requests=later))

    # An alarm whose time has come goes too: on the window's last days only the day-before one is left.
    days = DAY.total_seconds()
    after = at(end + 60)
    for snap, alarms in ((demo_snapshot, [-7 * DAY, -DAY]), (at(end - 3 * days), [-DAY]), (at(end - days), []), (after, [])):
        ctx = context(snap, demo_profile)
        made = {path: resolve(value) for path, value in C.requester_calendar(ctx)}
        bodies = {path + ".ics": resolve(value) for path, value in W.requester_files(ctx)}
        assert made
        for path, text in made.items():
            window = next(e for u, e in _events(text.encode()).items() if "window-end" in u)
            # Only for a requester with something to do by then: none for stuck or closed requests.
            alerted = any(r["status"] != "stuck" for r in bodies[path]["requests"])
            assert sorted(a["TRIGGER"].dt for a in window.walk("VALARM")) == (alarms if alerted else []), path
            # Told as closed once it has; "the end of this day" told as said of the announced date.
            assert str(window["SUMMARY"]).endswith("closed (announced)" if snap is after else "closes (announced)")
            assert str(window["DESCRIPTION"]).startswith("Announced date 2026-12-31 (UTC): ")
        assert any(r["status"] != "stuck" for b in bodies.values() for r in b["requests"]), snap.block.timestamp


def test_an_expiry_alarm_whose_time_has_come_is_left_out(demo_snapshot, demo_profile):
    """Inside the last day before a request's expiration its alarm (a day before) could only fire
    late: the calendar leaves it out, funded or pending, and keeps the event."""
    q = demo_snapshot.withdraw_queue
    waiting, funded = (next(r for r in q.requests if r.fulfilled == f) for f in (False, True))
    now = demo_snapshot.block.timestamp

    def expiring(r, seconds: int):  # expires ``seconds`` after the block
        return dataclasses.replace(r, expiration_time=now + seconds, claimable_time=min(r.claimable_time, now))

    for soon, alarmed in ((2 * DAY.total_seconds(), True), (DAY.total_seconds() - 60, False)):
        requests = tuple(expiring(r, int(soon)) if r.id in (waiting.id, funded.id) else r for r in q.requests)
        snap = dataclasses.replace(demo_snapshot, withdraw_queue=dataclasses.replace(q, requests=requests))
        events = {u: e for _, value in C.requester_calendar(context(snap, demo_profile))
                  for u, e in _events(resolve(value).encode()).items()}
        for r in (waiting, funded):
            expire = events[C.uid(snap.network, "expiration", r.id)]
            assert bool(expire.walk("VALARM")) == alarmed, (r.id, soon)


def test_calendars_say_what_expiry_means_while_ggavax_deposits_are_paused(demo_snapshot, demo_profile):
    """A funded request can be neither cancelled nor reclaimed while ggAVAX takes no deposits: its
    events do not offer either, and its expiration says it would be stuck."""
    def texts(snap) -> str:
        made = [resolve(value) for _, value in C.requester_calendar(context(snap, demo_profile))]
        return "".join(made).replace("\r\n ", "")  # unfolded
    paused = dataclasses.replace(demo_snapshot, paused={**demo_snapshot.paused, "TokenggAVAX": True})
    before, during = texts(demo_snapshot), texts(paused)
    assert "can also be cancelled for ggAVAX" in before and "anyone may reclaim it" in before
    assert "cancelled for ggAVAX" not in during and "anyone may reclaim it" not in during
    assert "stuck until they reopen" in during


def test_a_request_expired_in_line_is_warned_before_a_funding_that_would_leave_it_stuck():
    """Past its expiration a request in line has no expiration alarm; while ggAVAX deposits are
    paused a dated funding would leave it stuck: its funding event warns a day before, unless that
    time has come."""
    now = 1_800_000_000
    record = {"id": 7, "requester": "0x" + "ab" * 20, "status": "pendingExpired", "fulfilled": False, "expectedAvax": 12.5,
              "advice": "Cancel or reclaim it.", "requestTime": now - 30 * 86_400, "claimableTime": now - 23 * 86_400,
              "expirationTime": now - 9 * 86_400, "estimatedFundingTime": now + 5 * 86_400,
              "canClaim": False, "canCancel": True, "canReclaim": True}
    body = {"requester": record["requester"], "requests": [record], "receipts": []}

    def funding_alarms(**kw) -> list[str]:
        events = _events(C.calendar_text("mainnet", None, body, **kw).encode())
        return [str(a["DESCRIPTION"]) for a in events[C.uid("mainnet", "funding", 7)].walk("VALARM")]

    [said] = funding_alarms(deposits_paused=True)
    assert "has expired in line and is expected to be funded at 2027-01-20" in said and "would be stuck" in said
    assert said.endswith("Cancel or reclaim it before then.")
    assert funding_alarms(deposits_paused=False) == []  # funded late it is reclaimable: nothing lost
    assert funding_alarms(deposits_paused=True, late=frozenset({7})) == []  # its time has come
    # The build's rule for when that time has come: a day before the funding it warns of.
    place = dataclasses.make_dataclass("P", ["status", "funding_time"])
    assert C._alarmed(None, place(Q.RequestStatus.PENDING_EXPIRED, now + 5 * 86_400)) == now + 5 * 86_400
    assert C._alarmed(None, place(Q.RequestStatus.PENDING_EXPIRED, None)) == 0


def test_a_requester_whose_requests_are_all_closed_keeps_a_calendar_of_the_window_end(demo_snapshot, demo_profile):
    """Its JSON stays (its receipts), and so does its calendar, with the window's end only: a client
    subscribed to it drops the alarms of the requests that closed."""
    [closed] = [r for r in _receipts(2) if r.closed == "cancelled"]
    snap = dataclasses.replace(demo_snapshot, queue_receipts=(*demo_snapshot.queue_receipts, closed))
    ctx = context(snap, demo_profile)
    made = {path: resolve(value) for path, value in C.requester_calendar(ctx)}
    if C.CALENDAR_PATH.format(address=closed.requester.lower()) not in made:  # the requester files hold no receipts yet
        pytest.skip("the requester files do not publish closed requests' receipts yet")
    events = _events(made[C.CALENDAR_PATH.format(address=closed.requester.lower())].encode())
    [window] = events.values()
    assert str(window["UID"]) == C.uid(snap.network, "window-end", requester=closed.requester)
    assert window["DTSTART"].dt == _at(next(a.time for a in demo_profile.announced() if a.key == WINDOW_END))
    assert window["DTSTAMP"].dt == _at(closed.closed_at.time)  # its last step on record
    assert not window.walk("VALARM")  # nothing left to do by the window's end: no alarm


@pytest.mark.parametrize("words", ["Claim it, before; the end\\ — ünïcödé ", "Claim it, before; the end\\ plainly "])
def test_folding_keeps_characters_whole_and_text_escaped(words):
    line = "DESCRIPTION:" + C._text(words * 9 + "\nnext line")
    folded = C.fold(line)
    parts = folded.encode().split(b"\r\n")
    assert all(len(p) <= 75 for p in parts) and all(p.startswith(b" ") for p in parts[1:])
    for p in parts:
        p.decode()  # no UTF-8 sequence split across lines
    assert folded.replace("\r\n ", "") == line
    text = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VEVENT\r\nUID:u\r\nDTSTAMP:20260101T000000Z\r\n" \
           f"DTSTART:20260101T000000Z\r\n{folded}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    event = icalendar.Calendar.from_ical(text).walk("VEVENT")[0]
    assert str(event["DESCRIPTION"]) == words * 9 + "\nnext line"
    assert C.problems(text.encode()) == []


def test_two_builds_of_one_snapshot_make_the_same_bytes(demo_snapshot, demo_profile, built, tmp_path):
    """Stable UIDs and stamps: a fresh build and a build over the last one equal the first."""
    out = tmp_path / "out"
    build(demo_snapshot, demo_profile, out)
    first = {p.name: p.read_bytes() for p in (out / "withdrawals").glob("*") if p.suffix in (".ics", ".xml")}
    build(demo_snapshot, demo_profile, out, force=True)  # the second reads the first as its last build
    again = {p.name: p.read_bytes() for p in (out / "withdrawals").glob("*") if p.suffix in (".ics", ".xml")}
    fixture = {p.name: p.read_bytes() for p in (built / "withdrawals").glob("*") if p.suffix in (".ics", ".xml")}
    assert "feed.xml" in first and len(first) > 1
    assert first == again == fixture


# ---- the feed -----------------------------------------------------------------------------------


def _step(n: int, t: int) -> QueueStep:
    return QueueStep(n, t, "0x" + f"{n:064x}")


WEI = 10**18
T0 = 1_773_000_000


def _receipts(count: int) -> tuple[Receipt, ...]:
    """Requests filed, funded, then claimed, cancelled, reclaimed or left open, one block apart."""
    out = []
    for i in range(count):
        who = "0x" + f"{i + 1:040x}"
        filed = _step(1000 + 10 * i, T0 + 100 * i)
        outcome = ("claimed", "cancelled", "reclaimed", None)[i % 4]
        funded = _step(1001 + 10 * i, T0 + 100 * i + 10) if outcome in ("claimed", "reclaimed") else None
        closed = _step(1002 + 10 * i, T0 + 100 * i + 20) if outcome else None
        out.append(Receipt(i, who, (i + 1) * WEI, (i + 1) * WEI + WEI // 2, T0 + 100 * i + 7 * 86_400, filed,
                           funded=funded, allocated=(i + 1) * WEI if funded else None, closed=outcome, closed_at=closed,
                           paid=(i + 1) * WEI if outcome in ("claimed", "reclaimed") else None,
                           shares_returned=(i + 1) * WEI if outcome in ("cancelled", "reclaimed") else None,
                           shares_burnt=WEI // 1000 if outcome == "cancelled" else None))
    return tuple(out)


def _feed(snap, profile, previous: dict | None = None) -> str:
    ctx = context(snap, profile)
    ctx.previous = previous or {}
    [(path, value)] = list(F.queue_feed(ctx))
    assert path == F.PATH
    return resolve(value)


def test_the_feed_holds_the_receipts_newest_first(demo_snapshot, demo_profile):
    receipts = _receipts(8)
    snap = dataclasses.replace(demo_snapshot, queue_receipts=receipts)
    text = _feed(snap, demo_profile)
    assert F.problems(text.encode()) == []
    parsed = feedparser.parse(text.encode(), response_headers={"content-location": f"{BASE}/withdrawals/feed.xml",
                                                                 "content-type": F.ATOM})
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10" and parsed.feed.id == F.feed_id(snap.network)
    tag = f"{F.TAG}withdrawals/{snap.network}/request/"
    got = {e.id: e for e in parsed.entries if e.id.startswith(tag)}
    want = {}
    for r in receipts:
        if r.funded:
            want[f"{tag}{r.id}/funded"] = (r.funded.time, "funded", r)
        if r.closed:
            want[f"{tag}{r.id}/{r.closed}"] = (r.closed_at.time, r.closed, r)
    assert set(got) == set(want)
    for entry_id, (t, kind, r) in want.items():
        e = got[entry_id]
        assert e.updated_parsed[:6] == _at(t).timetuple()[:6]
        assert e.tags[0].term == kind and e.links[0].href == f"{BASE}/withdrawals/{r.requester.lower()}"
        assert f"Request {r.id} " in e.title and e.content[0].value
    cancelled = got[f"{tag}1/cancelled"]
    assert "2 ggAVAX back" in cancelled.title and "0.001 ggAVAX burnt" in cancelled.content[0].value
    assert "3 AVAX set aside" in got[f"{tag}2/funded"].title
    # Newest first, and the feed's updated is its newest entry's.
    times = [datetime(*e.updated_parsed[:6]) for e in parsed.entries]
    assert times == sorted(times, reverse=True)
    assert parsed.feed.updated_parsed == parsed.entries[0].updated_parsed
    # The operator's announced dates are entries too.
    assert {e.id.rsplit("/", 2)[1] for e in parsed.entries if e.tags[0].term == "announcement"} == \
        {a.key for a in demo_profile.announced()}


def test_the_feed_keeps_the_latest_entries(demo_snapshot, demo_profile):
    receipts = _receipts(120)
    snap = dataclasses.replace(demo_snapshot, queue_receipts=receipts)
    parsed = feedparser.parse(_feed(snap, demo_profile).encode())
    tag = f"{F.TAG}withdrawals/{snap.network}/"
    steps = [(r.funded.time, f"{tag}request/{r.id}/funded") for r in receipts if r.funded]
    steps += [(r.closed_at.time, f"{tag}request/{r.id}/{r.closed}") for r in receipts if r.closed]
    steps += [(snap.block.timestamp, f"{tag}announcement/{a.key}/{a.date}") for a in demo_profile.announced()]
    assert len(steps) > F.MAX_ENTRIES
    assert [e.id for e in parsed.entries] == [i for _, i in sorted(steps, key=lambda s: (-s[0], s[1]))][:F.MAX_ENTRIES]


def _later(snap, blocks: int, **queue):
    block = dataclasses.replace(snap.block, number=snap.block.number + blocks, timestamp=snap.block.timestamp + 2 * blocks,
                                hash="0x" + f"{snap.block.number + blocks:064x}")
    return dataclasses.replace(snap, block=block, withdraw_queue=dataclasses.replace(snap.withdraw_queue, **queue))


def test_parameter_changes_and_pauses_are_entries_dated_at_the_build_that_saw_them(demo_snapshot, demo_profile, tmp_path):
    out = tmp_path / "out"
    q = demo_snapshot.withdraw_queue
    build(demo_snapshot, demo_profile, out)
    first = (out / "withdrawals" / "feed.xml").read_bytes()
    assert b"<category term=\"parameter\"/>" not in first and b"<category term=\"pause\"/>" not in first
    changed = _later(demo_snapshot, 5, unstake_delay=2 * q.unstake_delay, paused=True)
    build(changed, demo_profile, out, force=True)
    second = (out / "withdrawals" / "feed.xml").read_bytes()
    parsed = feedparser.parse(second)
    news = {e.id: e for e in parsed.entries if e.tags[0].term in ("parameter", "pause")}
    base = f"{F.TAG}withdrawals/{changed.network}/"
    block = changed.block.number
    assert set(news) == {f"{base}parameter/unstakeDelay/{block}", f"{base}pause/queueRequests/{block}"}
    for e in news.values():
        assert e.updated_parsed[:6] == _at(changed.block.timestamp).timetuple()[:6]
    delay = news[f"{base}parameter/unstakeDelay/{block}"]
    assert delay.title == f"Unstake delay changed from {q.unstake_delay // 86_400} days to {2 * q.unstake_delay // 86_400} days"
    assert news[f"{base}pause/queueRequests/{block}"].title == "New withdrawal requests paused"
    # The announcements keep the time of the first build that published them.
    announced = [e for e in parsed.entries if e.tags[0].term == "announcement"]
    assert announced and all(e.updated_parsed[:6] == _at(demo_snapshot.block.timestamp).timetuple()[:6] for e in announced)
    # A later build with the same values carries the entries as they were: the same bytes.
    build(_later(demo_snapshot, 9, unstake_delay=2 * q.unstake_delay, paused=True), demo_profile, out, force=True)
    assert (out / "withdrawals" / "feed.xml").read_bytes() == second
    # Resumed: one more entry, the earlier ones kept.
    resumed = _later(demo_snapshot, 12, unstake_delay=2 * q.unstake_delay, paused=False)
    build(resumed, demo_profile, out, force=True)
    third = feedparser.parse((out / "withdrawals" / "feed.xml").read_bytes())
    ids = {e.id for e in third.entries}
    assert set(news) < ids and f"{base}pause/queueRequests/{resumed.block.number}" in ids
    assert next(e for e in third.entries if e.id.endswith(f"/{resumed.block.number}")).title == "New withdrawal requests resumed"


def _refuse(*args, **kwargs):
    raise AssertionError("parsed a file the process kept what it needs of")


def test_the_feed_reads_the_last_queue_state_kept_or_from_the_file_alike(demo_snapshot, demo_profile, tmp_path, monkeypatch):
    """A build compares with the last /withdrawals as this process kept it when it wrote the file,
    or as the file reads back when it did not: what is kept is what the file parses to, and the
    feeds are the same bytes either way."""
    q = demo_snapshot.withdraw_queue
    steps = [demo_snapshot, _later(demo_snapshot, 5, unstake_delay=2 * q.unstake_delay, paused=True),
             _later(demo_snapshot, 9, unstake_delay=2 * q.unstake_delay, paused=False)]
    feeds = {}
    for mode in ("kept", "read back"):
        out = tmp_path / mode.replace(" ", "-") / "out"
        for i, snap in enumerate(steps):
            if mode == "read back":
                monkeypatch.setattr(registry, "_KEPT", {})
            with monkeypatch.context() as m:
                if mode == "kept" and i:  # the live file is the one this process wrote: none of it is parsed
                    live = sha256((out / "withdrawals.json").read_bytes())
                    assert registry.kept(W.QUEUE_PATH, live) is not registry.NOT_KEPT
                    m.setattr(F, "jsonin", SimpleNamespace(loads=_refuse))
                build(snap, demo_profile, out, force=i > 0)
            data = (out / "withdrawals.json").read_bytes()
            back, parsed = registry.kept(W.QUEUE_PATH, sha256(data)), json.loads(data)
            assert back == {k: parsed[k] for k in back} and F._members(parsed).items() <= back.items()
            assert registry.kept(W.QUEUE_PATH, sha256(data + b" ")) is registry.NOT_KEPT
        feeds[mode] = (out / "withdrawals" / "feed.xml").read_bytes()
    assert feeds["kept"] == feeds["read back"]
    terms = [e.tags[0].term for e in feedparser.parse(feeds["kept"]).entries]
    assert terms.count("pause") == 2 and terms.count("parameter") == 1


def test_a_new_feed_starts_with_the_pauses_in_force(demo_snapshot, demo_profile, tmp_path):
    """No last build to compare with: what is paused at the first block is an entry, dated there and
    carried as it was; what runs is not news."""
    out, pauses = tmp_path / "out", {**demo_snapshot.paused, "TokenggAVAX": True}
    paused = dataclasses.replace(_later(demo_snapshot, 1, paused=True), paused=pauses)
    build(paused, demo_profile, out)
    first = (out / "withdrawals" / "feed.xml").read_bytes()
    news = {e.id: e for e in feedparser.parse(first).entries if e.tags[0].term == "pause"}
    base, block = f"{F.TAG}withdrawals/{paused.network}/pause/", paused.block.number
    assert set(news) == {f"{base}queueRequests/{block}", f"{base}ggavaxDeposits/{block}"}
    deposits = news[f"{base}ggavaxDeposits/{block}"]
    assert deposits.title == "ggAVAX deposits paused" and "neither cancelled nor reclaimed" in deposits.content[0].value
    assert f"Seen in force at block {block}" in deposits.content[0].value
    assert deposits.updated_parsed[:6] == _at(paused.block.timestamp).timetuple()[:6]
    build(dataclasses.replace(paused, block=_later(paused, 4).block), demo_profile, out, force=True)
    assert (out / "withdrawals" / "feed.xml").read_bytes() == first
    # A later build with nothing to compare with (no /withdrawals of the last build): a pause the
    # feed's newest entry already tells is not told again; one it says resumed is.
    again = dataclasses.replace(paused, block=_later(paused, 6).block)
    ctx = context(again, demo_profile)
    ctx.previous = {F.PATH: first}
    entries = F.change_entries(ctx, F.previous_entries(first, again.network))
    assert {e.id for e in entries} == set(news)
    resumed = first.replace(b"ggAVAX deposits paused</title>", b"ggAVAX deposits resumed</title>")
    entries = F.change_entries(ctx, F.previous_entries(resumed, again.network))
    assert f"{base}ggavaxDeposits/{again.block.number}" in {e.id for e in entries}
    # Nothing paused at a fresh feed's first block: no pause entry.
    running = tmp_path / "running"
    build(demo_snapshot, demo_profile, running)
    assert b'<category term="pause"/>' not in (running / "withdrawals" / "feed.xml").read_bytes()


def test_an_announcement_pushed_out_of_the_feed_by_newer_entries_is_not_news_again(demo_snapshot, demo_profile, built):
    """The feed holds the latest entries: after many newer steps an announcement falls out of it,
    and the next build must not date it anew (it would come back at the top, again and again)."""
    last = {"/withdrawals": (built / "withdrawals.json").read_bytes()}
    early = dataclasses.replace(demo_snapshot, queue_receipts=(),
                                block=dataclasses.replace(demo_snapshot.block, timestamp=T0 - 86_400))
    first = _feed(early, demo_profile, last)  # the announcements, dated at this earlier block

    def kinds(text: str) -> list[str]:
        return [e.tags[0].term for e in feedparser.parse(text.encode()).entries]

    assert "announcement" in kinds(first)
    crowd = dataclasses.replace(demo_snapshot, queue_receipts=_receipts(F.MAX_ENTRIES))  # 250 newer steps
    pushed = _feed(crowd, demo_profile, {**last, F.PATH: first.encode()})
    assert len(kinds(pushed)) == F.MAX_ENTRIES and "announcement" not in kinds(pushed)
    assert "announcement" not in kinds(_feed(crowd, demo_profile, {**last, F.PATH: pushed.encode()}))
    # Without the last feed (a first build of it) the announcements are news, dated at this block.
    assert "announcement" in kinds(_feed(crowd, demo_profile, last))


def test_the_windows_close_is_news_of_its_own_dated_at_the_first_build_past_it(demo_snapshot, demo_profile, built):
    """Once the announced window has passed, the feed says so, with what the contracts still allow,
    dated at the first build that saw it passed and kept at that date after."""
    end = next(a for a in demo_profile.announced() if a.key == WINDOW_END)
    last = {"/withdrawals": (built / "withdrawals.json").read_bytes()}

    def at(t: int):
        # The requests kept from expiring meanwhile (as a longer expiration delay would), so some still have a claim to come.
        q = demo_snapshot.withdraw_queue
        later = tuple(dataclasses.replace(r, expiration_time=r.expiration_time + t - demo_snapshot.block.timestamp) for r in q.requests)
        return dataclasses.replace(demo_snapshot, block=dataclasses.replace(demo_snapshot.block, timestamp=t),
                                   withdraw_queue=dataclasses.replace(q, requests=later))

    def closed(text: str) -> list:
        return [e for e in feedparser.parse(text.encode()).entries if e.id.endswith(f"/{WINDOW_END}/{end.date}/closed")]

    assert not closed(_feed(at(end.time - 60), demo_profile, last))
    first = _feed(at(end.time + 60), demo_profile, last)
    [entry] = closed(first)
    assert entry.updated_parsed[:6] == _at(end.time + 60).timetuple()[:6]
    assert entry.title == f"Closed: the withdrawal window, {end.date}" and "contracts know no such date" in entry.summary
    [kept] = closed(_feed(at(end.time + 86_400), demo_profile, {**last, F.PATH: first.encode()}))
    assert kept.updated_parsed[:6] == entry.updated_parsed[:6]


def test_a_last_build_of_another_network_or_unreadable_is_no_prior(demo_snapshot, demo_profile, built):
    last = (built / "withdrawals.json").read_bytes()
    other = json.loads(last)
    other["meta"]["chainId"] += 1
    other["parameters"]["unstakeDelay"] += 1
    for previous in ({"/withdrawals": json.dumps(other).encode()}, {"/withdrawals": b"{"},
                     {F.PATH: b"<feed", "/withdrawals": last}):
        text = _feed(demo_snapshot, demo_profile, previous)
        assert "<category term=\"parameter\"/>" not in text
    mine = json.loads(last)
    mine["parameters"]["unstakeDelay"] += 1
    assert "<category term=\"parameter\"/>" in _feed(demo_snapshot, demo_profile, {"/withdrawals": json.dumps(mine).encode()})


# ---- check, serve, publish, the CDN -------------------------------------------------------------


def test_publisher_check_parses_calendars_and_the_feed(built):
    files = load_dir(built)
    assert validate(files) == []
    ics = next(p for p in files if p.endswith(".ics"))
    good = files[ics]
    assert text_problems(C.ICS, ics, good) == []
    bad = {
        "LF endings": good.replace(b"\r\n", b"\n"),
        "an unfolded line": good.replace(b"\r\n ", b""),
        "an unclosed event": good.replace(b"END:VEVENT\r\n", b"", 1),
        "an event without a UID": b"".join(line + b"\r\n" for line in good.split(b"\r\n")[:-1] if not line.startswith(b"UID:")),
    }
    for what, data in bad.items():
        assert validate({**files, ics: data}), what
    feed = files[F.PATH]
    assert text_problems(F.ATOM, F.PATH, feed) == []
    for data in (feed[:-20], feed.replace(b"<feed xmlns=\"http://www.w3.org/2005/Atom\">", b"<feed>"),
                 feed.replace(b"<updated>2", b"<updated>x2", 2)):
        assert validate({**files, F.PATH: data})


def test_the_registry_gives_the_content_types_to_serve_and_publish(built):
    files = load_dir(built)
    ics = next(p for p in files if p.endswith(".ics"))
    assert match(ics).content_type == C.ICS and match(F.PATH).content_type == F.ATOM
    planned = {i.url: i for i in items({u: (sha256(d), len(d)) for u, d in files.items()}, "", 60)}
    assert planned[ics].content_type == C.ICS and planned[ics].key == ics.lstrip("/")
    assert planned[F.PATH].content_type == F.ATOM and planned[F.PATH].key == "withdrawals/feed.xml"
    assert planned[ics.removesuffix(".ics")].content_type == "application/json"


@pytest.fixture(scope="module")
def site(built):
    server = make_server(built, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_serve_answers_the_calendars_and_the_feed(site, built):
    who = next(iter(_requester_files(built)))
    body = json.loads((built / "withdrawals" / f"{who}.json").read_text())
    for spelling in (who, body["requester"]):  # the lower-case key and the checksummed spelling
        r = requests.get(f"{site}/withdrawals/{spelling}.ics")
        assert r.status_code == 200 and r.headers["Content-Type"] == "text/calendar; charset=utf-8"
        assert r.content == (built / "withdrawals" / f"{who}.ics").read_bytes()
        assert r.headers["Access-Control-Allow-Origin"] == "*" and r.headers["Cache-Control"].startswith("public")
    r = requests.get(f"{site}/withdrawals/feed.xml")
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/atom+xml"
    parsed = feedparser.parse(r.content, response_headers={"content-location": r.url,
                                                          "content-type": r.headers["Content-Type"]})
    assert not parsed.bozo and parsed.entries
    for e in parsed.entries[:5]:  # each entry links to a file the site serves
        assert requests.get(e.links[0].href).status_code == 200, e.links[0].href
    assert requests.head(f"{site}/withdrawals/feed.xml").headers["Content-Length"] == str(len(r.content))
    nobody = requests.get(f"{site}/withdrawals/0x{'0' * 39}1.ics")
    assert nobody.status_code == 404 and nobody.json()["error"]["code"] == "not_found"


def _viewer(uris: list[str]) -> list[dict]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    stack = yaml.load((ROOT / "templates" / "aws-stack.yaml").read_text(), Loader=Loader)
    code = stack["Resources"]["ViewerRequest"]["Properties"]["FunctionCode"]
    events = [{"request": {"method": "GET", "uri": u, "querystring": {}, "headers": {}}} for u in uris]
    script = code + "\nprocess.stdout.write(JSON.stringify(JSON.parse(require('fs').readFileSync(0, 'utf8')).map(handler)));\n"
    run = subprocess.run([node, "-e", script], input=json.dumps(events), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_cdn_maps_a_checksummed_calendar_to_its_key_as_serve_does():
    address = "0x" + "aB" * 20
    paths = [f"/withdrawals/{address}.ics", "/withdrawals/feed.xml"]
    for path, got in zip(paths, _viewer(paths), strict=True):
        assert got["uri"] == match(path).canonical(path)


def test_the_depositor_looking_stale_or_no_longer_is_an_entry(demo_snapshot, demo_profile, tmp_path):
    """No event says the depositor stopped calling: the feed compares /withdrawals' label with the
    last build's and dates a flip at the block that saw it, then carries it as it was."""
    out, q, act = tmp_path / "out", demo_snapshot.withdraw_queue, demo_snapshot.queue_activity
    waiting = [r for r in q.requests if not r.fulfilled]
    assert waiting and act is not None and act.last_call_time is not None
    # The wait at the demo's block, and bounds on either side of it.
    waited = demo_snapshot.block.timestamp - max(act.last_call_time, min(r.request_time for r in waiting))
    assert waited >= 2
    patient, strict = (demo_profile.with_overrides(depositor_max_age=bound) for bound in (waited + 3600, waited // 2))
    build(demo_snapshot, patient, out)
    first = (out / "withdrawals" / "feed.xml").read_bytes()
    assert b'<category term="depositor"/>' not in first
    assert json.loads((out / "withdrawals.json").read_text())["depositor"]["stale"] is False
    # A block on, under a bound the wait is past: stale, an entry at that block.
    idle = _later(demo_snapshot, 1)
    build(idle, strict, out, force=True)
    assert json.loads((out / "withdrawals.json").read_text())["depositor"]["stale"] is True
    second = (out / "withdrawals" / "feed.xml").read_bytes()
    base = f"{F.TAG}withdrawals/{idle.network}/depositor/"
    [entry] = [e for e in feedparser.parse(second).entries if e.tags[0].term == "depositor"]
    assert entry.id == f"{base}{idle.block.number}" and entry.title == "The depositor looks stale"
    # Dated when the label came to apply: the wait's start plus the bound, before the block that saw it.
    began = waited_since(idle) + strict.depositor_max_age
    assert began < idle.block.timestamp and entry.updated_parsed[:6] == _at(began).timetuple()[:6]
    assert "Nothing in line is funded until it calls depositFromStaking" in entry.content[0].value
    # Still stale later: carried as it was, nothing new.
    build(_later(idle, 3), strict, out, force=True)
    third = feedparser.parse((out / "withdrawals" / "feed.xml").read_bytes())
    assert [e.id for e in third.entries if e.tags[0].term == "depositor"] == [entry.id]
    # The line empties (every request in it funded): no longer stale, one more entry.
    served = _later(idle, 5, requests=tuple(r for r in q.requests if r.fulfilled), pending_count=0)
    ctx = context(served, strict)
    ctx.previous = {"/withdrawals": (out / "withdrawals.json").read_bytes(), F.PATH: (out / "withdrawals" / "feed.xml").read_bytes()}
    entries = {e.id: e for e in F.change_entries(ctx, F.previous_entries(ctx.previous[F.PATH], served.network))}
    assert entries[entry.id].title == "The depositor looks stale"
    assert entries[f"{base}{served.block.number}"].title == "The depositor no longer looks stale"
    assert entries[f"{base}{served.block.number}"].updated == served.block.timestamp  # the line emptied: no time of its own
    # It called again: dated at its call, from the logs.
    call = served.block.timestamp - 1
    again = dataclasses.replace(_later(idle, 5), queue_activity=dataclasses.replace(act, last_call_block=served.block.number - 1,
                                                                                     last_call_time=call))
    ctx = context(again, strict)
    ctx.previous = {"/withdrawals": (out / "withdrawals.json").read_bytes(), F.PATH: (out / "withdrawals" / "feed.xml").read_bytes()}
    back = {e.id: e for e in F.change_entries(ctx, F.previous_entries(ctx.previous[F.PATH], again.network))}
    assert back[f"{base}{again.block.number}"].title == "The depositor no longer looks stale"
    assert back[f"{base}{again.block.number}"].updated == call
    # The stale entry pushed out of the feed by newer ones: dated at the call all the same, a call
    # since the last build's last call on record.
    back = {e.id: e for e in F.change_entries(ctx, {})}
    assert back[f"{base}{again.block.number}"].updated == call
    # The queue's logs unread: the depositor's calls are unknown, which says nothing either way.
    unread = dataclasses.replace(_later(idle, 5), queue_activity=None)
    ctx = context(unread, strict)
    ctx.previous = {"/withdrawals": (out / "withdrawals.json").read_bytes(), F.PATH: (out / "withdrawals" / "feed.xml").read_bytes()}
    entries = F.change_entries(ctx, F.previous_entries(ctx.previous[F.PATH], unread.network))
    assert [e.id for e in entries if e.kind == "depositor"] == [entry.id]
    # A fresh feed while it looks stale starts with that entry.
    fresh = tmp_path / "fresh"
    build(idle, strict, fresh)
    assert [e.title for e in feedparser.parse((fresh / "withdrawals" / "feed.xml").read_bytes()).entries
            if e.tags[0].term == "depositor"] == ["The depositor looks stale"]


def test_a_funding_entry_keeps_the_words_it_was_published_with(demo_snapshot, demo_profile):
    """While a funded request is open, its funding's entry names the expiration it can be claimed
    until; once claimed, no event names that expiration any more, and the entry keeps its words
    rather than changing under the same id and time."""
    q = demo_snapshot.withdraw_queue
    receipts = {rc.id: rc for rc in demo_snapshot.queue_receipts}
    r = next(r for r in q.requests if r.fulfilled and r.id in receipts and receipts[r.id].funded is not None
             and receipts[r.id].funded.time < r.expiration_time)  # funded in time
    entry_id = f"{F.TAG}withdrawals/{demo_snapshot.network}/request/{r.id}/funded"

    def funded(text: str) -> feedparser.FeedParserDict:
        return next(e for e in feedparser.parse(text.encode()).entries if e.id == entry_id)

    first = _feed(demo_snapshot, demo_profile)
    said = funded(first).content[0].value
    assert f"until the request expires ({utc_text(r.expiration_time)})" in said
    rc = receipts[r.id]
    step = dataclasses.replace(rc.funded, block=demo_snapshot.block.number, time=demo_snapshot.block.timestamp)
    claimed = dataclasses.replace(rc, closed="claimed", closed_at=step, paid=rc.allocated)
    later = dataclasses.replace(_later(demo_snapshot, 1, requests=tuple(x for x in q.requests if x.id != r.id),
                                       fulfilled_count=q.fulfilled_count - 1),
                                queue_receipts=tuple(claimed if x.id == r.id else x for x in demo_snapshot.queue_receipts))
    assert funded(_feed(later, demo_profile, {F.PATH: first.encode()})).content[0].value == said
    # A new feed, which never published it, says what the receipt alone tells.
    assert utc_text(r.expiration_time) not in funded(_feed(later, demo_profile)).content[0].value


def test_a_depositor_entry_never_dates_before_the_feeds_last_word_on_it():
    """Dated where the logs tell, but never before the entry it follows: otherwise that older entry
    would stay the newest, and each build would tell the change again."""
    base = f"{F.TAG}withdrawals/devnet/"
    told = F.Entry(f"{base}depositor/99", "depositor", 1000, F.STALE_TITLES[False], "", "../withdrawals")
    now = {"staleReason": "requests have waited", "staleFrom": 500, "lastCall": (1, 100)}
    e = F._depositor_entry(base, 300, 2000, now, "Seen.", told)
    assert e.updated == 1000 and e.title == F.STALE_TITLES[True]
    assert F._newest({told.id: told, e.id: e}, f"{base}depositor/") is e  # same time: the later block
    assert F._depositor_entry(base, 300, 2000, now, "Seen.", None).updated == 500  # nothing before it


def test_a_funding_entry_of_another_queue_is_not_carried():
    """A carried funding's words are kept only for the very same funding (time, requester, amount)."""
    entry = F.Entry("tag:x/request/1/funded", "funded", 100, "Request 1 funded: 1 AVAX set aside for 0xaaaa…aaaa", "new",
                    "0xaaaa")
    same = dataclasses.replace(entry, content="as published")
    assert F._as_published(entry, {entry.id: same}) is same
    for other in (dataclasses.replace(same, updated=99), dataclasses.replace(same, link="0xbbbb"),
                  dataclasses.replace(same, title="Request 1 funded: 2 AVAX")):
        assert F._as_published(entry, {entry.id: other}) is entry
