"""Is the withdraw queue's depositor keeping up? Requests are funded only when it calls
``depositFromStaking``; its calls are known from the queue's logs (snapshot.QueueActivity)."""
from __future__ import annotations

from ..snapshot import Snapshot


def depositor_stale(snap: Snapshot, max_age_seconds: int) -> str | None:
    """Why the depositor looks stale at the snapshot's block, in one line, or None: its last call
    on record is more than ``max_age_seconds`` old at the block's time, or no call is on record
    while requests wait. None too when there is no queue or its logs were not read (nothing is
    known, which the published record says separately)."""
    a, q = snap.queue_activity, snap.withdraw_queue
    if a is None or q is None:
        return None
    waiting = sum(1 for r in q.requests if not r.fulfilled)
    line = f"; {waiting} request{'s' if waiting != 1 else ''} wait{'s' if waiting == 1 else ''} in line" if waiting else ""
    if a.last_call_time is None:
        if not waiting:
            return None
        return f"no call of the depositor (depositFromStaking) is on record in the queue's logs{line}"
    age = snap.block.timestamp - a.last_call_time
    if age <= max_age_seconds:
        return None
    return (f"the depositor last called depositFromStaking {duration(age)} ago (block {a.last_call_block}, "
            f"at {a.last_call_time}), longer than the {duration(max_age_seconds)} allowed{line}")


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
