"""The soak of the scheduled publish loop: N runs of the publish workflow's steps (live history
fetched into a fresh out/, `publisher build`, `publisher publish`) against a devnet moved between
runs and moto's S3 server, with random faults (stalls, S3 errors, reorgs, price jumps, missing
history). Prints one line per run and the soak table; exits 1 if any data was lost.

    python benchmarks/soak.py [--runs 50] [--seed 1] [--json FILE]

``--json`` writes the soak table's figures for docs/performance.md.
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import record
from ggp_devnet import running
from ggp_devnet.changes import ordinary_head
from moto.server import ThreadedMotoServer
from support.soak import FAULTS, SLACK, STALL_DEADLINE, soak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", dest="json_path", help="also write the figures here")
    args = ap.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    t0 = time.monotonic()
    loads = record.Loads()
    loads.sample()

    def echo(line: str) -> None:
        print(line, flush=True)
        loads.sample()

    try:
        with running("demo") as net, tempfile.TemporaryDirectory() as tmp:
            ordinary_head(net)
            report = soak(net, f"http://{host}:{port}", Path(tmp), args.runs, seed=args.seed, echo=echo)
    finally:
        server.stop()
    print(report.table())
    print(f"soak took {time.monotonic() - t0:.0f}s")
    for problem in report.lost:
        print(f"LOST {problem}")
    if args.json_path:
        runs = report.runs
        record.write(args.json_path, {
            "runs": len(runs), "seed": args.seed, "seconds": time.monotonic() - t0, "stall_deadline": STALL_DEADLINE,
            "faults": [{"fault": kind, "runs": sum(r.fault == kind for r in runs),
                        "failed": sum(r.fault == kind and not r.ok for r in runs),
                        "longest_seconds": max(r.seconds for r in runs if r.fault == kind)}
                       for kind in FAULTS if any(r.fault == kind for r in runs)],
            "failed": report.failed, "lost": len(report.lost),
            "past_deadline": sum(r.seconds > r.deadline + SLACK for r in runs),
        }, loads.seen)
    sys.exit(1 if report.lost else 0)


if __name__ == "__main__":
    main()
