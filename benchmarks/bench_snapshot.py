"""Benchmark: a full snapshot of the devnet `scale` scenario (10 000 stakers, 3 000 minipools)
against a naive reader that makes one eth_call, in its own HTTP request, per value.

Run: python benchmarks/bench_snapshot.py [--scenario scale] [--runs 3] [--sample K] [--json FILE]

Both readers run in this process against the same node and the same block. The node's own time
is the same JSON-RPC requests as one chain read, replayed one after another over one keep-alive
connection with nothing done with the answers (best of 3): what the node needs, without us; it is
replayed again with each answer parsed and its results' hex decoded, the least any reader does with
them, and the node's own CPU (its process's, from /proc) is read over the replay and over each chain
read: on two cores, what the node and this process spend together bounds the read. The naive reader reads
what the snapshot reads (every scalar, every staker with getStakers(i, 1) plus its four views,
every minipool with getMinipool(i)) and its values are checked against the snapshot, so the two
columns describe the same work. ``--sample K`` makes the naive reader read every K-th staker and
minipool and scale its figures up; the output then says so. Prints a table and, with ``--json``,
writes the figures for docs/performance.md (benchmarks/report.py); asserts nothing.
"""
from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import statistics
import time
from pathlib import Path
from urllib.parse import urlsplit

import record
import requests
from eth_utils import keccak
from ggp_devnet import devnet_profile, running
from ggp_devnet.changes import ordinary_head

from publisher.chain import abis
from publisher.chain.abi import Fn
from publisher.chain.reader import WAD, Reader
from publisher.chain.rpc import RpcClient
from publisher.collect import collect
from publisher.config import Profile, load_profile
from publisher.snapshot import Minipool, Snapshot, Staker

TARGET_REQUESTS = 40
TARGET_REQUEST_RATIO = 50
TARGET_TIME_RATIO = 10


class NaiveReader:
    """One JSON-RPC eth_call per HTTP request, over one keep-alive session."""

    def __init__(self, url: str, block: int):
        self.url, self.block = url, hex(block)
        self.session = requests.Session()
        self.requests = self.bytes_sent = self.bytes_received = 0

    def call(self, to: str, fn: Fn, *args, block: str | None = None):
        body = json.dumps({
            "jsonrpc": "2.0", "id": self.requests, "method": "eth_call",
            "params": [{"to": to, "data": "0x" + fn.encode(*args).hex()}, block or self.block],
        }).encode()
        resp = self.session.post(self.url, data=body, headers={"Content-Type": "application/json"}, timeout=60)
        self.requests += 1
        self.bytes_sent += len(body)
        self.bytes_received += len(resp.content)
        answer = resp.json()
        if answer.get("error"):
            raise RuntimeError(f"{fn.signature} at {to}: {answer['error']}")
        return fn.decode(bytes.fromhex(answer["result"][2:]))

    def scalars(self, p: Profile, a: dict[str, str]) -> int:
        """The registry, paused flags and every protocol-wide value the snapshot holds."""
        storage = p.storage
        for name in abis.REGISTRY_NAMES:
            self.call(storage, abis.storage_getAddress, keccak(b"contract.address" + name.encode()))
        for name in abis.PAUSABLE:
            self.call(storage, abis.storage_getBool, keccak(b"contract.paused" + name.encode()))
        vault = a["TokenggAVAX"]
        for fn in (abis.name, abis.symbol, abis.totalAssets, abis.totalReleasedAssets, abis.stakingTotalAssets,
                   abis.amountAvailableForStaking, abis.lastRewardsAmt, abis.lastSync, abis.rewardsCycleEnd,
                   abis.rewardsCycleLength, abis.totalSupply):
            self.call(vault, fn)
        self.call(vault, abis.convertToAssets, WAD)
        self.call(vault, abis.convertToShares, WAD)
        wavax = self.call(vault, abis.asset)
        self.call(wavax, abis.balanceOf, vault)
        self.call(a["TokenGGP"], abis.totalSupply)
        self.call(a["TokenGGP"], abis.MAX_SUPPLY)
        self.call(a["Oracle"], abis.getGGPPriceInAVAX)
        self.call(a["Staking"], abis.getTotalGGPStake)
        self.call(a["MinipoolManager"], abis.getTotalAVAXLiquidStakerAmt)
        for fn in (abis.getRewardsCycleCount, abis.getRewardsCycleStartTime, abis.getRewardsCycleTotalAmt,
                   abis.getInflationIntervalStartTime, abis.getInflationAmt):
            self.call(a["RewardsPool"], fn)
        self.call(a["ClaimNodeOp"], abis.getRewardsCycleTotal)
        self.call(a["ProtocolDAO"], abis.getWithdrawForDelegationEnabled)
        for fn in (*abis.dao_setting.values(), *abis.dao_optional_setting.values()):
            self.call(a["ProtocolDAO"], fn)
        for name in abis.CLAIMING_CONTRACTS:
            self.call(a["ProtocolDAO"], abis.getClaimingContractPct, name)
        if p.avax_usd_feed:
            self.call(p.avax_usd_feed, abis.latestRoundData)
            self.call(p.avax_usd_feed, abis.decimals)
        if p.dex_pair:
            for fn in (abis.getReserves, abis.token0, abis.token1):
                self.call(p.dex_pair, fn)
        return self.requests

    def staker(self, a: dict[str, str], i: int) -> Staker:
        (row,) = self.call(a["Staking"], abis.getStakers, i, 1)
        addr = row[0]
        views = [self.call(a["Staking"], fn, addr) for fn in
                 (abis.getEffectiveGGPStaked, abis.getCollateralizationRatio, abis.getEffectiveRewardsRatio)]
        eligible = self.call(a["ClaimNodeOp"], abis.isEligible, addr)
        return Staker(_checksum(addr), *row[1:], *views, eligible)

    def minipool(self, a: dict[str, str], i: int) -> Minipool:
        row = self.call(a["MinipoolManager"], abis.getMinipool, i)
        values = []
        for (_, typ), v in zip(abis.MINIPOOL_FIELDS, row, strict=True):
            values.append(_checksum(v) if typ == "address" else "0x" + v.hex() if typ in ("bytes", "bytes32") else v)
        return Minipool(*values)


