"""Forked workers: a job split n ways, each share in its own process, its result sent back pickled."""
from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from ..errors import PublisherError
from ..interrupts import Held


def cores() -> int:
    """The worker count that uses the machine: one per core this process may run on (one where
    processes cannot fork)."""
    if not hasattr(os, "fork"):
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Workers:
    """``job(share, n)`` for every share of ``n``, each in a process forked on entry, while the
    caller works on: forked after everything the job reads is in memory, a worker is sent nothing
    and returns only its result. With ``n`` 1 the job runs inline, in ``results``."""

    def __init__(self, n: int, job: Callable[[int, int], Any]):
        if n < 1:
            raise ValueError(f"{n} workers")
        self.n, self.job = n, job
        self.children: list[tuple[int, int]] = []  # (pid, read end of its pipe)

    @property
    def forked(self) -> bool:
        return self.n > 1

    def __enter__(self) -> Workers:
        try:
            for share in range(self.n if self.forked else 0):
                self._fork(share)
        except BaseException:  # a Ctrl-C among the forks: no worker is left behind
            self.__exit__()
            raise
        return self

    def _fork(self, share: int) -> None:
        r, w = os.pipe()
        # A Ctrl-C landing inside fork() would be raised in the interpreter's fork hooks, which
        # swallow it, and the run would go on: it is held, and raised again once the worker is on
        # the list that __exit__ stops.
        with Held() as held:
            pid = os.fork()
            if pid == 0:
                held.release()
                self._work(share, r, w)
            self.children.append((pid, r))
            os.close(w)

    def _work(self, share: int, r: int, w: int) -> NoReturn:
        """The worker: never returns into the caller's code."""
        status = 1
        try:
            # A collection would write to every object it visits, copying pages the
            # worker only reads: a worker lives for one job and never collects.
            gc.disable()
            os.close(r)
            try:
                result: tuple = ("ok", self.job(share, self.n))
            except BaseException as exc:  # every failure goes to the parent
                result = ("error", exc)
            try:
                data = pickle.dumps(result)
            except Exception:  # an exception that does not pickle: its text
                data = pickle.dumps(("error", PublisherError(repr(result[1]))))
            with os.fdopen(w, "wb") as pipe:
                pipe.write(data)
            status = 0
        finally:
            os._exit(status)

    def results(self) -> Iterator[Any]:
        """Each share's result, in share order; a worker's failure is raised here."""
        if not self.forked:
            yield self.job(0, 1)
        while self.children:
            pid, r = self.children[0]
            with os.fdopen(r, "rb") as pipe:
                data = pipe.read()
            os.waitpid(pid, 0)
            self.children.pop(0)
            if not data:
                raise PublisherError("a build worker died without an answer")
            kind, value = pickle.loads(data)
            if kind == "error":
                raise value
            yield value

    def __exit__(self, *exc) -> None:
        for pid, r in self.children:  # left when the caller failed: stop them
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
        self.children.clear()
