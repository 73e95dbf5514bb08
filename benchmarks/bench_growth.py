"""Benchmark: how a full build grows with the protocol's size.

Run: python benchmarks/bench_growth.py [--sizes 1k,10k,30k,100k] [--runs 1] [--json FILE]

For each size (stakers; minipools in proportion, as the `scale` scenario: 10k = `scale`), seeds
the devnet in process and runs the real CLI, `publisher build --rpc-url …`, as a subprocess into an
empty folder. Records the seeding time, the build's wall time, the peak RSS of the build process
(its own rusage, from wait4), the files it wrote and the requests it made (from its printed
summary), the time a bare loop takes to create the same files on the same disk (the disk's own
share), and the log-log slope of each between consecutive sizes (1.0: linear). The build's CPU time (user + system, from the same rusage) is the figure to compare on a
shared machine: wall seconds there mostly measure the other load. Prints a table and the
machine's load average, and with ``--json`` writes the figures for docs/performance.md
(benchmarks/report.py); asserts nothing.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import record
from ggp_devnet import running
from ggp_devnet.changes import ordinary_head

SLOPED = ("seconds", "cpu_seconds", "peak_rss_mb", "seed_seconds", "disk_seconds")
NAMED = {"1k": 1_000, "3k": 3_000, "10k": 10_000, "30k": 30_000, "100k": 100_000}


def parse_sizes(text: str) -> list[int]:
    return sorted(NAMED[s] if s in NAMED else int(s) for s in text.split(",") if s)


def build_once(net, out: Path) -> dict:
    """`publisher build` against the running devnet: wall seconds, peak RSS and its summary."""
    # No run deadline: at 100 000 stakers on a loaded machine a build can outlast the 240 s that
    # suits the mainnet cadence, and the benchmark measures it rather than stopping it.
    env = {**os.environ, "PUBLISHER_RUN_DEADLINE": "0", "PUBLISHER_VALIDATOR_API_URL": net.services["validator_api"],
           "PUBLISHER_PCHAIN_RPC_URL": net.services["pchain_rpc"], "PUBLISHER_PRICE_API_URL": net.services["price_api"]}
    cmd = [sys.executable, "-m", "publisher.cli", "build", "--rpc-url", net.url, "--out", str(out)]
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, env=env)
        # wait4 rather than RUSAGE_CHILDREN, which is the largest of every child so far, anvil included.
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        text, errors = stdout.read().decode(), stderr.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"build failed ({proc.returncode}): {errors.strip()[-500:]}")
    built = re.search(r"built\s+(\d+) endpoints, (\d+) files, ([\d,]+) bytes", text)
    rpc = re.search(r"requests\s+(\d+) HTTP, (\d+) JSON-RPC", text)
    apis = re.search(r"sources\s+(\d+) HTTP requests", text)
    return {
        "seconds": seconds, "peak_rss_mb": usage.ru_maxrss / 1024, "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "files": int(built.group(2)), "bytes": int(built.group(3).replace(",", "")),
        "rpc_http_requests": int(rpc.group(1)), "json_rpc_calls": int(rpc.group(2)),
        "api_requests": int(apis.group(1)) if apis else 0, "load_before": round(load, 2),
    }


def disk_seconds(out: Path) -> float:
    """The disk's own share: the time a bare loop takes to create the build's files (same names,
    same sizes, same folders) in an empty folder beside it. File creation is not linear in the
    number of files on every file system; this says how much of a build's slope is the disk's."""
    from publisher.build.tree import RECORD
    from publisher.endpoints.registry import file_for

    files = json.loads((out / RECORD).read_bytes())["files"]
    with tempfile.TemporaryDirectory(prefix="bench-disk-", dir=out.parent) as tmp:
        made: set[str] = set()
        t0 = time.perf_counter()
        for path, entry in files.items():
            name = f"{tmp}/{file_for(path)}"
            folder = os.path.dirname(name)
            if folder not in made:
                os.makedirs(folder, exist_ok=True)
                made.add(folder)
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, bytes(entry[1]))
            os.close(fd)
        return time.perf_counter() - t0


def measure(stakers: int, runs: int) -> dict:
    t0 = time.perf_counter()
    with running("scale", stakers=stakers) as net:
        ordinary_head(net)
        row = {"stakers": len(net.scenario.stakers), "minipools": len(net.scenario.minipools),
               "scenario": net.scenario.name, "seed_seconds": round(net.seconds, 2)}
        print(f"{row['scenario']}: {row['stakers']:,} stakers, {row['minipools']:,} minipools seeded in "
              f"{net.seconds:.1f}s (devnet up in {time.perf_counter() - t0:.1f}s)", flush=True)
        got = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
                got.append(build_once(net, Path(tmp) / "out"))
                got[-1]["disk_seconds"] = disk_seconds(Path(tmp) / "out")
            print(f"  build {got[-1]['seconds']:.1f}s, peak RSS {got[-1]['peak_rss_mb']:.0f} MB, "
                  f"creating its files alone {got[-1]['disk_seconds']:.1f}s, load {got[-1]['load_before']}", flush=True)
    for key in ("seconds", "peak_rss_mb", "cpu_seconds", "disk_seconds"):
        row[key] = round(statistics.median(g[key] for g in got), 2)
    last = got[-1]
    for key in ("files", "bytes", "rpc_http_requests", "json_rpc_calls", "api_requests"):
        row[key] = last[key]
    row["requests"] = last["rpc_http_requests"] + last["api_requests"]
    row["load"] = [g["load_before"] for g in got]
    return row


def slopes(rows: list[dict]) -> None:
    """Log-log slope of seconds and RSS from the previous size: 1.0 grows in proportion."""
    for prev, row in itertools.pairwise(rows):
        span = math.log(row["stakers"] / prev["stakers"])
        for key in SLOPED:
            row[f"slope_{key}"] = round(math.log(row[key] / prev[key]) / span, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1k,10k,30k", help="comma-separated staker counts or 1k/10k/30k/100k")
    ap.add_argument("--runs", type=int, default=1, help="builds per size (the median is reported)")
    ap.add_argument("--json", dest="json_path", help="also write the report here")
    args = ap.parse_args()

    rows = [measure(n, args.runs) for n in parse_sizes(args.sizes)]
    slopes(rows)
    print()
    print(f"{'stakers':>8} {'minipools':>9} {'seed s':>7} {'build s':>8} {'slope':>6} {'CPU s':>7} {'slope':>6} "
          f"{'disk s':>7} {'slope':>6} {'peak RSS MB':>12} {'slope':>6} {'files':>8} {'requests':>9} {'(RPC+API)':>10} {'load':>6}")
    for r in rows:
        split = f"{r['rpc_http_requests']}+{r['api_requests']}"
        print(f"{r['stakers']:>8,} {r['minipools']:>9,} {r['seed_seconds']:>7.1f} {r['seconds']:>8.1f} "
              f"{r.get('slope_seconds', ''):>6} {r['cpu_seconds']:>7.1f} {r.get('slope_cpu_seconds', ''):>6} "
              f"{r['disk_seconds']:>7.1f} {r.get('slope_disk_seconds', ''):>6} {r['peak_rss_mb']:>12.0f} {r.get('slope_peak_rss_mb', ''):>6} "
              f"{r['files']:>8,} {r['requests']:>9} {split:>10} "
              f"{max(r['load']):>6.1f}")
    report: dict = {"loadavg_end": [round(x, 2) for x in os.getloadavg()], "sizes": rows}
    if len(rows) > 1:
        span = math.log(rows[-1]["stakers"] / rows[0]["stakers"])
        report["slope_first_to_last"] = {k: round(math.log(rows[-1][k] / rows[0][k]) / span, 2)
                                         for k in SLOPED}
        print(f"slope {rows[0]['stakers']:,} -> {rows[-1]['stakers']:,}: {report['slope_first_to_last']}")
    print(f"machine: {os.cpu_count()} cores, load average now {report['loadavg_end']}")
    if args.json_path:
        record.write(args.json_path, report, [x for r in rows for x in r["load"]] + [report["loadavg_end"][0]])


if __name__ == "__main__":
    main()
