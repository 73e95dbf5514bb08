"""`publisher serve` under loopback load: requests/s and latency percentiles for N requests from C
concurrent clients, each on a new connection, over static files and the rewards function.

    python benchmarks/bench_serve.py [--requests 20000] [--concurrency 50] [--json FILE]

Builds the demo devnet's API into a temporary directory, serves it with the real CLI in a
subprocess, and reports the kernel's listen-queue overflow counter alongside (it is machine-wide:
other processes' overflows count too). ``--json`` writes the figures for docs/performance.md.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import record
from support import load


def listen_overflows() -> int:
    lines = [line.split() for line in Path("/proc/net/netstat").read_text().splitlines() if line.startswith("TcpExt:")]
    return int(dict(zip(lines[0], lines[1], strict=True))["ListenOverflows"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--json", dest="json_path", help="also write the figures here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        subprocess.run([sys.executable, "-m", "publisher.cli", "build", "--out", str(out)], check=True,
                       stdout=subprocess.DEVNULL)
        proc = subprocess.Popen([sys.executable, "-m", "publisher.cli", "serve", "--dir", str(out), "--port", "0"],
                                stdout=subprocess.PIPE, text=True)
        try:
            port = int(re.search(r":(\d+)/", proc.stdout.readline()).group(1))
            paths = ["/prices", "/rewards/byStake?ggpStaked=1500&avaxStaked=1000", "/metrics",
                     "/rewards/byStake?ggpStaked=200&avaxStaked=2000", "/stakers", "/validators"]
            before, load_before = listen_overflows(), record.load()
            got = load.run(port, paths, total=args.requests, concurrency=args.concurrency)
            after, load_after = listen_overflows(), record.load()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(f"requests {got.requests} at {args.concurrency} concurrent: {got.rps:.0f} req/s, "
          f"p50 {got.pct(0.5) * 1000:.1f} ms, p99 {got.pct(0.99) * 1000:.1f} ms, max {max(got.latencies) * 1000:.0f} ms, "
          f"{len(got.errors)} errors, listen overflows +{after - before}; load average {os.getloadavg()[0]:.1f}")
    if args.json_path:
        record.write(args.json_path, {
            "requests": got.requests, "concurrency": args.concurrency, "paths": paths, "requests_per_second": got.rps,
            "p50_ms": got.pct(0.5) * 1000, "p99_ms": got.pct(0.99) * 1000, "max_ms": max(got.latencies) * 1000,
            "errors": len(got.errors), "listen_overflows": after - before,
        }, [load_before, load_after])


if __name__ == "__main__":
    main()
