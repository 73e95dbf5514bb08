"""Benchmark: the whole pipeline on the devnet `scale` scenario (10 000 stakers, 3 000 minipools).

Run: python benchmarks/bench.py [--json FILE] [--quick]   (`make bench` writes benchmarks/results/pipeline.json)

Measures, in one devnet session: the snapshot; a full build by stage and `publisher check`; a
rebuild one block later with k = 0, 1, 10, 100 changed stakers, read and built as a `publisher
watch` turn (runs.read_and_build: the price history and the queue's log scan resume from out/;
min / median of three, after a warm-up, so both trees behind out/ exist, as in a long-running
publisher); the file-creation floor (the full build's files written plainly); publishing against moto's S3 server over
HTTP (first, nothing changed, one block later with 10 changed stakers: seconds, requests, bytes);
`publisher watch` following the devnet into that bucket (block-to-bucket latency, bench_watch.py);
the rewards function (warm p50/p99, cold import); `publisher serve` requests per second.

Every figure carries the load average of the moment, because the machine is shared: wall seconds
are what the targets speak of, CPU seconds (this process) say how much of it was our own work.
`--json` writes the figures with their machine and load (benchmarks/record.py); benchmarks/report.py
renders docs/performance.md's table from them. No assertions: the tests assert behaviour.
"""
from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import record

WAD = 10**18
TARGETS = {
    "full build + snapshot": "<= 4 s, or the build within 1 s of the file-creation floor", "check": "<= 3 s",
    "rebuild k<=10": "snapshot + build <= 1.5x the snapshot",
    "publish unchanged": "<= 2 s, <= 5 requests", "publish k=10": "<= 3 s, <= 15 objects, <= 1 MB beyond",
    "watch block-to-bucket": "median <= 1.5 s, max <= 2x median, <= 20 objects a sample",
}


LOADS = record.Loads()


def load() -> float:
    return LOADS.sample()


class Clock:
    """Wall and CPU seconds of a block: this process's, and its children's that ended within it (a
    build's forked workers), with the kernel's share of both."""

    def __enter__(self):
        self.wall, self.cpu, self._times = time.perf_counter(), time.process_time(), os.times()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu
        t, t0 = os.times(), self._times
        self.children_cpu = t.children_user - t0.children_user + t.children_system - t0.children_system
        self.kernel = t.system - t0.system + t.children_system - t0.children_system
        self.load = load()


