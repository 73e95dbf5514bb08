"""JSON from outside the process (a node's answers, an API's, a file a run reads back), parsed
within a bounded depth whatever recursion limit the process runs with: the C parser recurses on
the C stack, and a library that raises the interpreter's limit (py_ecc, which web3 pulls in, sets
100 000) would let a crafted, deeply nested document overflow that stack and crash the interpreter
instead of raising RecursionError."""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

DEPTH = 2000  # far deeper than any document of ours, far shallower than the C stack allows


def loads(data: str | bytes, **kwargs: Any) -> Any:
    """``json.loads(data, **kwargs)`` within ``DEPTH``."""
    return within(json.loads, data, **kwargs)


def within(parse: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``parse(*args, **kwargs)`` with the recursion limit at most ``DEPTH``."""
    limit = sys.getrecursionlimit()
    if limit <= DEPTH:
        return parse(*args, **kwargs)
    sys.setrecursionlimit(DEPTH)
    try:
        return parse(*args, **kwargs)
    finally:
        sys.setrecursionlimit(limit)
