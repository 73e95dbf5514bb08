"""A soak of the scheduled publish loop against a devnet that moves between runs.

Each run does what `.github/workflows/publish.yml` does — fetch the live `/prices/history` into a
fresh out/, `publisher build`, `publisher publish` — with the installed CLI in subprocesses,
against anvil (advanced here: time, blocks, a new oracle price and feed round per run) and moto's
S3 server. Faults are injected at random, one kind per run:

    stall           the node answers eth_call never (the run deadline must end the run)
    s3 error        S3 answers 500 to every upload after the first few
    reorg           the pinned block is replaced while the build reads it
    price jump      the oracle price doubles for one run (the change bound must refuse it)
    missing history the live history is not handed to the build (it must not replace it)

After every run the bucket must be consistent (status, manifest and objects agree; each
aggregate's meta.block is at most the status block), the live history must not have shrunk or had an
older point rewritten, and the run must not have outlived its deadline.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import boto3
from botocore.exceptions import ClientError
from ggp_devnet.seed import DEPLOYER

from publisher.chain.abi import Fn
from publisher.chain.rpc import RpcClient

from .flaky_proxy import FlakyProxy
from .s3_fault_proxy import S3FaultProxy

FAULTS = ("none", "stall", "s3 error", "reorg", "price jump", "missing history")
WEIGHTS = (4, 1, 1, 1, 1, 1)
STEP = 3600  # devnet seconds between runs: days pass, so the history really accumulates
RUN_DEADLINE = 120  # seconds for a build or a publish (PUBLISHER_RUN_DEADLINE)
STALL_DEADLINE = 8  # the deadline of a run whose node stalls: short, the soak has many runs
SLACK = 15  # interpreter start and exit on a loaded machine, beyond the deadline

SET_ORACLE = Fn("setGGPPriceInAVAX(uint256,uint256)")
SET_ROUND = Fn("setRound(uint80,int256,uint256,uint256,uint80)")
LATEST_ROUND = Fn("latestRoundData()", "(uint80,int256,uint256,uint256,uint80)")
GET_ORACLE = Fn("getGGPPriceInAVAX()", "(uint256,uint256)")


@dataclass
class Run:
    n: int
    fault: str
    ok: bool
    seconds: float
    deadline: float
    cause: str = ""
    problems: list[str] = field(default_factory=list)


@dataclass
class Report:
    runs: list[Run] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(not r.ok for r in self.runs)

    @property
    def lost(self) -> list[str]:
        return [f"run {r.n} ({r.fault}): {p}" for r in self.runs for p in r.problems]

    def table(self) -> str:
        kinds = Counter(r.fault for r in self.runs)
        failed = Counter(r.fault for r in self.runs if not r.ok)
        worst = Counter()
        for r in self.runs:
            worst[r.fault] = max(worst[r.fault], r.seconds)
        lines = [f"{'fault':<16} {'runs':>5} {'failed':>7} {'longest s':>10}"]
        for kind in FAULTS:
            if kinds[kind]:
                lines.append(f"{kind:<16} {kinds[kind]:>5} {failed[kind]:>7} {worst[kind]:>10.1f}")
        lines.append(f"{'total':<16} {len(self.runs):>5} {self.failed:>7}")
        lines.append(f"faults injected {sum(v for k, v in kinds.items() if k != 'none')}, failed runs {self.failed}, "
                     f"data lost {len(self.lost)}, runs past their deadline "
                     f"{sum(r.seconds > r.deadline + SLACK for r in self.runs)}")
        return "\n".join(lines)


class Soak:
    def __init__(self, net, s3_endpoint: str, bucket: str, workdir: Path, seed: int = 1):
        self.net, self.s3_endpoint, self.bucket, self.workdir = net, s3_endpoint, bucket, Path(workdir)
        self.rng = random.Random(seed)
        self.rpc = RpcClient([net.url])
        self.s3 = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1",
                               aws_access_key_id="soak", aws_secret_access_key="soak")
        self.base_price = self._call(net.addresses["Oracle"], GET_ORACLE)[0]
        self.price = self.base_price
        self.report = Report()
        self._fetched: dict[str, tuple[tuple[str, int], bytes]] = {}  # key -> ((ETag, size), bytes)

    # -- the moving chain -----------------------------------------------------------------------

    def _call(self, to: str, fn: Fn, *args):
        data = self.rpc.request("eth_call", [{"to": to, "data": "0x" + fn.encode(*args).hex()}, "latest"])
        return fn.decode(bytes.fromhex(data[2:]))

    def _send(self, to: str, data: bytes) -> None:
        tx = self.rpc.request("eth_sendTransaction", [{"from": DEPLOYER, "to": to, "data": "0x" + data.hex(), "gas": hex(500_000)}])
        for _ in range(500):
            receipt = self.rpc.request("eth_getTransactionReceipt", [tx])
            if receipt:
                assert receipt["status"] == "0x1", f"devnet transaction to {to} reverted"
                return
            time.sleep(0.01)
        raise AssertionError("devnet transaction not mined")

    def advance(self, price_factor: float = 1.0) -> None:
        """One cadence later: a new oracle price (a bounded random walk) and feed round, mined."""
        head = self.rpc.request("eth_getBlockByNumber", ["latest", False])
        now = int(head["timestamp"], 16) + STEP
        self.rpc.request("evm_setNextBlockTimestamp", [hex(now)])
        drift = 1 + self.rng.uniform(-0.01, 0.01)
        self.price = min(max(int(self.price * drift), self.base_price * 95 // 100), self.base_price * 105 // 100)
        a = self.net.addresses
        self._send(a["Oracle"], SET_ORACLE.encode(int(self.price * price_factor), now))
        rid, answer, *_ = self._call(a["PriceFeed"], LATEST_ROUND)
        self._send(a["PriceFeed"], SET_ROUND.encode(rid + 1, answer, now, now, rid + 1))

    # -- one scheduled run ----------------------------------------------------------------------

    def _env(self, deadline: float) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISHER_", "AWS_"))}
        s = self.net.services
        env.update({"PUBLISHER_VALIDATOR_API_URL": s["validator_api"], "PUBLISHER_PCHAIN_RPC_URL": s["pchain_rpc"],
                    "PUBLISHER_PRICE_API_URL": s["price_api"], "PUBLISHER_RUN_DEADLINE": str(deadline),
                    "AWS_ACCESS_KEY_ID": "soak", "AWS_SECRET_ACCESS_KEY": "soak", "AWS_DEFAULT_REGION": "us-east-1",
                    "AWS_MAX_ATTEMPTS": "2", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"})
        return env

    def _cli(self, args: list, deadline: float) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "publisher.cli", *map(str, args)], env=self._env(deadline),
                              capture_output=True, text=True, timeout=deadline + 120)

    def _live(self, only: tuple[str, ...] | None = None) -> dict[str, bytes]:
        """The bucket's objects (or only these keys). An object is fetched again only when the
        listing shows it changed (another ETag, the digest of its bytes, or size): most of a
        run's tree is carried unchanged, and fetching every object after every run was most of
        the soak's time."""
        listed = [o for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
                  for o in page.get("Contents", ()) if only is None or o["Key"] in only]
        got = {}
        for o in listed:
            k, version = o["Key"], (o["ETag"], o["Size"])
            seen = self._fetched.get(k)
            if seen is None or seen[0] != version:
                seen = self._fetched[k] = (version, self.s3.get_object(Bucket=self.bucket, Key=k)["Body"].read())
            got[k] = seen[1]
        return got

    def run(self, n: int, fault: str) -> Run:
        before = self._live(("status", "_manifest.json", "prices/history"))
        snap_id = self.rpc.request("evm_snapshot", []) if fault == "reorg" else None
        self.advance(2.0 if fault == "price jump" else 1.0)
        out = self.workdir / f"run-{n}" / "out"
        (out / "prices").mkdir(parents=True)
        if "prices/history" in before and fault != "missing history":  # the workflow's resume step
            (out / "prices" / "history.json").write_bytes(before["prices/history"])
        deadline = STALL_DEADLINE if fault == "stall" else RUN_DEADLINE
        t0 = time.monotonic()
        cause = ""
        with self._rpc_for(fault, snap_id) as rpc_url, self._s3_for(fault) as s3_url:
            built = self._cli(["build", "--rpc-url", rpc_url, "--out", out], deadline)
            ok = built.returncode == 0
            if not ok:
                cause = built.stderr.strip().splitlines()[-1] if built.stderr.strip() else f"exit {built.returncode}"
            else:
                published = self._cli(["publish", "--dir", out, "--bucket", self.bucket, "--endpoint-url", s3_url], deadline)
                ok = published.returncode == 0
                if not ok:
                    cause = published.stderr.strip().splitlines()[-1] if published.stderr.strip() else f"exit {published.returncode}"
        seconds = time.monotonic() - t0
        if fault == "price jump":
            self.advance()  # the glitch is over at the next run
        run = Run(n, fault, ok, seconds, deadline, cause)
        run.problems = self.check(before, self._live(), built_ok=ok, ok=ok)
        if seconds > 2 * deadline + SLACK:  # build and publish each have the deadline
            run.problems.append(f"run took {seconds:.0f}s, deadline {deadline}s per step")
        shutil.rmtree(out.parent, ignore_errors=True)
        self.report.runs.append(run)
        return run

    def _rpc_for(self, fault: str, snap_id):
        if fault == "stall":
            return _Url(FlakyProxy(self.net.url, always="slow", only="eth_call", hang_seconds=600))
        if fault == "reorg":
            rpc, state = self.rpc, {"done": False}

            def hook(n, body):
                if n == 3 and not state["done"]:
                    state["done"] = True
                    head = rpc.request("eth_getBlockByNumber", ["latest", False])
                    assert rpc.request("evm_revert", [snap_id]) is True
                    rpc.request("evm_setNextBlockTimestamp", [hex(int(head["timestamp"], 16) + 7)])
                    rpc.request("evm_mine", [])
            return _Url(FlakyProxy(self.net.url, on_request=hook))
        return _Url(None, self.net.url)

    def _s3_for(self, fault: str):
        if fault == "s3 error":
            return _Url(S3FaultProxy(self.s3_endpoint, fail_puts_after=self.rng.randrange(1, 6)))
        return _Url(None, self.s3_endpoint)

    # -- invariants -----------------------------------------------------------------------------

    def check(self, before: dict[str, bytes], after: dict[str, bytes], built_ok: bool, ok: bool = True) -> list[str]:
        """What must hold after any run: the manifest's objects are in the bucket with their
        sha256, the history kept every point; after a successful run also every aggregate is at
        the status block, and after a failed one the live status is untouched."""
        problems: list[str] = []
        if "status" not in after:
            return problems if "status" not in before else ["the live status disappeared"]
        status = json.loads(after["status"])
        try:
            manifest = _read_manifest(after, ok, problems)
        except (KeyError, ValueError) as exc:
            return [f"manifest unreadable ({type(exc).__name__})"]
        problems += _manifest_problems(manifest, after, ok)
        if ok:
            problems += _after_the_status(after, status["block"]["number"])
        elif before.get("status") != after.get("status"):
            problems.append("a failed run changed the live status")
        problems += _history_kept(before.get("prices/history"), after.get("prices/history"))
        return problems


