"""Times as the API writes them, in UTC, one way everywhere.

A time for people keeps its seconds unless it falls on a whole minute: the contracts enforce their
times to the second, and a deadline or an opening shown to the minute is up to 59 s off in one
direction (a reclaim "from 14:32" reverts until 14:32:17).
"""
from __future__ import annotations

import time


def _clock(tm: time.struct_time) -> str:
    return time.strftime("%H:%M" if tm.tm_sec == 0 else "%H:%M:%S", tm)


def when(t: float) -> str:
    """"2026-12-31 14:32:17 UTC"; "2026-12-31 00:00 UTC" on a whole minute."""
    tm = time.gmtime(t)
    return f"{time.strftime('%Y-%m-%d', tm)} {_clock(tm)} UTC"


def human(t: float) -> str:
    """A date in words for the pages: "27 Mar 2026, 14:31:05 UTC"."""
    tm = time.gmtime(t)
    return f"{tm.tm_mday} {time.strftime('%b %Y', tm)}, {_clock(tm)} UTC"


def day(t: float) -> str:
    """"2026-12-31"."""
    return time.strftime("%Y-%m-%d", time.gmtime(t))


def clock(t: float) -> str:
    """The time of day: "14:32:17 UTC"; "14:32 UTC" on a whole minute."""
    return f"{_clock(time.gmtime(t))} UTC"


def iso(t: float) -> str:
    """RFC 3339 to the second, for machines: "2026-12-31T14:32:17Z"."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
