"""Benchmark: `publisher watch`'s block-to-bucket latency.

Run: python benchmarks/bench_watch.py [--scenario scale] [--changes 5] [--poll 0.5] [--json FILE]
(or as part of `make bench`, which runs it after publishing the same tree with bench.py).

Seeds the devnet, starts moto's S3 server, and runs the real CLI, `publisher watch`, as a
subprocess. Once its first publish is live, each sample changes the GGP stake of k stakers in one
block (the Staking contract logs it) and times from the moment that block is mined to the moment
the watch reports the publish done (its /status uploaded; the bucket is then checked to name that
block or a later one: polling it meanwhile would load the machine the watch runs on). Prints each
sample, the median and the maximum, and the watch's own breakdown (read, build, publish); asserts
nothing.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

WAD = 10**18


class _WatchProcess:
    """``publisher watch`` in a subprocess, its output followed on a thread."""

    def __init__(self, cmd: list[str], env: dict[str, str]):
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.lines: list[str] = []
        self.arrived: list[float] = []  # when each "block" line (a publish that has just completed) was read
        self.published = threading.Condition()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.startswith(("block", "watching")):
                print(f"  watch said: {line.rstrip()}", flush=True)
            with self.published:
                if line.startswith("block"):
                    self.arrived.append(time.perf_counter())
                self.lines.append(line.rstrip())
                self.published.notify_all()

    def wait_for_line(self, count: int, timeout: float) -> str:
        """The ``count``-th "block" line, once read."""
        lines, proc = self.lines, self.proc
        with self.published:
            if not self.published.wait_for(lambda: sum(x.startswith("block") for x in lines) >= count or proc.poll() is not None, timeout):
                raise SystemExit(f"watch published nothing in {timeout:g}s: {lines[-3:]}")
            if proc.poll() is not None:
                raise SystemExit(f"watch stopped: {lines[-3:]}")
            return [x for x in lines if x.startswith("block")][count - 1]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _sample(line: str, latency: float) -> dict:
    """One sample's figures from the watch's "block" line: its stages' seconds, objects published."""
    stages = dict((m[0], float(m[1])) for m in re.findall(r"(read|build|publish) ([\d.]+)", line))
    objects = int(re.search(r"(\d+) objects published", line).group(1))
    return {"latency": latency, "objects": objects, **stages, "load": round(os.getloadavg()[0], 2)}


def figures(net, out: Path, endpoint: str, bucket: str, snap, *, changes: int = 5, k: int = 1,
            poll: float = 0.5, row=print) -> dict:
    """Watch ``net`` into ``bucket`` with ``out`` as its build directory; ``changes`` samples."""
    import boto3
    from ggp_devnet.changes import write_stakers

    s3 = boto3.client("s3", endpoint_url=endpoint)

    def live_block() -> int:
        try:
            return json.loads(s3.get_object(Bucket=bucket, Key="status")["Body"].read())["block"]["number"]
        except s3.exceptions.NoSuchKey:
            return -1

    env = {**os.environ, "PUBLISHER_VALIDATOR_API_URL": net.services["validator_api"],
           "PUBLISHER_PCHAIN_RPC_URL": net.services["pchain_rpc"], "PUBLISHER_PRICE_API_URL": net.services["price_api"]}
    cmd = [sys.executable, "-m", "publisher.cli", "watch", "--rpc-url", net.url, "--bucket", bucket,
           "--endpoint-url", endpoint, "--out", str(out), "--poll", str(poll)]
    watch = _WatchProcess(cmd, env)
    samples = []
    try:
        first = watch.wait_for_line(1, 600)
        row("watch: first publish", first.split(":", 1)[1].strip()[:90], "")
        stakers = list(snap.stakers)
        for i in range(changes):
            changed = [dataclasses.replace(st, ggp_staked=st.ggp_staked + (i + 1) * WAD)
                       for st in stakers[i * k: (i + 1) * k]]
            block = write_stakers(net.url, net.addresses["Staking"], changed)
            t0 = time.perf_counter()
            line = watch.wait_for_line(i + 2, 60)
            latency = watch.arrived[i + 1] - t0
            if live_block() < block:
                raise SystemExit(f"the watch's publish after block {block} left an older /status live")
            samples.append(_sample(line, latency))
            why = line.split("(", 1)[1].split(";")[0]
            stages = {name: v for name, v in samples[-1].items() if name in ("read", "build", "publish")}
            row(f"watch: block-to-bucket, sample {i + 1}", f"{latency:.2f} s",
                f"load {samples[-1]['load']}; {why}; {samples[-1]['objects']} objects; " + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()))
    finally:
        watch.stop()
    lat = [s["latency"] for s in samples]
    loads = [s["load"] for s in samples]
    result = {"scenario": net.scenario.name, "poll": poll, "k": k, "changes": changes, "samples": samples, "median": statistics.median(lat), "max": max(lat),
              "load": [min(loads), max(loads)]}
    row(f"watch: block-to-bucket (k={k}, poll {poll:g}s)", f"median {result['median']:.2f} s, max {result['max']:.2f} s",
        f"most objects a sample {max(s['objects'] for s in samples)}; target: median <= 1 s at mainnet size, "
        "<= 1.5 s at scale, max <= 2x median, <= 20 objects")
    return result


@contextmanager
def moto_bucket(bucket: str) -> Iterator[str]:
    """moto's S3 server over HTTP in this process, holding an empty ``bucket``: its endpoint URL."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    for var, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench"), ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(var, value)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
    try:
        yield endpoint
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="scale")
    ap.add_argument("--changes", type=int, default=5)
    ap.add_argument("--k", type=int, default=1, help="stakers changed per sample")
    ap.add_argument("--poll", type=float, default=0.5)
    ap.add_argument("--json", dest="json_path")
    args = ap.parse_args()
    from ggp_devnet import devnet_profile, running
    from ggp_devnet.changes import ordinary_head

    from publisher.collect import collect
    from publisher.config import load_profile

    with moto_bucket("api") as endpoint, running(args.scenario) as net, \
            tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        ordinary_head(net)
        snap = collect(devnet_profile(load_profile("devnet"), net)).snapshot
        report = figures(net, Path(tmp) / "out", endpoint, "api", snap, changes=args.changes, k=args.k,
                         poll=args.poll, row=lambda name, value, note: print(f"{name:<42} {value:<44} {note}", flush=True))
    if args.json_path:
        import record

        record.write(args.json_path, report, [s["load"] for s in report["samples"]])


if __name__ == "__main__":
    main()
