"""What every benchmark's JSON report carries besides its figures: the command that measured them,
when, at which commit, on what machine, and how loaded that machine was (it is shared, so wall
seconds mean little without the load). `make bench` writes the reports into benchmarks/results/,
and benchmarks/report.py renders docs/performance.md's tables from them.
"""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def load() -> float:
    """The one-minute load average now."""
    return round(os.getloadavg()[0], 2)


def speed() -> float:
    """Microseconds for ``sum(range(100))``, the best of five: how fast this machine runs Python
    now. The shared machine's speed moves by a factor of two within an hour (its host throttles
    it), which no load average shows; a report carries it from its start and its end."""
    return round(min(timeit.repeat("sum(range(100))", number=20_000, repeat=5)) / 20_000 * 1e6, 3)


SPEED_AT_START = speed()  # measured when a benchmark imports this module, before it measures anything


class Loads:
    """The load averages seen during a run: its span is what a report states."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    def sample(self) -> float:
        self.seen.append(load())
        return self.seen[-1]


def machine() -> dict:
    """Cores this process may use, CPU model, memory, the temporary folder's file system, Python."""
    model, memory = "", 0.0
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
        with open("/proc/meminfo") as fh:
            memory = next((int(line.split()[1]) / 1024**2 for line in fh if line.startswith("MemTotal:")), 0.0)
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cores": cores, "cpu": model, "memory_gb": round(memory), "filesystem": filesystem(tempfile.gettempdir()),
            "python": sys.version.split()[0]}


def filesystem(path: str) -> str:
    """The type of the file system holding ``path`` (from /proc/mounts), or "" where unknown."""
    best, kind = "", ""
    try:
        with open("/proc/mounts") as fh:
            for line in fh:
                _, point, fs = line.split()[:3]
                if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
                    best, kind = point, fs
    except OSError:
        pass
    return kind


def _git(*args: str) -> str:
    try:
        run = subprocess.run(["git", *args], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return run.stdout.strip() if run.returncode == 0 else ""


def command(argv: list[str] | None = None) -> str:
    """The command line that measured a report, without where it wrote the report."""
    argv = list(sys.argv if argv is None else argv)
    words, skip = [], False
    for word in argv[1:]:
        if skip:
            skip = False
        elif word == "--json":
            skip = True
        elif not word.startswith("--json="):
            words.append(word)
    return " ".join(["python", f"benchmarks/{Path(argv[0]).name}", *words])


# What a measurement depends on: the checkout but the reports and the page rendered from them,
# which a run of several benchmarks rewrites as it goes.
_MEASURED = (":/", ":(top,exclude)benchmarks/results", ":(top,exclude)docs/performance.md")


def write(path: str | Path, figures: dict, loads: list[float]) -> None:
    """Write ``figures`` as a report to ``path``, stamped with how and where they were measured."""
    figures = dict(figures)
    report = {
        "recorded": {"source": "measured", "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
                     "commit": _git("rev-parse", "--short", "HEAD") or None,
                     "uncommitted_changes": bool(_git("status", "--porcelain", "--untracked-files=no", *_MEASURED))},
        "command": command(),
        "load": [min(loads), max(loads)] if loads else None,
        **figures,
        "machine": {**machine(), "speed_us": [SPEED_AT_START, speed()], **figures.get("machine", {})},
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(report, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    print(f"wrote {path}")
