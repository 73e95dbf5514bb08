"""Is the withdraw queue's depositor keeping up? Requests are funded only when it calls
``depositFromStaking``; its calls are known from the queue's logs (snapshot.QueueActivity)."""
from __future__ import annotations

from ..snapshot import Receipt, Snapshot
from ..utc import when


def depositor_stale(snap: Snapshot, max_age_seconds: int) -> str | None:
    """Why the depositor looks stale at the snapshot's block, in one line, or None: requests wait
    in line, and no call of it is on record for more than ``max_age_seconds`` while they did. A
    call that finds the line empty leaves no log, so the wait counts from the later of its last
    call on record and the moment the line last stopped being empty (a depositor that calls only
    when a request waits is not stale for the weeks the line was empty). The words name dates, not
    an age, so they change only when one of those moments does. None too when there is no queue or
    its logs were not read (nothing is known, which the published record says separately)."""
    since = waited_since(snap)
    if since is None or snap.block.timestamp - since <= max_age_seconds:
        return None
    a = snap.queue_activity
    assert a is not None
    bound = f"longer than the {duration(max_age_seconds)} allowed"
    if since == a.last_call_time:
        return (f"the depositor last called depositFromStaking at {when(since)} (block {a.last_call_block}), and "
                f"requests have waited in line since with no call on record, {bound}")
    # Else the wait began when the line last stopped being empty.
    return (f"requests have waited in line since {when(since)} with no call of the depositor (depositFromStaking) on "
            f"record since, {bound}")


def waited_since(snap: Snapshot) -> int | None:
    """Since when requests have waited in line with no call of the depositor on record: the later
    of its last call and the moment the line last stopped being empty. None when nothing waits, or
    the queue's logs were not read."""
    a, q = snap.queue_activity, snap.withdraw_queue
    if a is None or q is None or all(r.fulfilled for r in q.requests):
        return None
    busy, last = line_busy_since(snap), a.last_call_time
    return busy if last is None or last < busy else last


def line_busy_since(snap: Snapshot) -> int:
    """When the withdrawal line last stopped being empty: the start of the unbroken run of requests
    in line that holds those waiting now, from every request's filing and departure (funded, or
    closed while in line) on record. Without receipts, the oldest filing among those waiting."""
    q = snap.withdraw_queue
    assert q is not None
    oldest = min(r.request_time for r in q.requests if not r.fulfilled)
    receipts = snap.queue_receipts
    if not receipts:
        return oldest
    hit = _BUSY.get(id(receipts))
    if hit is not None and hit[0] is receipts:
        since = hit[1]
    else:
        since = _run_start(receipts)
        if since is None:  # filings out of order: the same walk over them sorted
            since = _run_start(sorted(receipts, key=lambda rc: (rc.requested.time, rc.id)))
        _BUSY.clear()
        _BUSY[id(receipts)] = (receipts, since)
    # Receipts lacking the requests waiting now (no run reaches the present): the oldest filing.
    return oldest if since is None else min(since, oldest)


def _run_start(receipts) -> int | None:
    """The start of the run of requests in line that reaches the present, walking the receipts
    back from the newest filing: a request still in line starts it, and an earlier one extends it
    while it left the line after the run's start (one that left at or before it left the line
    empty). None when no request is still in line, or the filings are out of order."""
    start, after = None, _NEVER
    for rc in reversed(receipts):
        filed = rc.requested.time
        if filed > after:
            return None
        after = filed
        left = _left(rc)
        if left == _NEVER or (start is not None and left > start):
            start = filed
    return start


_NEVER = 2**63  # the departure of a request still in line
# The last answer, by the receipts it was made from (held, so their id stays theirs): a build asks
# for the wait from several files.
_BUSY: dict[int, tuple[tuple, int | None]] = {}


def _left(rc: Receipt) -> int:
    """When a request left the line: its funding, or its closing while in line; never, while in it."""
    if rc.funded is not None:
        return rc.funded.time
    return rc.closed_at.time if rc.closed and rc.closed_at is not None else _NEVER


def duration(seconds: int) -> str:
    """``seconds`` in words: days (one decimal) from a day on, else hours, else minutes or seconds."""
    if seconds >= 86_400:
        return _unit(seconds / 86_400, "day")
    if seconds >= 3_600:
        return _unit(seconds / 3_600, "hour")
    if seconds >= 60:
        return _unit(seconds / 60, "minute")
    return _unit(seconds, "second")


def _unit(value: float, name: str) -> str:
    text = f"{value:.1f}".removesuffix(".0")
    return f"{text} {name}{'' if text == '1' else 's'}"
