"""Benchmark: a mainnet run, rehearsed at mainnet's size.

Run: python benchmarks/bench_mainnet.py [--scenario mainnet-size] [--runs 3] [--latency 0.15] [--json FILE]

Starts ``publisher devnet --as mainnet`` in process (the contracts at the shipped profile's
addresses, chain id 43114) and runs the real CLI, ``publisher build --network mainnet``, against
it: first with an empty out/ (the price history built from scratch), then again on the same out/
(the history resumed, as every scheduled run after the first). Each is run directly against the
local node and stand-ins, and through a proxy that adds ``--latency`` seconds to every HTTP
request, standing for a public RPC and the Glacier/CoinGecko round trips. Prints the CLI's own
request counts and the wall time, and with ``--json`` writes them for docs/performance.md; asserts
nothing.

The rehearsal chain is a few hundred blocks long, so it cannot show the first run's log scan on
mainnet: that figure is computed from the profile (history_days, history_log_span) and mainnet's
block rate, and printed as computed.
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

from publisher.config import load_profile
from publisher.devnet import running
from publisher.sources.history import RANGES_PER_BATCH

MAINNET_BLOCK_SECONDS = 2.0  # C-Chain's recent average block time, rounded up (fewer blocks: fewer requests)


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
    rows = []
    with running(args.scenario, as_network="mainnet") as net:
        print(f"rehearsal '{args.scenario}' as mainnet ready in {net.seconds:.1f}s (load {os.getloadavg()[0]:.1f})")
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
                    out = tempfile.mkdtemp(prefix="bench-mainnet-")
                    try:
                        if kind.startswith("later"):
                            build(rpc, services, out)
                        seconds, stdout = build(rpc, services, out)
                    finally:
                        shutil.rmtree(out, ignore_errors=True)
                    times.append(seconds)
                    got = figures(stdout)
                    loads.sample()
                print(f"latency {delay * 1000:.0f} ms, {kind}: {min(times):.2f}-{max(times):.2f} s wall (CLI process) | {line(got)}")
                rows.append({"latency_ms": round(delay * 1000), "run": kind.split()[0], "runs": args.runs,
                             "wall_min": min(times), "wall_max": max(times), **got})
            for p in proxies:
                p.close()
    p = load_profile("mainnet")
    blocks = p.history_days * 86_400 / MAINNET_BLOCK_SECONDS
    ranges = blocks / p.history_log_span
    print(f"computed: a first mainnet run scans {p.history_days} days ≈ {blocks / 1e6:.1f} M blocks in {p.history_log_span}-block "
          f"ranges = {ranges:,.0f} ranges, {ranges / RANGES_PER_BATCH:,.0f} eth_getLogs batches ({2 * ranges:,.0f} calls); "
          f"a later run at the {p.cadence_seconds} s cadence scans ≈ {p.cadence_seconds / MAINNET_BLOCK_SECONDS:.0f} blocks: one batch")
    if args.json_path:
        record.write(args.json_path, {"scenario": args.scenario, "latency_ms": round(args.latency * 1000), "rows": rows}, loads.seen)


if __name__ == "__main__":
    main()
