"""The soak of the scheduled publish loop: N runs of the publish workflow's steps (live history
fetched into a fresh out/, `publisher build`, `publisher publish`) against a devnet moved between
runs and moto's S3 server, with random faults (stalls, S3 errors, reorgs, price jumps, missing
history). Prints one line per run and the soak table; exits 1 if any data was lost.

    python benchmarks/soak.py [--runs 50] [--seed 1]
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from moto.server import ThreadedMotoServer
from support.soak import soak

from publisher.devnet import running


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    t0 = time.monotonic()
    try:
        with running("demo") as net, tempfile.TemporaryDirectory() as tmp:
            report = soak(net, f"http://{host}:{port}", Path(tmp), args.runs, seed=args.seed,
                          echo=lambda line: print(line, flush=True))
    finally:
        server.stop()
    print(report.table())
    print(f"soak took {time.monotonic() - t0:.0f}s")
    for problem in report.lost:
        print(f"LOST {problem}")
    sys.exit(1 if report.lost else 0)


if __name__ == "__main__":
    main()
