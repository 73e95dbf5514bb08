"""Is the withdraw queue's depositor keeping up? Requests are funded only when it calls
``depositFromStaking``; its calls are known from the queue's logs (snapshot.QueueActivity)."""
from __future__ import annotations

from ..snapshot import Snapshot
from .queue import when


def depositor_stale(snap: Snapshot, max_age_seconds: int) -> str | None:
    """Why the depositor looks stale at the snapshot's block, in one line, or None: requests wait
    in line, and no call of it is on record for more than ``max_age_seconds`` while they did. A
    call that finds the line empty leaves no log, so the wait counts from the later of its last
    call on record and the filing of the oldest request in line (a depositor that calls only when
    a request waits is not stale for the weeks the line was empty). None too when there is no
    queue or its logs were not read (nothing is known, which the published record says
    separately)."""
    a, q = snap.queue_activity, snap.withdraw_queue
    if a is None or q is None:
        return None
    waiting = [r.request_time for r in q.requests if not r.fulfilled]
    if not waiting:
        return None
    oldest = min(waiting)
    last = a.last_call_time
    since = oldest if last is None or last < oldest else last
    age = snap.block.timestamp - since
    if age <= max_age_seconds:
        return None
    n = len(waiting)
    line = f"{n} request{'s' if n != 1 else ''} wait{'s' if n == 1 else ''} in line"
    bound = f"longer than the {duration(max_age_seconds)} allowed"
    if since == last:
        return (f"the depositor last called depositFromStaking {_over(age, max_age_seconds)} ago (block "
                f"{a.last_call_block}, at {when(since)}) while requests waited, {bound}; {line}")
    return (f"no call of the depositor (depositFromStaking) is on record since the oldest request in line was filed "
            f"{_over(age, max_age_seconds)} ago (at {when(since)}), {bound}; {line}")


def _over(age: int, bound: int) -> str:
    """``age`` in words, said to be over ``bound`` where both round to the same words."""
    text = duration(age)
    return f"just over {text}" if text == duration(bound) else text


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