def _read_manifest(after: dict[str, bytes], ok: bool, problems: list[str]) -> dict:
    """The manifest's entries from its root and shards (a shard not the root's digest noted)."""
    root = json.loads(after["_manifest.json"])
    manifest = {}
    for name, digest in root["shards"].items():
        shard = after[f"_manifest/{name}.json"]
        if hashlib.sha256(shard).hexdigest() != digest and ok:
            problems.append(f"manifest shard {name} differs from the root's digest")
        manifest.update(json.loads(shard))
    return manifest


def _manifest_problems(manifest: dict, after: dict[str, bytes], ok: bool) -> list[str]:
    problems = []
    for key, entry in manifest.items():
        if key == "status":
            continue  # uploaded after the manifest: may lag it when the last upload failed
        if key not in after:
            problems.append(f"manifest lists {key}, missing from the bucket")
        elif hashlib.sha256(after[key]).hexdigest() != entry["sha256"] and ok:
            problems.append(f"{key} differs from the manifest")
    return problems


def _after_the_status(after: dict[str, bytes], number: int) -> list[str]:
    """A file carried unchanged keeps the block its content was read at: never after the status
    block, and the files of this run are at it."""
    problems = []
    for key, body in after.items():
        try:
            doc = json.loads(body)
        except ValueError:
            continue
        meta = doc.get("meta") if isinstance(doc, dict) else None
        block = meta.get("block") if isinstance(meta, dict) else None
        if isinstance(block, dict) and not block.get("number", 0) <= number:
            problems.append(f"{key} is at block {block.get('number')}, after the status block {number}")
    return problems


