"""Benchmark: what the withdrawal queue costs at scale (devnet `scale`: 10 000 stakers, 3 000
minipools and the queue's open requests).

Run: python benchmarks/bench_queue.py [--json FILE]

Measures: the snapshot with and without the queue (wall seconds, min of three, JSON-RPC calls and
the saved snapshot's bytes): how much the queue adds; then a full build, one new request filed
by a ggAVAX holder, the snapshot and incremental build after it, and exactly which files that
block rewrote (by sha256 against the previous tree). No assertions: the tests assert behaviour.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench import Clock
from record import Loads, write

WAD = 10**18


def digests(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file() and not p.name.startswith(".")}


def file_request(client, addresses: dict[str, str], holder: str) -> int:
    """``holder`` files a request for a hundredth of its ggAVAX, as a wallet would: approve, request."""
    from publisher.chain import abis
    from publisher.chain.abi import Fn

    approve, request = Fn("approve(address,uint256)", "bool"), Fn("requestUnstake(uint256,uint48)", "uint256")
    queue, vault = addresses["WithdrawQueue"], addresses["TokenggAVAX"]
    data = client.request("eth_call", [{"to": vault, "data": "0x" + abis.balanceOf.encode(holder).hex()}, "latest"])
    shares = abis.balanceOf.decode(bytes.fromhex(data[2:])) // 100
    client.request("anvil_impersonateAccount", [holder])
    client.request("anvil_setBalance", [holder, hex(10 * WAD)])
    for to, payload in ((vault, approve.encode(queue, shares)), (queue, request.encode(shares, 0))):
        tx = client.request("eth_sendTransaction", [{"from": holder, "to": to, "data": "0x" + payload.hex(), "gas": hex(2_000_000)}])
        deadline = time.monotonic() + 30
        while (receipt := client.request("eth_getTransactionReceipt", [tx])) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if not receipt or receipt["status"] != "0x1":
            raise SystemExit(f"the new request's transaction to {to} failed")
    return int(receipt["blockNumber"], 16)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", dest="json_path")
    ap.add_argument("--scenario", default="scale")
    args = ap.parse_args()
    os.environ.setdefault("SOURCE_DATE_EPOCH", "1800000000")
    logging.getLogger().setLevel(logging.ERROR)

    from publisher.chain.rpc import RpcClient
    from publisher.collect import collect, devnet_profile
    from publisher.config import load_profile
    from publisher.devnet import running
    from publisher.incremental import Cache, build
    from publisher.workers import cores

    report: dict = {"scenario": args.scenario}
    loads = Loads()

    def row(name: str, value: str, note: str = "") -> None:
        print(f"{name:<44} {value:<34} {note}", flush=True)

    out = Path(tempfile.mkdtemp(prefix="bench-queue-")) / "out"
    with running(args.scenario) as net:
        profile = devnet_profile(load_profile("devnet"), net)
        without = dataclasses.replace(profile, withdraw_queue=None, pst_avax=None)
        sizes = {}
        for name, p in (("without queue", without), ("with queue", profile)):
            runs = []
            for _ in range(3):
                with Clock() as c:
                    got = collect(p)
                loads.sample()
                runs.append((c.wall, c.cpu, c.load, got.counters.rpc_calls))
            wall, cpu, at_load, calls = min(runs)
            sizes[name] = len(got.snapshot.to_json().encode())
            report[name] = {"seconds": wall, "cpu": cpu, "load": at_load, "rpc_calls": calls, "snapshot_bytes": sizes[name]}
            row(f"snapshot {name}", f"{wall:.2f} s (cpu {cpu:.2f})", f"load {at_load}; {calls} JSON-RPC calls; {sizes[name]:,} bytes")
        q = got.snapshot.withdraw_queue
        assert q is not None, "the scenario has no queue"
        grow = {k: (report["with queue"][k] / report["without queue"][k] - 1) * 100 for k in ("seconds", "snapshot_bytes")}
        report["growth_pct"] = grow
        row("queue read", f"{len(q.requests):,} open requests", f"{len({r.requester for r in q.requests}):,} requesters; "
            f"{q.next_request_id:,} ids; snapshot +{grow['seconds']:.1f} % time, +{grow['snapshot_bytes']:.1f} % bytes (target <= 20 %)")

        cache = Cache()  # one process building again, as `publisher watch`
        with Clock() as c:
            built = build(got.snapshot, profile, out, cache=cache, workers=cores())
        row("full build", f"{c.wall:.2f} s", f"load {c.load}; {built.count:,} files")
        before = digests(out)
        holders = [who for who, _ in net.scenario.deposits]
        block = file_request(RpcClient([net.url]), net.addresses, holders[0])
        with Clock() as s:
            snap = collect(profile).snapshot
        with Clock() as c:
            built = build(snap, profile, out, cache=cache, workers=cores())
        after = digests(out)
        changed = sorted(k for k in after if before.get(k) != after[k])
        gone = sorted(k for k in before if k not in after)
        report["one_request"] = {"block": block, "snapshot": s.wall, "build": c.wall, "load": c.load,
                                 "rendered": built.rendered, "written": built.written, "changed": changed, "removed": gone}
        row("one new request: snapshot + build", f"{s.wall:.2f} + {c.wall:.2f} s", f"load {c.load}; {built.rendered} rendered")
        row("files rewritten", f"{len(changed)}", ", ".join(changed))
        report["open_requests"], report["requesters"] = len(q.requests), len({r.requester for r in q.requests})
        report["ids"] = q.next_request_id
        loads.sample()
    if args.json_path:
        write(args.json_path, report, loads.seen)


if __name__ == "__main__":
    main()
