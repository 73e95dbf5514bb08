"""Helpers the tests share: the devnet's chain, browsers, stand-ins, expected values."""
from __future__ import annotations

import time


def utc_text(ts: float, date: str = "%Y-%m-%d") -> str:
    """A time as people read it on the API's pages and messages, written here apart from the code
    under test: UTC to the second, to the minute when the time is on a whole one."""
    return time.strftime(f"{date} %H:%M{'' if int(ts) % 60 == 0 else ':%S'} UTC", time.gmtime(ts))
