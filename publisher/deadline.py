"""Wall-clock deadlines that a slow source cannot stretch.

Socket timeouts bound each ``recv``, so a server that drips one byte every few seconds keeps a
request alive forever. A deadline here is a real-time alarm (``SIGALRM``): when it expires, the
exception is raised inside whatever blocking call the main thread is in, headers or body. Deadlines
nest (a request's inside the run's); the innermost earliest one fires first and the outer ones keep
counting. Off the main thread (where signals cannot be delivered) only the cooperative checks
(``remaining``/``check``) apply.
"""
from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")

# A publish every 5 minutes (the mainnet cadence), one run at a time: a run that cannot finish in
# 4 minutes is stuck, and ending it leaves room for the next scheduled run.
RUN_DEADLINE = 240.0
ENV_RUN_DEADLINE = "PUBLISHER_RUN_DEADLINE"


class DeadlineExceeded(BaseException):
    """A deadline expired. BaseException, like KeyboardInterrupt, so that no ``except Exception``
    between the alarm and the owner of the deadline can swallow it."""

    def __init__(self, what: str, seconds: float, token: object = None, during: str | None = None):
        waiting = f" while waiting for the {during}" if during and during != what else ""
        super().__init__(f"{what} exceeded its {seconds:g}s deadline{waiting}")
        self.what, self.seconds, self.token = what, seconds, token

    def mine(self, token: object) -> bool:
        """Whether this is the deadline opened as ``token`` (and not an outer one)."""
        return token is not None and self.token is token


_stack: list[tuple[float, str, float, object]] = []  # (expires at, what, seconds, token)
# Deadlines that have fired: never armed again, so the one exception that names what the run was
# waiting for is not replaced by a second alarm while the stack unwinds.
_fired: set[int] = set()


def _arm() -> None:
    waiting = [e[0] for e in _stack if id(e[3]) not in _fired]
    if not waiting:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return
    signal.setitimer(signal.ITIMER_REAL, max(min(waiting) - time.monotonic(), 1e-4))


def _on_alarm(signum, frame) -> None:
    now = time.monotonic()
    due = [e for e in _stack if e[0] <= now + 1e-3 and id(e[3]) not in _fired]
    if not due:  # woke early (timer granularity): wait for the rest
        _arm()
        return
    # The outermost expired deadline wins: its owner is the one that has to give up.
    _at, what, seconds, token = due[0]
    _fired.add(id(token))
    # Name what the run was stuck on (the innermost deadline: a request to a source).
    raise DeadlineExceeded(what, seconds, token, during=_stack[-1][1])


def _usable() -> bool:
    return threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")


@contextmanager
def deadline(seconds: float | None, what: str) -> Iterator[object]:
    """Raise ``DeadlineExceeded(what)`` in the body once ``seconds`` of wall time have passed.
    Yields a token that ``DeadlineExceeded.mine`` recognizes (None when no alarm could be set)."""
    if seconds is None or seconds <= 0 or not _usable():
        yield None
        return
    token = object()
    entry = (time.monotonic() + seconds, what, seconds, token)
    previous = signal.getsignal(signal.SIGALRM)
    if not _stack and previous not in (signal.SIG_DFL, signal.SIG_IGN, None, _on_alarm):
        # Someone else owns SIGALRM (a test runner's timeout): leave it alone.
        yield None
        return
    signal.signal(signal.SIGALRM, _on_alarm)
    _stack.append(entry)
    try:
        _arm()
        yield token
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)  # nothing may fire while the stack changes
        finally:
            _stack.remove(entry)
            _fired.discard(id(token))
            if not _stack:
                signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
            _arm()


@contextmanager
def waiting_for(what: str) -> Iterator[None]:
    """While the body waits on another thread's work (a request of its own): a deadline that
    fires meanwhile names ``what`` as what the run was waiting for, as this thread's own request
    would. No alarm of its own."""
    if not _stack or not _usable():
        yield
        return
    entry = (math.inf, what, math.inf, object())
    _stack.append(entry)
    try:
        yield
    finally:
        _stack.remove(entry)


class Background(Generic[T]):
    """``work()`` on a daemon thread from now on. ``result``, in the caller's thread, waits for it
    within the caller's deadlines (one that fires meanwhile names ``waiting_for``) and gives its
    value or raises its failure there; a run that fails or ends meanwhile does not wait for it."""

    def __init__(self, work: Callable[[], T], name: str, waiting_for: str):
        self.waiting_for = waiting_for
        self.outcome: tuple[bool, T | BaseException] | None = None
        self.thread = threading.Thread(target=self._run, args=(work,), name=name, daemon=True)
        self.thread.start()

    def _run(self, work: Callable[[], T]) -> None:
        try:
            self.outcome = (True, work())
        except BaseException as exc:  # raised in the caller's thread, by result()
            self.outcome = (False, exc)

    def result(self) -> T:
        with waiting_for(self.waiting_for):
            self.thread.join()
        assert self.outcome is not None  # the thread always sets one
        ok, value = self.outcome
        if not ok:
            raise value  # type: ignore[misc]
        return value  # type: ignore[return-value]


def run_seconds() -> float:
    """The run deadline: ``PUBLISHER_RUN_DEADLINE`` seconds, else RUN_DEADLINE; 0 disables it."""
    raw = os.environ.get(ENV_RUN_DEADLINE, "").strip()
    if not raw:
        return RUN_DEADLINE
    try:
        value = float(raw)
    except ValueError:
        from .errors import PublisherError

        raise PublisherError(f"{ENV_RUN_DEADLINE} must be a number of seconds") from None
    if not 0 <= value <= 86_400:
        from .errors import PublisherError

        raise PublisherError(f"{ENV_RUN_DEADLINE} must be between 0 and 86400 seconds")
    return value
