"""Ctrl-C and SIGTERM held across code where the interpreter would drop them.

The commands turn both signals into KeyboardInterrupt (``cli.stop_on_signals``). Raised inside a
finalizer or the interpreter's fork hooks, that exception is printed ("Exception ignored") and
dropped, and the run goes on. ``Held`` notes the signal instead and sends it again on leaving, so
the handler raises in the caller's own code.
"""
from __future__ import annotations

import signal
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Held:
    """``with Held():`` notes SIGINT and SIGTERM while the block runs, then raises the first one
    noted again. Only the main thread can set handlers: elsewhere it holds nothing."""

    def __init__(self) -> None:
        self.noted: list[int] = []
        self.previous: dict[int, object] = {}

    def __enter__(self) -> Held:
        if threading.current_thread() is threading.main_thread():
            self.previous = {s: signal.signal(s, self._note) for s in SIGNALS}
        return self

    def _note(self, signum, frame) -> None:
        self.noted.append(signum)

    def release(self) -> None:
        """The previous handlers back (a forked child calls it before its own work)."""
        for s, handler in self.previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)  # type: ignore[arg-type]
        self.previous = {}

    def __exit__(self, *exc) -> None:
        self.release()
        if self.noted:
            signal.raise_signal(self.noted[0])


# Every SIGINT or SIGTERM the commands' handler saw (``cli.stop_on_signals``), so a loop can stop
# on one that a finalizer dropped: raised there, it would never reach the loop.
_RECEIVED: list[int] = []


def note(signum: int) -> None:
    _RECEIVED.append(signum)


def received() -> bool:
    """Whether the commands' handler has seen SIGINT or SIGTERM in this process."""
    return bool(_RECEIVED)
