"""`publisher devnet …` as a user runs it: a subprocess whose output is read line by line as it
comes, waited on for a line, and stopped with Ctrl-C (SIGINT)."""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class DevnetCli:
    def __init__(self, *args: str, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen([sys.executable, "-m", "publisher.cli", "devnet", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        self.lines: list[str] = []
        self._out: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._out.put(line)
        self._out.put(None)

    def wait_for(self, text: str, seconds: float = 120) -> str:
        """All output up to the first line containing ``text``."""
        deadline = time.monotonic() + seconds
        while not any(text in line for line in self.lines):
            assert time.monotonic() < deadline, f"no {text!r} within {seconds}s: {self.lines[-5:]}"
            line = self._out.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, f"devnet exited early: {''.join(self.lines)}{self.proc.stderr.read() if self.proc.stderr else ''}"
            self.lines.append(line)
        return "".join(self.lines)

    def interrupt(self, seconds: float = 90) -> str:
        """Ctrl-C; asserts a clean exit (a bound, not a timing: teardown is slow on a loaded
        machine) and returns the output after the interrupt."""
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.wait(timeout=seconds) == 0
        rest = []
        while (line := self._out.get(timeout=5)) is not None:
            rest.append(line)
        return "".join(rest)

    def __enter__(self) -> DevnetCli:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
