"""The one number-formatting rule of the API (DESIGN §6 units rule), shared with the rewards
function through ``compute/rewards.py`` (which must stay standard-library only).

Token amounts: JSON numbers in whole tokens. Percentages: JSON numbers in percent. Both are the
correctly rounded double of the exact ratio (Python's int / int), so the same wei always gives the
same bytes.
"""
from __future__ import annotations

from ..compute.rewards import WAD, canonical_json, canonical_value, pct

__all__ = ["WAD", "dumps", "dumps_value", "pct_wad", "tokens"]


def tokens(wei: int, decimals: int = 18) -> float:
    return wei / 10**decimals


pct_wad = pct  # a 1e18-scaled ratio (1e18 = 100 %) in percent
dumps = canonical_json  # canonical JSON bytes: sorted keys, compact, UTF-8, no NaN/Infinity
dumps_value = canonical_value  # the same without the trailing newline
