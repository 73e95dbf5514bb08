"""Benchmark: a mainnet run, rehearsed at mainnet's size.

Run: python benchmarks/bench_mainnet.py [--scenario mainnet-size] [--runs 3] [--latency 0.15] [--json FILE]

Starts ``publisher devnet --as mainnet`` in process (the contracts at the shipped profile's
addresses, chain id 43114) and runs the real CLI, ``publisher build --network mainnet``, against
it: first with an empty out/ (the price history, with each day's ggAVAX share price, built from
scratch), then again on the same out/ (the history resumed, as every scheduled run after the
first). Each is run directly against the local node and stand-ins, and through a proxy that adds
``--latency`` seconds to every HTTP request, standing for a public RPC and the Glacier/CoinGecko
round trips; and on a node with every block's state (archive: the share prices are read) and on
one that keeps only its latest states (pruned: they are rebuilt from the vault's events). Prints
the CLI's own request counts and the wall time, and with ``--json`` writes them for
docs/performance.md; asserts nothing.

The rehearsal chain is a few hundred blocks long, so it cannot show the first run's log scan on
mainnet: that figure is computed from the profile (history_days, history_log_span) and mainnet's
block rate, and printed as computed. So is the search for each day's last block, measured with
the real search on a synthetic chain of mainnet's length (block times of 1 to 5 s, 2 s on
average) held in memory.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import record
import requests
from ggp_devnet import running
from ggp_devnet.changes import ordinary_head

from publisher.chain.reader import find_blocks_at
from publisher.chain.rpc import Counters
from publisher.config import load_profile
from publisher.snapshot import BlockRef
from publisher.sources.history import RANGES_PER_BATCH
from publisher.sources.shareprice import CALLS_PER_BATCH

MAINNET_BLOCK_SECONDS = 2.0  # C-Chain's recent average block time, rounded up (fewer blocks: fewer requests)
KEEP_STATES = 64  # the pruned rehearsal's node: state of its latest blocks only


class SyntheticChain:
    """Headers of a chain held in memory, answering eth_getBlockByNumber batches as a node would
    (the only requests find_blocks_at sends), with the client's counters."""

    def __init__(self, days: int, seed: int = 1):
        import random

        rng = random.Random(seed)
        self.times = [1_700_000_000]
        while self.times[-1] < self.times[0] + days * 86_400:
            self.times.append(self.times[-1] + rng.choice((1, 1, 2, 2, 2, 2, 3, 3, 4, 5)) - (rng.random() < 0.1))
        self.counters = Counters()

    def head(self) -> BlockRef:
        return BlockRef(len(self.times) - 1, "0x", self.times[-1])

    def describe(self) -> str:
        return "synthetic chain"

    def batch(self, calls, raise_errors: bool = True) -> list:
        self.counters.http_requests += 1
        self.counters.rpc_calls += len(calls)
        return [{"number": p[0], "hash": "0x" + p[0][2:].rjust(64, "0"), "timestamp": hex(self.times[int(p[0], 16)])}
                for _, p in calls]


class DelayProxy:
    """Forwards every request to ``upstream`` after ``delay`` seconds."""

    def __init__(self, upstream: str, delay: float):
        parts = urlsplit(upstream)
        self.origin, self.prefix, self.delay = f"{parts.scheme}://{parts.netloc}", parts.path, delay
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self, method):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                time.sleep(proxy.delay)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                r = proxy.session.request(method, proxy.origin + self.path, data=body or None, headers=headers, timeout=60)
                self.send_response(r.status_code)
                self.send_header("Content-Type", r.headers.get("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            def do_GET(self):
                self._forward("GET")

            def do_POST(self):
                self._forward("POST")

        self.session = requests.Session()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.prefix}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def build(rpc: str, services: dict[str, str], out: str) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBLISHER_")}
    env |= {"PUBLISHER_VALIDATOR_API_URL": services["validator_api"], "PUBLISHER_PCHAIN_RPC_URL": services["pchain_rpc"],
            "PUBLISHER_PRICE_API_URL": services["price_api"]}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "publisher.cli", "build", "--network", "mainnet", "--rpc-url", rpc,
                           "--out", out], capture_output=True, text=True, env=env, timeout=600)
    seconds = time.monotonic() - t0
    if proc.returncode:
        raise SystemExit(proc.stderr)
    return seconds, proc.stdout


def figures(stdout: str) -> dict:
    """What the CLI's summary says of one build."""
    rpc = re.search(r"requests\s+(\d+) HTTP, (\d+) JSON-RPC \((\d+) eth_call\), ([\d,]+) bytes", stdout)
    src = re.search(r"sources\s+(\d+) HTTP requests", stdout)
    read = re.search(r"read\s+(\d+) stakers, (\d+) minipools", stdout)
    files = re.search(r"built\s+\d+ endpoints, (\d+) files, ([\d,]+) bytes.* in ([\d.]+)s", stdout)
    collect = re.search(r"read\s+.* in ([\d.]+)s", stdout)
    return {"stakers": int(read[1]), "minipools": int(read[2]), "rpc_http_requests": int(rpc[1]), "rpc_calls": int(rpc[2]),
            "eth_calls": int(rpc[3]), "rpc_bytes": int(rpc[4].replace(",", "")), "api_requests": int(src[1]) if src else 0,
            "files": int(files[1]), "file_bytes": int(files[2].replace(",", "")), "read_seconds": float(collect[1]),
            "build_seconds": float(files[3])}


