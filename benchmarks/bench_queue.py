"""Benchmark: what the withdrawal queue costs at scale (devnet `scale`: 10 000 stakers, 3 000
minipools, the queue's 5 000 open requests and 20 000 closed ones).

Run: python benchmarks/bench_queue.py [--json FILE] [--baseline FILE]

Measures: the snapshot with and without the queue (wall seconds, min of three, JSON-RPC calls and
the saved snapshot's bytes): how much the queue adds, its log scan (activity and every request's
receipt) read from the first block; a full build after it; a run as `publisher watch` makes it,
resuming the log scan from the tree it built (the requester files' receipts and /withdrawals'
cursor); then one new request filed by a ggAVAX holder and one claim by a requester, each followed
by such a run, and exactly which files each block rewrote (by sha256 against the previous tree).
``--baseline`` embeds a report of this benchmark measured earlier (e.g. at the commit before the
receipts, on that commit's `scale`) as ``before``: the report then compares the two. No
assertions: the tests assert behaviour.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench import Clock
from record import Loads, write

WAD = 10**18
PAGE = re.compile(r"withdrawals/0x[0-9a-f]{40}\.html")
TIMELESS = re.compile(rb'<span class="rel">[^<]*</span>')  # a page's relative times ("in 3 days")


def cpu_all() -> float:
    """CPU seconds of this process and of its children that have ended (a build's forked workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def digests(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file() and not p.name.startswith(".")}


def send_as(client, who: str, to: str, payload: bytes) -> int:
    """``who`` sends ``payload`` to ``to`` (impersonated, as a wallet would); returns the block."""
    client.request("anvil_impersonateAccount", [who])
    client.request("anvil_setBalance", [who, hex(10 * WAD)])
    tx = client.request("eth_sendTransaction", [{"from": who, "to": to, "data": "0x" + payload.hex(), "gas": hex(2_000_000)}])
    deadline = time.monotonic() + 30
    while (receipt := client.request("eth_getTransactionReceipt", [tx])) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if not receipt or receipt["status"] != "0x1":
        raise SystemExit(f"the transaction of {who} to {to} failed")
    return int(receipt["blockNumber"], 16)


def file_request(client, addresses: dict[str, str], holder: str) -> int:
    """``holder`` files a request for a hundredth of its ggAVAX, as a wallet would: approve, request."""
    from publisher.chain import abis
    from publisher.chain.abi import Fn

    approve, request = Fn("approve(address,uint256)", "bool"), Fn("requestUnstake(uint256,uint48)", "uint256")
    queue, vault = addresses["WithdrawQueue"], addresses["TokenggAVAX"]
    data = client.request("eth_call", [{"to": vault, "data": "0x" + abis.balanceOf.encode(holder).hex()}, "latest"])
    shares = abis.balanceOf.decode(bytes.fromhex(data[2:])) // 100
    send_as(client, holder, vault, approve.encode(queue, shares))
    return send_as(client, holder, queue, request.encode(shares, 0))


def claim(client, addresses: dict[str, str], snap) -> tuple[int, str]:
    """The first funded request of the snapshot that can still be claimed is claimed by its
    requester (not the first request's, which the reference pages name as their example);
    returns the block and the requester."""
    from publisher.chain.abi import Fn

    now, requests = snap.block.timestamp, snap.withdraw_queue.requests
    r = next(r for r in requests if r.fulfilled and now + 60 < r.expiration_time and r.requester != requests[0].requester)
    return send_as(client, r.requester, addresses["WithdrawQueue"], Fn("claimUnstake(uint256)").encode(r.id)), r.requester


def row(name: str, value: str, note: str = "") -> None:
    print(f"{name:<44} {value:<34} {note}", flush=True)


def changes(before: dict[str, str], out: Path) -> tuple[list[str], list[str]]:
    """The files of ``out`` changed since the digests ``before``, and those removed."""
    after = digests(out)
    return sorted(k for k in after if before.get(k) != after[k]), sorted(k for k in before if k not in after)


def snapshots(profile, report: dict, loads: Loads):
    """The snapshot without the queue and with it, three times each (the fastest counts); the
    last one read, with the queue."""
    from publisher.collect import collect

    without = dataclasses.replace(profile, withdraw_queue=None, pst_avax=None)
    for name, p in (("without queue", without), ("with queue", profile)):
        runs = []
        for _ in range(3):
            with Clock() as c:
                got = collect(p)
            loads.sample()
            runs.append((c.wall, c.cpu, c.load, got.counters.rpc_calls))
        wall, cpu, at_load, calls = min(runs)
        size = len(got.snapshot.to_json().encode())
        report[name] = {"seconds": wall, "cpu": cpu, "load": at_load, "rpc_calls": calls, "snapshot_bytes": size}
        row(f"snapshot {name}", f"{wall:.2f} s (cpu {cpu:.2f})", f"load {at_load}; {calls} JSON-RPC calls; {size:,} bytes")
    return got.snapshot


def queue_size(snap, report: dict) -> None:
    """How large the queue read is, and what it added to the snapshot."""
    q = snap.withdraw_queue
    assert q is not None, "the scenario has no queue"
    grow = {k: (report["with queue"][k] / report["without queue"][k] - 1) * 100 for k in ("seconds", "snapshot_bytes")}
    report["growth_pct"] = grow
    report["open_requests"], report["requesters"] = len(q.requests), len({r.requester for r in q.requests})
    report["ids"] = q.next_request_id
    receipts = getattr(snap, "queue_receipts", ())
    if receipts:
        outcomes: dict[str, int] = {}
        for r in receipts:
            outcomes[r.closed or "open"] = outcomes.get(r.closed or "open", 0) + 1
        report["receipts"] = {"count": len(receipts), "outcomes": outcomes,
                              "requesters_ever": len({r.requester for r in receipts} | {r.requester for r in q.requests})}
    row("queue read", f"{len(q.requests):,} open requests", f"{report['requesters']:,} requesters; "
        f"{q.next_request_id:,} ids; snapshot +{grow['seconds']:.1f} % time, +{grow['snapshot_bytes']:.1f} % bytes")


def full_build(snap, profile, out: Path, cache, report: dict, loads: Loads) -> None:
    """The first build into ``out``, then the log scan's prior read back from it."""
    from publisher.build.incremental import build
    from publisher.build.workers import cores
    from publisher.sources import queuelog

    cpu0 = cpu_all()
    with Clock() as c:
        built = build(snap, profile, out, cache=cache, workers=cores())
    loads.sample()
    report["full_build"] = {"seconds": c.wall, "cpu": cpu_all() - cpu0, "load": c.load, "files": built.count}
    report["snapshot_and_build"] = report["with queue"]["seconds"] + c.wall
    row("full build", f"{c.wall:.2f} s", f"load {c.load}; {built.count:,} files; snapshot + build "
        f"{report['snapshot_and_build']:.2f} s")
    if hasattr(queuelog, "load_receipts"):
        with Clock() as c:
            prior = queuelog.load_published(out / "withdrawals.json", out / "withdrawals")
        assert prior is not None and prior.resumable, "the tree does not resume the log scan"
        report["prior_load_seconds"] = c.wall
        row("the log scan's prior from the tree", f"{c.wall:.2f} s", f"{len(prior.receipts):,} receipts")


def watch_runs(net, profile, out: Path, cache, report: dict) -> None:
    """Runs as the watch makes them: the log scan resumed from the tree (nothing new, then one
    new request, then one claim), each read and built."""
    from publisher.build.workers import cores
    from publisher.chain.rpc import RpcClient
    from publisher.runs import read_and_build

    cpu0 = cpu_all()
    with Clock() as c:
        run = read_and_build(profile, out, cache=cache, workers=cores())
    report["resumed_run"] = {"read": run.seconds["read"], "build": run.seconds["build"], "cpu": cpu_all() - cpu0,
                             "load": c.load}
    row("a run resuming from the tree", f"{run.seconds['read']:.2f} + {run.seconds['build']:.2f} s", f"load {c.load}")
    client = RpcClient([net.url])
    for step in ("one_request", "one_claim"):
        before = digests(out)
        pages_before = {f: (out / f).read_bytes() for f in before if PAGE.fullmatch(f)}
        if step == "one_request":
            block, who = file_request(client, net.addresses, net.scenario.deposits[0][0]), net.scenario.deposits[0][0]
        else:
            block, who = claim(client, net.addresses, run.collected.snapshot)
        with Clock() as c:
            run = read_and_build(profile, out, cache=cache, workers=cores())
        changed, gone = changes(before, out)
        # The requester pages (withdrawals/{address}.html) are counted, not listed: thousands.
        pages = [f for f in changed if PAGE.fullmatch(f)]
        # Another requester's page may move with the block's time alone: its relative words.
        others = [f for f in pages if who.lower() not in f]
        timed = [f for f in others if f in pages_before and TIMELESS.sub(b"", pages_before[f]) == TIMELESS.sub(b"", (out / f).read_bytes())]
        report[step] = {"block": block, "requester": who.lower(), "snapshot": run.seconds["read"],
                        "build": run.seconds["build"], "load": c.load, "rendered": run.built.rendered,
                        "written": run.built.written, "changed": [f for f in changed if f not in pages],
                        "pages_changed": len(pages), "own_page_changed": len(pages) - len(others),
                        "pages_relative_words_only": len(timed), "removed": gone}
        row(f"{step.replace('_', ' ')}: read + build", f"{run.seconds['read']:.2f} + {run.seconds['build']:.2f} s",
            f"load {c.load}; {run.built.rendered} rendered")
        row("files rewritten", f"{len(changed)}", f"{len(pages)} requester pages and " + ", ".join(report[step]["changed"]))


def embed_baseline(report: dict, path: str) -> None:
    """A report measured earlier, as ``before``, and how the snapshot and build compare with it."""
    base = json.loads(Path(path).read_text())
    report["before"] = {k: base[k] for k in ("recorded", "load", "scenario", "ids", "open_requests", "with queue",
                                             "full_build", "snapshot_and_build", "resumed_run", "one_claim") if k in base}
    row("snapshot + build, before", f"{base['snapshot_and_build']:.2f} s",
        f"now {report['snapshot_and_build']:.2f} s ({(report['snapshot_and_build'] / base['snapshot_and_build'] - 1) * 100:+.1f} %)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", dest="json_path")
    ap.add_argument("--scenario", default="scale")
    ap.add_argument("--baseline", help="a report of this benchmark measured earlier, embedded as `before`")
    args = ap.parse_args()
    os.environ.setdefault("SOURCE_DATE_EPOCH", "1800000000")
    logging.getLogger().setLevel(logging.ERROR)

    from ggp_devnet import devnet_profile, running
    from ggp_devnet.changes import ordinary_head

    from publisher.build.incremental import Cache
    from publisher.config import load_profile

    report: dict = {"scenario": args.scenario}
    loads = Loads()
    out = Path(tempfile.mkdtemp(prefix="bench-queue-")) / "out"
    with running(args.scenario) as net:
        report["seed_seconds"] = net.seconds
        ordinary_head(net)
        profile = devnet_profile(load_profile("devnet"), net)
        snap = snapshots(profile, report, loads)
        queue_size(snap, report)
        cache = Cache()  # one process building again, as `publisher watch`
        full_build(snap, profile, out, cache, report, loads)
        watch_runs(net, profile, out, cache, report)
        loads.sample()
    shutil.rmtree(out.parent, ignore_errors=True)  # out and the trees beside it
    if args.baseline:
        embed_baseline(report, args.baseline)
    if args.json_path:
        write(args.json_path, report, loads.seen)


if __name__ == "__main__":
    main()