def _checksum(addr: str) -> str:
    from eth_utils import to_checksum_address
    return to_checksum_address(addr)


class RecordingClient(RpcClient):
    """An RPC client that keeps the bodies it posts, to replay them to the node alone."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.sent: list[bytes] = []

    def sibling(self) -> RecordingClient:
        other = super().sibling()
        assert isinstance(other, RecordingClient)
        other.sent = self.sent  # the requests sent beside this client's are the read's too
        return other

    def _post(self, payload: bytes, what: str):
        self.sent.append(payload)
        return super()._post(payload, what)


def node_alone(url: str, payloads: list[bytes], rounds: int = 3, parse: bool = False) -> dict:
    """The node answering ``payloads`` one after another, best of ``rounds``: its seconds, the node
    process's CPU seconds meanwhile (None where it cannot be read) and this process's. ``parse``:
    each answer parsed as JSON and every hex result decoded, the least any reader does with them."""
    parts = urlsplit(url)
    node = _node_cpu(parts.port)
    best = {"seconds": float("inf")}
    for _ in range(rounds):
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        n0, c0, t0 = node(), time.process_time(), time.perf_counter()
        for body in payloads:
            conn.request("POST", parts.path or "/", body=body, headers={"Content-Type": "application/json"})
            data = conn.getresponse().read()
            if parse:
                doc = json.loads(data)
                for item in doc if isinstance(doc, list) else [doc]:
                    result = item.get("result")
                    if isinstance(result, str) and result.startswith("0x"):
                        bytes.fromhex(result[2:])
        seconds, cpu, n1 = time.perf_counter() - t0, time.process_time() - c0, node()
        conn.close()
        if seconds < best["seconds"]:
            best = {"seconds": seconds, "node_cpu": None if n0 is None or n1 is None else n1 - n0, "client_cpu": cpu}
    return best


def _node_cpu(port: int | None):
    """A function giving the CPU seconds so far of the anvil process serving ``port`` (Linux's
    /proc), or None when there is no such process to read."""
    pid = None
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"anvil" and str(port).encode() in argv:
            pid = entry
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def read() -> float | None:
        if pid is None:
            return None
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / tick  # utime + stime, all its threads

    return read


def run_naive(url: str, profile: Profile, snap: Snapshot, sample: int) -> dict:
    a = snap.addresses
    naive = NaiveReader(url, snap.block.number)
    t0 = time.perf_counter()
    naive.scalars(profile, a)
    stakers = naive.call(a["Staking"], abis.getStakerCount)
    pools = naive.call(a["MinipoolManager"], abis.getMinipoolCount)
    if snap.apy_base is not None:
        naive.call(a["TokenggAVAX"], abis.convertToAssets, WAD, block=hex(snap.apy_base.block.number))
    fixed, t_fixed = naive.requests, time.perf_counter() - t0
    staker_idx, pool_idx = range(0, stakers, sample), range(0, pools, sample)
    mismatches = 0
    parts = []  # (requests, seconds, scale to the full set) for stakers, then minipools
    for idx, total, read, known in ((staker_idx, stakers, naive.staker, snap.stakers),
                                    (pool_idx, pools, naive.minipool, snap.minipools)):
        before, t1 = naive.requests, time.perf_counter()
        for i in idx:
            mismatches += read(a, i) != known[i]
        parts.append((naive.requests - before, time.perf_counter() - t1, total / max(1, len(idx))))
    items = len(staker_idx) + len(pool_idx)
    requests_full = fixed + round(sum(r * k for r, _, k in parts))
    moved = naive.bytes_sent + naive.bytes_received
    measured_seconds = t_fixed + sum(t for _, t, _ in parts)
    return {
        "requests": requests_full,
        "bytes": round(moved * requests_full / naive.requests),
        "seconds": t_fixed + sum(t * k for _, t, k in parts),
        "measured_requests": naive.requests,
        "measured_seconds": measured_seconds,
        "items": items,
        "mismatches": mismatches,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="scale", choices=("demo", "scale"))
    ap.add_argument("--runs", type=int, default=3, help="snapshot runs (the table shows the median)")
    ap.add_argument("--sample", type=int, default=1, help="naive reader reads every K-th staker/minipool and extrapolates")
    ap.add_argument("--json", dest="json_path", help="also write the figures here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # keep the table readable; warnings are in the snapshot

    print(f"machine: {os.cpu_count()} cores, python {'.'.join(map(str, __import__('sys').version_info[:3]))}")
    t_start = time.perf_counter()
    load_start = record.load()
    with running(args.scenario) as net:
        ordinary_head(net)
        up = time.perf_counter() - t_start
        profile = devnet_profile(load_profile("devnet"), net)
        runs, cpu = [], []  # CPU seconds of this process: the machine may be shared
        for _ in range(max(1, args.runs)):
            c0 = time.process_time()
            runs.append(collect(profile))
            cpu.append(time.process_time() - c0)
        snap = runs[0].snapshot
        chain_only, chain_cpu, chain_node_cpu = [], [], []
        node_cpu = _node_cpu(urlsplit(net.url).port)
        for _ in range(max(1, args.runs)):
            client = RecordingClient([net.url])
            n0, c0, t0 = node_cpu(), time.process_time(), time.perf_counter()
            Reader(client, profile).read(snap.block.number)
            chain_only.append((time.perf_counter() - t0, client.counters))
            chain_cpu.append(time.process_time() - c0)
            n1 = node_cpu()
            if n0 is not None and n1 is not None:
                chain_node_cpu.append(n1 - n0)
        node = node_alone(net.url, client.sent)
        parsed = node_alone(net.url, client.sent, parse=True)
        node_secs = node["seconds"]
        naive = run_naive(net.url, profile, snap, max(1, args.sample))

    secs = statistics.median(r.seconds for r in runs)
    c = runs[0].counters
    chain_secs = statistics.median(s for s, _ in chain_only)
    cc = chain_only[0][1]
    print(f"devnet '{args.scenario}': {snap.staker_count:,} stakers, {snap.minipool_count:,} minipools, "
          f"block {snap.block.number}")
    print(f"seeding: {net.seconds:.1f} s deploy + seed ({up:.1f} s including anvil start)")
    print()
    head = f"{'reader':<40}{'HTTP req':>10}{'JSON-RPC':>10}{'eth_call':>10}{'MB moved':>10}{'seconds':>10}"
    print(head)
    print("-" * len(head))
    print(f"{'snapshot: collect() (chain+off-chain)':<40}{c.http_requests:>10,}{c.rpc_calls:>10,}{c.eth_calls:>10,}"
          f"{(c.bytes_sent + c.bytes_received) / 1e6:>10.1f}{secs:>10.2f}")
    print(f"{'  chain only: Reader.read()':<40}{cc.http_requests:>10,}{cc.rpc_calls:>10,}{cc.eth_calls:>10,}"
          f"{(cc.bytes_sent + cc.bytes_received) / 1e6:>10.1f}{chain_secs:>10.2f}")
    label = "naive: 1 eth_call per request" + (" *" if args.sample > 1 else "")
    print(f"{label:<40}{naive['requests']:>10,}{naive['requests']:>10,}{naive['requests']:>10,}"
          f"{naive['bytes'] / 1e6:>10.1f}{naive['seconds']:>10.2f}")
    req_ratio = naive["requests"] / c.http_requests
    time_ratio = naive["seconds"] / secs
    print(f"{'ratio naive / collect()':<40}{req_ratio:>9,.0f}x{'':>30}{time_ratio:>9.1f}x")
    print(f"{'ratio naive / Reader.read()':<40}{naive['requests'] / cc.http_requests:>9,.0f}x{'':>30}"
          f"{naive['seconds'] / chain_secs:>9.1f}x")
    print()
    print(f"snapshot runs (wall s / CPU s): {', '.join(f'{r.seconds:.2f} / {c:.2f}' for r, c in zip(runs, cpu, strict=True))}; "
          f"load average {os.getloadavg()[0]:.1f}")
    walls = [r.seconds for r in runs]
    print(f"collect(): wall min {min(walls):.2f} / median {secs:.2f} s, CPU min {min(cpu):.2f} / median {statistics.median(cpu):.2f} s")
    print(f"Reader.read(): wall min {min(s for s, _ in chain_only):.2f} / median {chain_secs:.2f} s, "
          f"CPU median {statistics.median(chain_cpu):.2f} s")
    print(f"node alone (the chain read's {len(client.sent)} requests replayed, nothing decoded): {node_secs:.2f} s; "
          f"Reader.read() / node {chain_secs / node_secs:.2f}x, collect() / node {secs / node_secs:.2f}x")
    if chain_node_cpu:
        print(f"the node's CPU during Reader.read(): {statistics.median(chain_node_cpu):.2f} s (median)")
    if node["node_cpu"] is not None:
        print(f"the node's CPU over its replay: {node['node_cpu']:.2f} s ({node['node_cpu'] / node_secs:.2f} cores busy)")
    print(f"replayed with each answer parsed and its results' hex decoded: {parsed['seconds']:.2f} s "
          f"({parsed['seconds'] / node_secs:.2f}x the node; this process's CPU {parsed['client_cpu']:.2f} s)")
    print(f"third-party API requests per run: {runs[0].http.requests}; RPC retries: {c.retries}")
    if args.sample > 1:
        print(f"* EXTRAPOLATED: the naive reader read every {args.sample}th staker and minipool "
              f"({naive['items']:,} items, {naive['measured_requests']:,} requests in {naive['measured_seconds']:.1f} s) "
              f"and its requests, bytes and time were scaled to the full set.")
    else:
        print(f"naive reader read everything ({naive['items']:,} stakers and minipools) in {naive['measured_seconds']:.1f} s.")
    loads = [load_start, record.load()]
    verdict = "yes" if naive["mismatches"] == 0 else f"NO ({naive['mismatches']} differ)"
    print(f"naive values equal the snapshot's: {verdict}")
    print()
    for ok, text in (
        (c.http_requests <= TARGET_REQUESTS, f"snapshot HTTP requests <= {TARGET_REQUESTS}: {c.http_requests}"),
        (req_ratio >= TARGET_REQUEST_RATIO, f"HTTP request ratio >= {TARGET_REQUEST_RATIO}x: {req_ratio:,.0f}x"),
        (time_ratio >= TARGET_TIME_RATIO, f"wall time ratio >= {TARGET_TIME_RATIO}x: {time_ratio:.1f}x"),
    ):
        print(f"[{'met' if ok else 'MISSED'}] {text}")
    if args.json_path:
        record.write(args.json_path, {
            "scenario": args.scenario, "stakers": snap.staker_count, "minipools": snap.minipool_count, "runs": len(runs),
            "collect": {"rpc_http_requests": c.http_requests, "rpc_calls": c.rpc_calls, "api_requests": runs[0].http.requests,
                        "seconds_median": secs, "seconds_min": min(walls), "cpu_median": statistics.median(cpu)},
            "chain": {"rpc_http_requests": cc.http_requests, "rpc_calls": cc.rpc_calls, "seconds_median": chain_secs,
                      "cpu_median": statistics.median(chain_cpu),
                      "node_cpu_median": statistics.median(chain_node_cpu) if chain_node_cpu else None},
            "node": {"rpc_http_requests": len(client.sent), "rpc_calls": cc.rpc_calls, "seconds": node_secs,
                     "node_cpu": node["node_cpu"]},
            "parsed": {"seconds": parsed["seconds"], "client_cpu": parsed["client_cpu"], "node_cpu": parsed["node_cpu"]},
            "naive": {"requests": naive["requests"], "seconds": naive["seconds"], "sample": args.sample,
                      "mismatches": naive["mismatches"]},
            "ratio": {"requests": round(req_ratio), "seconds": round(time_ratio, 1),
                      "chain_over_node": round(chain_secs / node_secs, 2), "collect_over_node": round(secs / node_secs, 2)},
        }, loads)


if __name__ == "__main__":
    main()
