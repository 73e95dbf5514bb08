"""Progress on a terminal, silence in CI logs."""
from __future__ import annotations

import sys


class Progress:
    def __init__(self, enabled: bool | None = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._label = ""
        self._done = 0
        self._total = 0

    def start(self, label: str, total: int) -> None:
        self._label, self._done, self._total = label, 0, total
        self._draw()

    def advance(self, n: int = 1) -> None:
        self._done += n
        self._draw()

    def finish(self) -> None:
        if self.enabled and self._label:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        self._label = ""

    def _draw(self) -> None:
        if self.enabled:
            sys.stderr.write(f"\r\033[K{self._label}: {self._done}/{self._total}")
            sys.stderr.flush()