def line(f: dict) -> str:
    return (f"{f['stakers']} stakers / {f['minipools']} minipools | RPC: {f['rpc_http_requests']} HTTP, {f['rpc_calls']} JSON-RPC "
            f"({f['eth_calls']} eth_call), {f['rpc_bytes']:,} bytes | sources: {f['api_requests']} HTTP | {f['files']} files | "
            f"chain+sources {f['read_seconds']} s, whole build {f['build_seconds']} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="mainnet-size")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.15, help="seconds added to every HTTP request in the second series")
    ap.add_argument("--json", dest="json_path", help="also write the figures here")
    args = ap.parse_args()
    loads = record.Loads()
    loads.sample()
    rows: list[dict] = []
    for node, keep in (("archive", None), ("pruned", KEEP_STATES)):
        rehearse(args, node, keep, rows, loads)
    computed()
    if args.json_path:
        record.write(args.json_path, {"scenario": args.scenario, "latency_ms": round(args.latency * 1000), "rows": rows}, loads.seen)


def rehearse(args, node: str, keep: int | None, rows: list[dict], loads) -> None:
    with running(args.scenario, as_network="mainnet", keep_states=keep) as net:
        ordinary_head(net)
        print(f"rehearsal '{args.scenario}' as mainnet on a{'n' if node == 'archive' else ''} {node} node ready in "
              f"{net.seconds:.1f}s (load {os.getloadavg()[0]:.1f})")
        for delay in (0.0, args.latency):
            proxies = []
            rpc, services = net.url, dict(net.services)
            if delay:
                proxies = [DelayProxy(net.url, delay)] + [DelayProxy(u, delay) for u in services.values()]
                rpc = proxies[0].url
                services = {k: p.url for k, p in zip(services, proxies[1:], strict=True)}
            for kind in ("first run (history from scratch)", "later run (history resumed)"):
                times, got = [], {}
                for _ in range(args.runs):
                    tmp = tempfile.mkdtemp(prefix="bench-mainnet-")
                    out = os.path.join(tmp, "out")  # its trees are its siblings: remove them with it
                    try:
                        if kind.startswith("later"):
                            build(rpc, services, out)
                        seconds, stdout = build(rpc, services, out)
                    finally:
                        shutil.rmtree(tmp, ignore_errors=True)
                    times.append(seconds)
                    got = figures(stdout)
                    loads.sample()
                print(f"{node} node, latency {delay * 1000:.0f} ms, {kind}: {min(times):.2f}-{max(times):.2f} s wall (CLI process) | {line(got)}")
                rows.append({"node": node, "latency_ms": round(delay * 1000), "run": kind.split()[0], "runs": args.runs,
                             "wall_min": min(times), "wall_max": max(times), **got})
            for p in proxies:
                p.close()


def computed() -> None:
    p = load_profile("mainnet")
    days = p.history_days
    blocks = days * 86_400 / MAINNET_BLOCK_SECONDS
    ranges = blocks / p.history_log_span
    print(f"computed: a first mainnet run scans {days} days ≈ {blocks / 1e6:.1f} M blocks in {p.history_log_span}-block "
          f"ranges = {ranges:,.0f} ranges, {ranges / RANGES_PER_BATCH:,.0f} eth_getLogs batches ({2 * ranges:,.0f} calls); "
          f"a later run at the {p.cadence_seconds} s cadence scans ≈ {p.cadence_seconds / MAINNET_BLOCK_SECONDS:.0f} blocks: one batch")
    chain = SyntheticChain(days + 1)
    head = chain.head()
    ends = [chain.times[0] + (d + 1) * 86_400 - 1 for d in range(days)]
    t0 = time.monotonic()
    find_blocks_at(chain, ends, head)  # type: ignore[arg-type]  # answers the requests it sends
    c = chain.counters
    print(f"measured on a synthetic {days}-day chain of {len(chain.times) / 1e6:.1f} M blocks: the last block of each of "
          f"{days} days in {c.http_requests} header batches, {c.rpc_calls:,} headers ({c.rpc_calls / days:.1f} per day, "
          f"{time.monotonic() - t0:.1f} s of search); then with archive state {days} eth_calls in "
          f"{-(-days // CALLS_PER_BATCH)} batches, without it the vault's events over the same ranges as the prices: "
          f"{ranges / RANGES_PER_BATCH:,.0f} more eth_getLogs batches ({3 * ranges:,.0f} calls) plus one header per reward sync")
    chain.counters = Counters()
    later = [ends[-1] - 3 * 3600, ends[-1]]  # the day left running and the new one
    find_blocks_at(chain, later, head, hints=(head.number - p.cadence_seconds // 2,))  # type: ignore[arg-type]
    print(f"a later run reads no header while the day runs (its share price is the run's own); the first run of a day finds "
          f"the last block of the day before in {chain.counters.http_requests} header batches, {chain.counters.rpc_calls} "
          f"headers, starting from the previous run's block")


if __name__ == "__main__":
    main()