def _history_kept(before: bytes | None, after: bytes | None) -> list[str]:
    if before is None:
        return []
    if after is None:
        return ["the live history disappeared"]
    old, new = json.loads(before)["points"], json.loads(after)["points"]
    new_by_date = {p["date"]: p for p in new}
    if len(new) < len(old):
        return [f"history shrank from {len(old)} to {len(new)} points"]
    lost = [p["date"] for p in old if p["date"] not in new_by_date]
    changed = [p["date"] for p in old[:-1] if new_by_date.get(p["date"]) != p]
    return ([f"history lost {lost[0]}"] if lost else []) + ([f"history point {changed[0]} rewritten"] if changed else [])


class _Url:
    """``with`` a proxy (started and stopped) or a plain URL."""

    def __init__(self, proxy, url: str | None = None):
        self.proxy, self.url = proxy, url

    def __enter__(self) -> str:
        if self.proxy is None:
            return self.url
        self.proxy.__enter__()
        return self.proxy.url

    def __exit__(self, *exc) -> None:
        if self.proxy is not None:
            self.proxy.__exit__(*exc)


def soak(net, s3_endpoint: str, workdir: Path, runs: int, seed: int = 1, bucket: str = "soak",
         schedule: list[str] | None = None, echo=None) -> Report:
    """``runs`` scheduled runs with random faults (or the given ``schedule``); the first is clean."""
    s3 = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1", aws_access_key_id="soak",
                      aws_secret_access_key="soak")
    try:
        s3.create_bucket(Bucket=bucket)
    except ClientError:
        pass
    harness = Soak(net, s3_endpoint, bucket, workdir, seed)
    for n in range(1, runs + 1):
        fault = schedule[n - 1] if schedule else ("none" if n == 1 else harness.rng.choices(FAULTS, WEIGHTS)[0])
        run = harness.run(n, fault)
        if echo:
            echo(f"run {n:>3} {fault:<16} {'ok' if run.ok else 'failed':<7} {run.seconds:6.1f}s  {run.cause[:110]}"
                 + (f"  PROBLEMS: {run.problems}" if run.problems else ""))
    return harness.report
