"""The one number-formatting rule of the API (DESIGN §6 units rule).

Token amounts: JSON numbers in whole tokens. Percentages: JSON numbers in percent. Both are the
correctly rounded double of the exact decimal value, so the same wei always gives the same bytes.
"""
from __future__ import annotations

import json
from decimal import Decimal, getcontext

getcontext().prec = 60
WAD = 10**18


def tokens(wei: int, decimals: int = 18) -> float:
    return float(Decimal(wei) / (Decimal(10) ** decimals))


def pct_wad(value: int) -> float:
    """A 1e18-scaled ratio (1e18 = 100 %) in percent."""
    return float(Decimal(value) / Decimal(10**16))


def pct(value: float) -> float:
    return float(value)


def dumps(body) -> bytes:
    """Canonical JSON bytes: sorted keys, compact, UTF-8, NaN/Infinity refused."""
    return (json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n").encode()