def changed_stakers(snap, k: int, round_: int):
    step = max(1, len(snap.stakers) // max(k, 1))
    return [dataclasses.replace(st, ggp_rewards=st.ggp_rewards + (round_ + 1) * WAD)
            for st in snap.stakers[::step][:k]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", dest="json_path")
    ap.add_argument("--scenario", default="scale")
    ap.add_argument("--quick", action="store_true", help="skip the function and serve figures")
    args = ap.parse_args()
    os.environ.setdefault("SOURCE_DATE_EPOCH", "1800000000")
    logging.getLogger().setLevel(logging.ERROR)

    from ggp_devnet import devnet_profile, running
    from ggp_devnet.changes import ordinary_head, write_stakers

    from publisher.build.incremental import Cache, build
    from publisher.build.validate import load_dir, network_profile, validate
    from publisher.build.workers import cores
    from publisher.collect import collect
    from publisher.config import load_profile
    from publisher.runs import read_and_build
    from publisher.watch import collect_between_turns, collecting_between_turns

    report: dict = {"scenario": args.scenario, "targets": TARGETS}
    rows: list[tuple[str, str, str]] = []

    def row(name: str, value: str, note: str = "") -> None:
        rows.append((name, value, note))
        print(f"{name:<42} {value:<44} {note}", flush=True)

    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    out = tmp / "out"
    # The interpreter's collections as the watch has them: the oldest generation between turns only.
    with running(args.scenario) as net, collecting_between_turns():
        row("devnet seeded", f"{net.seconds:.1f} s", f"load {load()}")
        ordinary_head(net)
        profile = devnet_profile(load_profile("devnet"), net)
        with Clock() as c:
            got = collect(profile)
        snap = got.snapshot
        n = got.counters
        report["snapshot"] = {"seconds": c.wall, "cpu": c.cpu, "load": c.load, "http_requests": n.http_requests + got.http.requests,
                              "rpc_calls": n.rpc_calls, "stakers": snap.staker_count, "minipools": snap.minipool_count}
        row("snapshot", f"{c.wall:.2f} s (cpu {c.cpu:.2f})",
            f"load {c.load}; {n.http_requests + got.http.requests} HTTP requests, {n.rpc_calls} JSON-RPC calls")

        cache = Cache()  # one process building again and again, as `publisher watch`
        with Clock() as c:
            built = build(snap, profile, out, cache=cache, workers=cores())
        report["full_build"] = {"seconds": c.wall, "cpu": c.cpu, "workers_cpu": c.children_cpu, "kernel": c.kernel,
                                "load": c.load, "files": built.count,
                                "bytes": built.bytes, "stages": built.stages, "processes": record.machine()["cores"]}
        stages = ", ".join(f"{k} {v:.2f}" for k, v in built.stages.items())
        row("full build (render+validate+write)", f"{c.wall:.2f} s (cpu {c.cpu:.2f} + workers {c.children_cpu:.2f}, "
                                                  f"kernel {c.kernel:.2f})",
            f"load {c.load}; {built.count:,} files, {built.bytes / 1e6:.1f} MB; {stages}")
        row("full build + snapshot", f"{c.wall + report['snapshot']['seconds']:.2f} s", f"target {TARGETS['full build + snapshot']}")
        report["floor"] = floor = creation_floor(out)
        row("file-creation floor (the same files, written plainly)", f"{floor['seconds']:.2f} s",
            f"load {floor['load']}; best of {len(floor['passes'])}: {', '.join(f'{x:.2f}' for x in floor['passes'])}; "
            f"full build {report['full_build']['seconds'] - floor['seconds']:+.2f} s beyond it")

        with Clock() as c:
            files = load_dir(out)
            p = network_profile(files, out)
            problems = validate(files, feed_max_age=p.feed_max_age, oracle_max_age=p.oracle_max_age)
        del files
        report["check"] = {"seconds": c.wall, "cpu": c.cpu, "load": c.load, "problems": len(problems)}
        row("check", f"{c.wall:.2f} s (cpu {c.cpu:.2f})", f"load {c.load}; {len(problems)} problems; target <= 3 s")

        report["rebuild"] = {}
        round_ = 0
        for k in (0, 1, 10, 100):
            runs = []
            for warm in (True, False, False, False):  # the warm-up brings the other tree up to date
                round_ += 1
                write_stakers(net.url, net.addresses["Staking"], changed_stakers(snap, k, round_))
                # As `publisher watch` runs a turn: the history and the queue's log scan resume from out/.
                with Clock() as c:
                    turn = read_and_build(profile, out, cache=cache, workers=cores())
                snap, built, seconds = turn.collected.snapshot, turn.built, turn.seconds
                del turn
                collect_between_turns()
                if not warm:
                    runs.append({"snapshot": seconds["read"], "seconds": seconds["build"], "cpu": c.cpu, "load": c.load,
                                 "rendered": built.rendered, "written": built.written, "stages": built.stages})
            wall = sorted(r["seconds"] for r in runs)
            snaps = sorted(r["snapshot"] for r in runs)
            report["rebuild"][k] = {"runs": runs, "min": wall[0], "median": wall[len(wall) // 2],
                                    "snapshot_median": snaps[len(snaps) // 2], "rendered": built.rendered,
                                    "written": built.written, "load": [min(r["load"] for r in runs), max(r["load"] for r in runs)]}
            row(f"rebuild one block later, k={k}",
                f"snapshot {snaps[len(snaps) // 2]:.2f} + build {wall[0]:.2f} / {wall[len(wall) // 2]:.2f} s",
                f"min / median of {len(runs)}; load {c.load}; {built.rendered} rendered, {built.written} written")

        report["publish"] = publish_figures(out, snap, net, profile, row, cache)

    if not args.quick:
        report["function"] = function_figures(snap, row)
        report["serve"] = serve_figures(out, snap, row)
    report["rows"] = rows
    if args.json_path:
        record.write(args.json_path, report, LOADS.seen)
    subprocess.run(["rm", "-rf", str(tmp)], check=False)


def creation_floor(out: Path, passes: int = 3) -> dict:
    """What creating the full build's files costs on this disk with nothing else done: growth's
    bare loop (bench_growth.disk_seconds: the same names, sizes and folders), best of ``passes``."""
    import bench_growth

    from publisher.build.tree import RECORD

    files = json.loads((out / RECORD).read_bytes())["files"]
    seconds = [bench_growth.disk_seconds(out) for _ in range(passes)]
    return {"seconds": min(seconds), "passes": seconds, "files": len(files),
            "bytes": sum(entry[1] for entry in files.values()), "load": load()}


def publish_figures(out: Path, snap, net, profile, row, cache) -> dict:
    import bench_watch
    from ggp_devnet.changes import write_stakers

    from publisher.build.workers import cores
    from publisher.publish import publish
    from publisher.runs import read_and_build

    figures = {}
    with bench_watch.moto_bucket("api") as endpoint:
        cases = [("first", None), ("nothing changed", None), ("one block later, k=10", 10)]
        for name, k in cases:
            if k is not None:
                write_stakers(net.url, net.addresses["Staking"], changed_stakers(snap, k, 99))
                snap = read_and_build(profile, out, cache=cache, workers=cores()).collected.snapshot
            with Clock() as c:
                result = publish(out, "api", endpoint_url=endpoint)
            r, plan = result.requests, result.plan
            requests = sum(v for key, v in r.items() if not key.startswith("bytes"))
            moved = r.get("bytes sent", 0) + r.get("bytes received", 0)
            beyond = moved - plan.upload_bytes
            figures[name] = {"seconds": c.wall, "cpu": c.cpu, "load": c.load, "requests": dict(r), "request_count": requests,
                             "objects": len(plan.upload), "object_bytes": plan.upload_bytes,
                             "manifest_objects": len(plan.shards) + int(plan.manifest_changed),
                             "bytes_moved": moved, "beyond_objects": beyond}
            row(f"publish: {name}", f"{c.wall:.2f} s (cpu {c.cpu:.2f}), {requests} requests",
                f"load {c.load}; {len(plan.upload)} objects ({plan.upload_bytes:,} B) + "
                f"{len(plan.shards) + int(plan.manifest_changed)} manifest objects; {beyond:,} B beyond the objects")
        # The same bucket and tree, now followed by `publisher watch`.
        figures["watch"] = bench_watch.figures(net, out, endpoint, "api", snap, changes=7, poll=0.1, row=row)
        LOADS.seen += [s["load"] for s in figures["watch"]["samples"]]
    return figures


def function_figures(snap, row) -> dict:
    import bench_function

    with tempfile.TemporaryDirectory(prefix="bench-function-") as tmp:
        r = bench_function.run(snap, Path(tmp), 20_000, 20)
    w, c = r["warm_us"], r["cold_ms"]
    r["load"] = load()
    row("function warm p50 / p99", f"{w['p50']} / {w['p99']} us", f"load {r['load']}")
    row("function cold import (median of 20)", f"{c['bytecode']['import_median']} ms with bytecode, "
        f"{c['source']['import_median']} ms sources only", f"load {load()}")
    return r


def serve_figures(out: Path, snap, row, seconds: float = 3.0, clients: int = 4) -> dict:
    from publisher.serve import make_server

    server = make_server(out, "127.0.0.1", 0)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    paths = ["/metrics", "/prices", f"/stakers/{snap.stakers[0].staker_addr}", "/rewards/params"]
    counts = [0] * clients
    stop = time.perf_counter() + seconds

    def client(i: int) -> None:
        while time.perf_counter() < stop:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", paths[counts[i] % len(paths)])
            conn.getresponse().read()
            conn.close()
            counts[i] += 1

    workers = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    elapsed = time.perf_counter() - t0
    server.shutdown()
    server.server_close()
    rate = sum(counts) / elapsed
    row("serve", f"{rate:.0f} requests/s", f"load {load()}; {clients} clients in this process, small files")
    return {"requests_per_second": rate, "requests": sum(counts), "load": load()}


if __name__ == "__main__":
    main()
