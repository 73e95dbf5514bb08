"""Benchmark: a full `publisher build` on the devnet `scale` scenario (10 000 stakers, 3 000
minipools): snapshot + render + validate + write, reported per stage.

Run: python benchmarks/bench_build.py  (prints a table; no assertions — tests assert behaviour)
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from publisher.build import render, write_tree
from publisher.collect import collect, devnet_profile
from publisher.config import load_profile
from publisher.devnet import running
from publisher.validate import validate


def main() -> None:
    print(f"machine: {os.cpu_count()} cores")
    with running("scale") as net:
        print(f"devnet 'scale' seeded in {net.seconds:.1f}s")
        profile = devnet_profile(load_profile("devnet"), net)
        t0 = time.perf_counter()
        got = collect(profile)
        t1 = time.perf_counter()
    files = render(got.snapshot, profile)
    t2 = time.perf_counter()
    problems = validate(files, feed_max_age=profile.feed_max_age)
    t3 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(Path(tmp) / "out", files)
        t4 = time.perf_counter()
    size = sum(len(b) for b in files.values())
    c = got.counters
    print(f"{'stage':<12}{'seconds':>10}")
    for name, secs in (("snapshot", t1 - t0), ("render", t2 - t1), ("validate", t3 - t2), ("write", t4 - t3), ("total", t4 - t0)):
        print(f"{name:<12}{secs:>10.2f}")
    print(f"files {len(files):,}  bytes {size:,}  stakers {got.snapshot.staker_count:,}  minipools {got.snapshot.minipool_count:,}")
    print(f"snapshot: {c.http_requests} HTTP requests, {c.rpc_calls} JSON-RPC calls, {c.bytes_sent + c.bytes_received:,} bytes")
    print(f"validation problems: {len(problems)}")


if __name__ == "__main__":
    main()
