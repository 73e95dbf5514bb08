"""The dates the protocol's operator announced, as every endpoint publishes them.

No contract holds them: the profile does (``config.Profile.announcements``, each with its source),
and a build counts from its block's time how far away each one is. /status carries the records,
the dashboard shows them, /withdrawals may use ``window_closed``. The words for holders belong to
the endpoint that speaks to them; here are the dates, their meaning and their source only.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from . import schema as S

if TYPE_CHECKING:
    from ..config import Announcement

DAY = 86_400
WINDOW_END = "withdrawalWindowEnd"

ANNOUNCEMENT_SCHEMA = S.obj({
    "key": {"type": "string", "enum": ["endOfOperations", WINDOW_END],
            "description": "which date: endOfOperations (operations ended) or withdrawalWindowEnd (the "
                           "announced withdrawal window closes)"},
    "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
             "description": "the announced day, YYYY-MM-DD (UTC)"},
    "time": S.described(S.TIMESTAMP, "the moment the date stands for, unix seconds: the start of its day (00:00 UTC); "
                                     "for withdrawalWindowEnd the earliest moment of the day the site shuts down, "
                                     "whose hour is not announced"),
    "meaning": S.described(S.STRING, "what the date means, in one sentence"),
    "source": S.described(S.STRING, "where the operator announced it (no contract holds these dates)"),
    "daysLeft": {"type": "integer", "minimum": 0,
                 "description": "whole days from the block's time to `time`, rounded down (0 on the last day and "
                                "once passed)"},
    "passed": S.described(S.BOOLEAN, "whether the block's time is at or after `time`"),
}, description="a date the protocol's operator announced")
ANNOUNCEMENTS_SCHEMA = S.described(
    S.array(ANNOUNCEMENT_SCHEMA),
    "the dates the protocol's operator announced, which no contract holds (from the network's profile), in time "
    "order, each counted from the block's time; empty when the profile announces none")


def announcement_records(announcements: Iterable[Announcement], now: int) -> list[dict]:
    """One record per announced date as published (ANNOUNCEMENT_SCHEMA), in time order, counted
    from ``now`` (the block's time, unix seconds)."""
    out = []
    for a in sorted(announcements, key=lambda a: (a.time, a.key)):
        at = a.time
        out.append({"key": a.key, "date": a.date, "time": at, "meaning": a.meaning, "source": a.source,
                    "daysLeft": max(0, (at - now) // DAY), "passed": now >= at})
    return out


def window_closed(announcements: Iterable[Announcement], now: int) -> bool:
    """Whether the announced withdrawal window has closed at ``now`` (False when none is announced)."""
    return any(a.key == WINDOW_END and now >= a.time for a in announcements)
