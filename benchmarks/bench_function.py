"""Benchmark: the function as deployed — the zip's handler, warm latency per request with params
cached (/rewards/byStake, and /withdrawals/estimate, which serves the whole line per request), cold
import time in fresh interpreters, and the zip's size.

Run: python benchmarks/bench_function.py [--snapshot snap.json] [--requests 20000] [--cold 20] [--json FILE]
Without --snapshot a throwaway demo devnet supplies the params. Cold import runs the way Lambda
does: the zip extracted to a directory nothing may write to (-B), a fresh `python -I -S` per
start, once with the shipped bytecode and once with the sources alone (median of --cold runs each,
interleaved so load on a shared machine hits both alike). Prints a text summary and a JSON report,
and with ``--json`` writes it for docs/performance.md (no assertions — tests assert behaviour).
Targets: p50 <= 100 us, cold import <= 20 ms.
"""
from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import zipfile
from pathlib import Path

import record

from publisher.compute import line as L
from publisher.compute import queue as Q
from publisher.compute import rewards as R
from publisher.compute.params import rewards_params
from publisher.endpoints import rewards as E
from publisher.function.package import RUNTIME, build_zip
from publisher.snapshot import Snapshot

WAD = R.WAD
TARGET_P50_US = 100
TARGET_IMPORT_MS = 20

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import handler
t1 = time.perf_counter()
resp = handler.handler(json.loads(sys.argv[2]), None)
t2 = time.perf_counter()
assert resp["statusCode"] == 200, resp
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_request_ms": (t2 - t1) * 1e3}))
"""


def event(query: str, path: str = "/rewards/byStake") -> dict:
    return {"version": "2.0", "rawPath": path, "rawQueryString": query, "headers": {},
            "requestContext": {"http": {"method": "GET", "path": path}}}


def timed(handler, events: list[dict]) -> list[float]:
    """Microseconds per request, sorted; every answer must be a 200."""
    samples = []
    clock = time.perf_counter_ns
    for e in events:
        t = clock()
        resp = handler(e, None)
        samples.append((clock() - t) / 1000)
        if resp["statusCode"] != 200:
            raise SystemExit(f"unexpected {resp['statusCode']} for {e['rawQueryString']}: {resp['body']}")
    return sorted(samples)


def summary(samples: list[float]) -> dict:
    return {"requests": len(samples), "p50": round(pct(samples, 0.5), 1), "p90": round(pct(samples, 0.9), 1),
            "p99": round(pct(samples, 0.99), 1), "max": round(samples[-1], 1), "mean": round(statistics.fmean(samples), 1)}


def load_snapshot(path: str | None) -> Snapshot:
    if path:
        return Snapshot.load(path)
    from ggp_devnet import devnet_profile, running
    from ggp_devnet.changes import ordinary_head

    from publisher.collect import collect
    from publisher.config import load_profile

    with running("demo") as net:
        ordinary_head(net)
        return collect(devnet_profile(load_profile("devnet"), net)).snapshot


def queries(params: R.Params, n: int, seed: int = 7) -> list[str]:
    """Grid points plus random valid amounts (fractional and whole): what front ends send."""
    rng = random.Random(seed)
    grid = [E.grid_point(params, a, c)["query"] for a in E.GRID_AVAX for c in E.GRID_COLLATERAL_PCT]
    out = []
    for i in range(n):
        if i % 5 == 0:
            out.append(grid[rng.randrange(len(grid))])
        else:
            ggp = rng.randrange(0, 200_000 * WAD) if rng.random() < 0.5 else rng.randrange(0, 200_000) * WAD
            avax = rng.randrange(1, 11) * 1000 * WAD
            out.append(f"ggpStaked={R.whole_tokens(ggp)}&avaxStaked={R.whole_tokens(avax)}")
    return out


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snapshot")
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--cold", type=int, default=20)
    ap.add_argument("--json", dest="json_path", help="also write the report here")
    args = ap.parse_args()

    load_start = record.load()
    snap = load_snapshot(args.snapshot)
    with tempfile.TemporaryDirectory(prefix="bench-function-") as tmp:
        report = run(snap, Path(tmp), args.requests, args.cold)
    w, c = report["warm_us"], report["cold_ms"]
    print(f"zip            {report['zip_bytes']:,} bytes (handler.py, rewards.py, line.py and their bytecode for {report['runtime']})")
    print(f"warm request   p50 {w['p50']} us  p90 {w['p90']} us  p99 {w['p99']} us  over {w['requests']:,} "
          f"requests  [{'ok' if w['p50'] <= TARGET_P50_US else 'over'} target {TARGET_P50_US} us]")
    print(f"bad input      p50 {report['warm_bad_input_us']['p50']} us")
    e = report["estimate_warm_us"]
    print(f"estimate       p50 {e['p50']} us  p90 {e['p90']} us  p99 {e['p99']} us  over {e['requests']:,} requests, "
          f"a line of {report['estimate_line']} ids and {report['estimate_serves']} serves "
          f"[{'ok' if e['p50'] <= TARGET_P50_US else 'over'} target {TARGET_P50_US} us]")
    for kind, label in (("bytecode", "with bytecode"), ("source", "sources only")):
        k = c[kind]
        print(f"cold import    {label:<14} median {k['import_median']} ms  "
              f"[{'ok' if k['import_median'] <= TARGET_IMPORT_MS else 'over'} target {TARGET_IMPORT_MS} ms]; "
              f"first request (params load) {k['first_request_median']} ms; whole process {k['process_median']} ms")
    k = c["estimate"]
    print(f"cold estimate  with bytecode  first /withdrawals/estimate (params load, the line's module imported) "
          f"{k['first_request_median']} ms; whole process {k['process_median']} ms")
    print(f"machine        {report['machine']}")
    print(json.dumps(report, sort_keys=True))
    if args.json_path:
        record.write(args.json_path, report, [load_start, report["machine"]["loadavg"][0]])


def run(snap: Snapshot, tmp: Path, requests: int, cold_runs: int) -> dict:
    doc = rewards_params(snap)
    params = R.parse_params(doc)
    params_file = tmp / "params.json"
    params_file.write_bytes(R.canonical_json(doc))
    queue = Q.estimate_params(snap, None, None)
    assert queue is not None, "the snapshot has no withdrawal queue"
    queue_file = tmp / "queue-params.json"
    queue_file.write_bytes(R.canonical_json(L.document(queue)))
    zip_path, zip_size = build_zip(tmp / "function.zip")
    os.environ["REWARDS_PARAMS_URL"] = params_file.as_uri()
    os.environ["QUEUE_PARAMS_URL"] = queue_file.as_uri()
    os.environ["REWARDS_PARAMS_TTL"] = "3600"  # warm container: params stay cached for the run

    # Warm: the zip's own modules, in this process.
    sys.path.insert(0, str(zip_path))
    zh = importlib.import_module("handler")
    assert zh.__file__.startswith(str(zip_path)), zh.__file__
    events = [event(q) for q in queries(params, requests)]
    assert zh.handler(events[0], None)["statusCode"] == 200  # loads and caches the params
    for e in events[:500]:
        zh.handler(e, None)
    samples = timed(zh.handler, events)
    rng = random.Random(11)
    estimates = [event(f"amount={rng.randrange(1, 5000)}", "/withdrawals/estimate") for _ in range(max(1, requests // 10))]
    timed(zh.handler, estimates[:200])  # loads and caches the queue's params
    estimate_samples = timed(zh.handler, estimates)
    bad = [event("ggpStaked=-1&avaxStaked=1000")] * 2000
    bad_samples = []
    clock = time.perf_counter_ns
    for e in bad:
        t = clock()
        zh.handler(e, None)
        bad_samples.append((clock() - t) / 1000)
    bad_samples.sort()
    gc.collect()

    # Cold: as Lambda starts, the zip extracted to a directory that takes no writes (-B), a fresh
    # interpreter without site-packages with only that directory on sys.path.
    task = tmp / "task"
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(task / "bytecode")
    shutil.copytree(task / "bytecode", task / "source", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PATH": os.environ.get("PATH", ""), "REWARDS_PARAMS_URL": params_file.as_uri(),
           "QUEUE_PARAMS_URL": queue_file.as_uri()}
    # kind -> (directory, the first request): a cold withdrawal estimate also imports the line's
    # module, which the handler leaves to that route.
    starts = {"bytecode": ("bytecode", event("ggpStaked=1500&avaxStaked=1000")),
              "source": ("source", event("ggpStaked=1500&avaxStaked=1000")),
              "estimate": ("bytecode", event("amount=100", "/withdrawals/estimate"))}
    cold: dict[str, list[dict]] = {kind: [] for kind in starts}
    for _ in range(cold_runs):
        for kind, (folder, first) in starts.items():
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", CHILD, str(task / folder), json.dumps(first)],
                                  capture_output=True, text=True, env=env, check=True)
            wall = (time.perf_counter() - t) * 1e3
            cold[kind].append({**json.loads(proc.stdout), "process_ms": wall})
    assert not (task / "source" / "__pycache__").exists()

    calib_us = min(timeit.repeat("sum(range(100))", number=20_000, repeat=5)) / 20_000 * 1e6
    report = {
        "machine": {"cores": os.cpu_count(), "loadavg": [round(x, 2) for x in os.getloadavg()],
                    "python": sys.version.split()[0], "calibration_sum_range_100_us": round(calib_us, 3)},
        "zip_bytes": zip_size,
        "warm_us": summary(samples),
        "estimate_warm_us": summary(estimate_samples),
        "estimate_line": len(queue.entries), "estimate_serves": len(queue.serves),
        "warm_bad_input_us": {"requests": len(bad_samples), "p50": round(pct(bad_samples, 0.5), 1),
                              "p99": round(pct(bad_samples, 0.99), 1)},
        "runtime": RUNTIME,
        "cold_ms": {kind: {"runs": len(runs),
                           "import_median": round(statistics.median(c["import_ms"] for c in runs), 2),
                           "import_min": round(min(c["import_ms"] for c in runs), 2),
                           "first_request_median": round(statistics.median(c["first_request_ms"] for c in runs), 2),
                           "process_median": round(statistics.median(c["process_ms"] for c in runs), 1)}
                    for kind, runs in cold.items()},
        "targets": {"p50_us": TARGET_P50_US, "cold_import_ms": TARGET_IMPORT_MS},
    }
    return report


if __name__ == "__main__":
    main()
