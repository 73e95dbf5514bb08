"""JSON from outside the process (a node's answers, an API's, a file a run reads back), parsed
within a bounded depth whatever recursion limit the process runs with: the C parser recurses on
the C stack, and a library that raises the interpreter's limit (py_ecc, which web3 pulls in, sets
100 000) would let a crafted, deeply nested document overflow that stack and crash the interpreter
instead of raising RecursionError. Too deep is a ValueError, as any other malformed JSON."""
from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import Any

DEPTH = 2000  # far deeper than any document of ours, far shallower than the C stack allows

# The limit is the interpreter's, shared by every thread: the first parse in lowers it and the last
# one out puts it back, so no parse runs under the raised limit while another is on its way out.
_lock = threading.Lock()
_inside = 0
_saved = 0


def loads(data: str | bytes, **kwargs: Any) -> Any:
    """``json.loads(data, **kwargs)`` within ``DEPTH``."""
    return within(json.loads, data, **kwargs)


def within(parse: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``parse(*args, **kwargs)`` with the recursion limit at most ``DEPTH``."""
    global _inside, _saved
    with _lock:
        if _inside == 0:
            _saved = sys.getrecursionlimit()
            if _saved > DEPTH:
                sys.setrecursionlimit(DEPTH)
        _inside += 1
    try:
        return parse(*args, **kwargs)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {DEPTH} levels") from None
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0 and _saved > DEPTH:
                sys.setrecursionlimit(_saved)
