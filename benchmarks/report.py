"""Renders docs/performance.md's tables from the committed benchmark results.

Run: python benchmarks/report.py [--check]   (`make bench` and `make docs` run it)

Each table sits between `<!-- bench-NAME:start -->` and `<!-- bench-NAME:end -->` and is made from
benchmarks/results/NAME.json alone, a report a benchmark wrote with `--json` (benchmarks/record.py):
the figures, the command, when and at which commit, the machine and its load. A results file
transcribed from earlier documentation has the same shape, with `recorded.source` "transcribed" and
only the figures that documentation gave; a figure it lacks is shown as "—". With `--check`, exits
non-zero when docs/performance.md differs from what this would write (a test runs it).
"""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's publisher, whichever one the interpreter has installed

sys.path.insert(0, str(ROOT / "tools"))

import gendocs as readme  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
DOC = "docs/performance.md"

# --- formatting -----------------------------------------------------------------------------------


def num(x, spec: str = "") -> str:
    """``x`` formatted with ``spec`` ("—" when absent); a [low, high] pair as a range; thousands
    separated by a space, as the rest of the documentation writes them."""
    if x is None:
        return "—"
    if isinstance(x, (list, tuple)):
        low, high = (num(v, spec) for v in (min(x), max(x)))
        return low if low == high else f"{low}–{high}"
    if not spec:
        spec = "," if isinstance(x, int) else ".2f"
    return format(x, spec).replace(",", " ")


def top(x):
    """The larger end of a figure that may be a range (what a target is held to)."""
    return max(x) if isinstance(x, (list, tuple)) else x


def size(b, spec: str = "#.3g") -> str:
    """Bytes in kB/MB (powers of ten), three significant digits unless told."""
    if b is None:
        return "—"
    for unit, scale in (("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            return f"{format(b / scale, spec).rstrip('.')} {unit}"
    return f"{b} B"


def sig(x, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits, exponents without padding (2.8e-9)."""
    if x is None:
        return "—"
    text = format(x, f".{digits}g")
    mantissa, e, exponent = text.partition("e")
    if e:
        return f"{mantissa}e{int(exponent)}"
    return f"{text}.0" if isinstance(x, float) and "." not in text else text  # 3.0 stays 3.0


def secs(x) -> str:
    """Seconds as the tables print them: one decimal below 10, none above."""
    if x is None:
        return "—"
    return num(x, ".1f" if top(x) < 10 else ".0f")


def verdict(checks: list[tuple[str, bool]]) -> str:
    """"met", "missed", or which parts of a target were met and which missed."""
    met = [name for name, ok in checks if ok]
    missed = [name for name, ok in checks if not ok]
    if not missed:
        return "met"
    if not met:
        return "missed"
    return f"{' and '.join(met)} met, {' and '.join(missed)} missed"


def cpu(x) -> str:
    """A publish's CPU seconds, marked: most of them are moto's (see the table's note)."""
    return "—" if x is None else f"{num(x)} †"


def table(head: list[str], rows: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                     + ["| " + " | ".join(row) + " |" for row in rows])


def stamp(r: dict) -> str:
    """Where a table's figures come from: command, date, commit, machine, load."""
    rec, m = r["recorded"], r.get("machine") or {}
    if rec["source"] == "measured":
        how = f"measured on {rec['date']} at {rec.get('commit') or 'an unknown commit'}"
        if rec.get("uncommitted_changes"):
            how += " with uncommitted changes"
    else:
        how = f"measured on {rec['date']}, transcribed from {rec['from']} with its rounding"
    machine = f"{m['cores']} cores" if m.get("cores") else "machine not recorded"
    details = [m.get("cpu"), f"{m['memory_gb']} GB" if m.get("memory_gb") else None, m.get("filesystem"),
               f"Python {m['python']}" if m.get("python") else None]
    if any(details):
        machine += " (" + ", ".join(d for d in details if d) + ")"
    load = f"load average {num(r['load'], '.1f')}" if r.get("load") else "load not recorded"
    speed = f"; `sum(range(100))` took {num(m['speed_us'], '.2f')} µs at the run's start and end" if m.get("speed_us") else ""
    return f"Source: `{r['command']}`, {how}; {machine}; {load}{speed}."


def block(r: dict, body: str, *sentences: str) -> str:
    parts = [body, *[s for s in sentences if s], stamp(r), *r.get("notes", [])]
    return "\n\n".join(parts) + "\n"


# --- the tables -----------------------------------------------------------------------------------


def snapshot(r: dict) -> str:
    c, ch, node, naive, ratio = r["collect"], r["chain"], r["node"], r["naive"], r["ratio"]
    parsed = r.get("parsed")
    runs = r.get("runs")
    sampled = (f" (every {naive['sample']}th staker and minipool, scaled up)" if naive.get("sample", 1) > 1 else "")
    rows = [
        [f"`collect()` (chain + price history; plus {num(c['api_requests'])} validator-API requests)",
         num(c["rpc_http_requests"]), num(c["rpc_calls"]),
         f"{num(c['seconds_median'])} (min {num(c['seconds_min'])}; CPU {num(c['cpu_median'])})"],
        ["chain only (`Reader.read()`)", num(ch["rpc_http_requests"]), num(ch["rpc_calls"]),
         f"{num(ch['seconds_median'])} (CPU {num(ch['cpu_median'])}"
         + (f"; the node's {num(ch['node_cpu_median'])}" if ch.get("node_cpu_median") is not None else "") + ")"],
        [f"the node alone: the chain read's {num(node['rpc_http_requests'])} requests replayed, nothing decoded"
         + (f" (the node's CPU {num(node['node_cpu'])} s)" if node.get("node_cpu") is not None else ""),
         num(node["rpc_http_requests"]), num(node["rpc_calls"]), num(node["seconds"])],
        *([["the same replayed, each answer parsed as JSON and its results' hex decoded, the least a reader does"
            f" (our CPU {num(parsed['client_cpu'])} s)", num(node["rpc_http_requests"]), num(node["rpc_calls"]),
            num(parsed["seconds"])]] if parsed else []),
        [f"naive, one `eth_call` per request{sampled}", num(naive["requests"]), num(naive["requests"]),
         num(naive["seconds"], ".1f")],
        ["ratio naive / `collect()`", f"**{num(ratio['requests'])}×** fewer", "", f"**{num(ratio['seconds'], '.1f')}×** faster"],
    ]
    body = table(["reader", "RPC HTTP requests", "JSON-RPC calls", f"seconds (median of {runs or '—'})"], rows)
    equal = ("the naive reader's values are checked equal to the snapshot's" if naive.get("mismatches") == 0
             else f"the naive reader's values differ from the snapshot's in {naive.get('mismatches')} places")
    return block(r, body, f"Devnet `{r['scenario']}`: {num(r['stakers'])} stakers, {num(r['minipools'])} minipools. "
                 f"`Reader.read()` takes {num(ratio['chain_over_node'])}× the node's own time for the same requests and "
                 f"`collect()` {num(ratio['collect_over_node'])}×; {equal}."
                 + (f" Replayed with its answers parsed, the same requests take {num(parsed['seconds'] / node['seconds'])}× "
                    "the node's time." if parsed else ""))


def pipeline(r: dict) -> str:
    s, full, check, rebuild, pub = r["snapshot"], r["full_build"], r["check"], r["rebuild"], r["publish"]
    rebuild_snaps = [v["snapshot_median"] for v in rebuild.values()]
    total = top(full["seconds"]) + s["seconds"]
    rows = [
        [f"snapshot (`collect`: {num(s['http_requests'])} HTTP requests, {num(s['rpc_calls'])} JSON-RPC calls)",
         f"{num(s['seconds'])} ({num([min(rebuild_snaps), max(rebuild_snaps)])} in the rebuilds)", num(s["cpu"]),
         num(s["load"], ".1f"), ""],
        [f"full build (render + validate + write {num(full['files'])} files, {full.get('processes') or '—'} processes)",
         num(full["seconds"]), full_cpu(full), num(full["load"], ".1f"), ""],
        ["full build + snapshot", f"**{num(total)}**", "", num(full["load"], ".1f"), build_target(r)],
        [f"`publisher check` (read, parse, validate {size(full['bytes'])})", f"**{num(check['seconds'])}**",
         num(check["cpu"]), num(check["load"], ".1f"), f"≤ 3 s: {verdict([('', top(check['seconds']) <= 3)])}"],
    ]
    floor = r.get("floor")
    if floor:
        rows.insert(2, [f"file-creation floor: the same {num(floor['files'])} files written plainly by one process "
                        f"(best of {len(floor['passes'])}: {', '.join(num(x) for x in floor['passes'])})",
                        num(floor["seconds"]), "", num(floor["load"], ".1f"), ""])
    for k, v in sorted(rebuild.items(), key=lambda kv: int(kv[0])):
        ratio = (v["snapshot_median"] + v["median"]) / v["snapshot_median"]
        target = f"≤ 1.5× its snapshot: {num(ratio, '.2f')}×, {verdict([('', ratio <= 1.5)])}" if int(k) <= 10 else ""
        rows.append([f"rebuild, k = {k} ({num(v['rendered'])} rendered, {num(v['written'])} written)",
                     f"{num(v['snapshot_median'])} + **{num(v['min'])}** / {num(v['median'])}", "",
                     num(v.get("load"), ".1f"), target])
    staged = rebuild.get("1")  # the report as read back: JSON keys are strings
    if staged and all(run.get("stages") for run in staged["runs"]):
        # Where a rebuild's build goes, each stage's median over the runs (the build's own timers).
        order = ("records", "derive", "aggregates", "entities", "render+validate+write", "guards+status+swap")
        names = sorted(staged["runs"][0]["stages"], key=lambda n: order.index(n) if n in order else len(order))
        medians = {n: sorted(run["stages"].get(n, 0) for run in staged["runs"])[len(staged["runs"]) // 2] for n in names}
        rows.append(["rebuild, k = 1, its build by stage (medians): " + ", ".join(f"{n} {num(v)}" for n, v in medians.items()),
                     "", "", "", ""])
    first, same, later = pub["first"], pub["nothing changed"], pub["one block later, k=10"]
    rows.append([f"publish, first ({num(first['objects'])} objects + {num(first['manifest_objects'])} manifest objects, "
                 f"{num(first['request_count'])} requests)", secs(first["seconds"]),
                 cpu(first.get("cpu")), num(first["load"], ".1f"), ""])
    read = (same.get("requests") or {}).get("bytes received")
    rows.append([f"publish, nothing changed (**{num(same['request_count'])} requests**, {size(read)} read, "
                 f"{'nothing written' if not same['objects'] else num(same['objects']) + ' objects written'})",
                 f"**{num(same['seconds'])}**", cpu(same.get("cpu")), num(same["load"], ".1f"),
                 f"≤ 2 s, ≤ 5 requests: {verdict([('seconds', same['seconds'] <= 2), ('requests', same['request_count'] <= 5)])}"])
    rows.append([f"publish, one block later, k = 10 ({num(later['objects'])} objects, {size(later['object_bytes'])}, "
                 f"+ {num(later['manifest_objects'])} manifest objects; {num(later['request_count'])} requests; "
                 f"**{size(later['beyond_objects'])}** beyond the objects)", f"**{num(later['seconds'])}**",
                 cpu(later.get("cpu")), num(later["load"], ".1f"),
                 "≤ 3 s, ≤ 15 objects, ≤ 1 MB beyond: " + verdict([
                     ("seconds", later["seconds"] <= 3), ("objects", later["objects"] <= 15),
                     ("bytes", later["beyond_objects"] <= 1e6)])])
    w = pub.get("watch")
    if w:
        rows.append([f"`publisher watch`, block to bucket, {'one staker' if w['k'] == 1 else str(w['k']) + ' stakers'}'s stake "
                     f"changed (poll {num(w['poll'], 'g')} s; {w.get('changes') or len(w.get('samples', []))} samples)",
                     f"median **{num(w['median'])}**, max {num(w['max'])}", "", num(w.get("load"), ".1f"),
                     watch_target(w, 1.5)])
    fn = r.get("function")
    if fn:
        rows.append(["rewards function, warm p50 / p99", f"{num(fn['warm_us']['p50'], 'g')} µs / {num(fn['warm_us']['p99'], 'g')} µs",
                     "", num(fn.get("load"), ".1f"), ""])
    body = table(["figure", "wall s", "CPU s", "load", "target"], rows)
    return block(r, body,
                 f"Devnet `{r['scenario']}`: {num(s['stakers'])} stakers, {num(s['minipools'])} minipools, "
                 f"{num(full['files'])} files, {size(full['bytes'])}. † Mostly moto's side of the requests: moto's "
                 "server runs in the benchmark's process, so its CPU time counts there.")


def full_cpu(full: dict) -> str:
    """This process's CPU seconds and its workers', with the kernel's share of both (creating the
    files above all), where the report has them."""
    if "workers_cpu" not in full:
        return f"{num(full['cpu'])} + workers"
    return f"{num(full['cpu'])} + {num(full['workers_cpu'])} in workers (kernel {num(full['kernel'])})"


def build_target(r: dict) -> str:
    """Full build + snapshot ≤ 4 s, or the build within 1 s of the measured file-creation floor."""
    full, floor = r["full_build"], r.get("floor")
    total = top(full["seconds"]) + r["snapshot"]["seconds"]
    checks = [("≤ 4 s", total <= 4)]
    if floor:
        checks.append(("build within 1 s of the floor", top(full["seconds"]) - floor["seconds"] <= 1))
    met = any(ok for _, ok in checks)
    said = "; ".join(f"{name}: {'met' if ok else 'missed'}" for name, ok in checks)
    return f"≤ 4 s, or within 1 s of the floor: {'met' if met else 'missed'} ({said})"


def watch_target(w: dict, median: float) -> str:
    """Block to bucket: the median within ``median`` seconds, no sample over twice the median, every
    sample publishing at most 20 objects."""
    objects = max(s["objects"] for s in w["samples"]) if w.get("samples") else None
    checks = [(f"median ≤ {num(median, 'g')} s", w["median"] <= median), ("max ≤ 2× median", w["max"] <= 2 * w["median"])]
    if objects is not None:
        checks.append((f"≤ 20 objects (most {objects})", objects <= 20))
    return f"median ≤ {num(median, 'g')} s, max ≤ 2× median, ≤ 20 objects a sample: {verdict(checks)}"


def watch(r: dict) -> str:
    """`publisher watch` alone (bench_watch.py): at mainnet size, or at `scale`, whose target is 1.5 s."""
    rows = [[f"sample {i}", num(x["latency"]), num(x["objects"]),
             ", ".join(f"{k} {num(x[k])}" for k in ("read", "build", "publish") if k in x), num(x["load"], ".1f")]
            for i, x in enumerate(r["samples"], 1)]
    rows.append(["**median** / max", f"**{num(r['median'])}** / {num(r['max'])}", "", "", num(r.get("load"), ".1f")])
    return block(r, table(["sample", "block to bucket, s", "objects", "the watch's own stages, s", "load"], rows),
                 f"Devnet `{r.get('scenario', '?')}`, one staker's GGP stake changed per sample, poll {num(r['poll'], 'g')} s. "
                 f"Target: {watch_target(r, 1.0 if r.get('scenario') == 'mainnet-size' else 1.5)}.")


def growth(r: dict) -> str:
    rows = []
    for g in r["sizes"]:
        rows.append([num(g["stakers"]), num(g["minipools"]), num(g["seed_seconds"], ".1f"), num(g["seconds"], ".1f"),
                     num(g.get("slope_seconds"), ".2f") if "slope_seconds" in g else "",
                     num(g["cpu_seconds"], ".1f"), num(g.get("slope_cpu_seconds"), ".2f") if "slope_cpu_seconds" in g else "",
                     num(g["disk_seconds"], ".1f"), num(g.get("slope_disk_seconds"), ".2f") if "slope_disk_seconds" in g else "",
                     f"{num(g['peak_rss_mb'], '.0f')} MB", num(g.get("slope_peak_rss_mb"), ".2f") if "slope_peak_rss_mb" in g else "",
                     num(g["files"]), f"{num(g['requests'])} ({num(g['rpc_http_requests'])} + {num(g['api_requests'])})"])
    body = table(["stakers", "minipools", "seed s", "build s", "slope", "CPU s", "slope", "disk s", "slope", "peak RSS",
                  "slope", "files", "requests (RPC + APIs)"], rows)
    targets = ""
    slope = (r.get("slope_first_to_last") or {}).get("seconds")
    rss = max(g["peak_rss_mb"] for g in r["sizes"])
    if slope is not None:
        targets = (f"Targets: wall time slope ≤ 1.05 from {num(r['sizes'][0]['stakers'])} to {num(r['sizes'][-1]['stakers'])} "
                   f"stakers: {verdict([('', slope <= 1.05)])} ({num(slope)}); peak RSS ≤ 1 GiB: "
                   f"{verdict([('', rss <= 1024)])} ({num(rss, '.0f')} MB).")
    return block(r, body, targets)


LIVE_KINDS = ("distribution on time", "distribution late, built before the cycle end", "built while overdue")


def live(r: dict) -> str:
    def row(name: str, st: dict | None, unit: str = " %") -> list[str] | None:
        if not st or not st.get("samples", 1):
            return None
        return [name, num(st.get("samples")), num(st.get("exact")),
                *(sig(st[k]) + unit if st.get(k) is not None else "—" for k in ("median_abs", "p90_abs", "max_abs"))]

    rows = [row(f"node-operator pool, {kind}", r["pool_pct"].get(kind)) for kind in LIVE_KINDS]
    for kind in LIVE_KINDS:
        rows.append(row(f"per staker, {kind}", r["staker_pct"].get(kind)))
        rows.append(row(f"per staker, {kind}, in GGP", r["staker_ggp"].get(kind), " GGP"))
    rows.append(row("AVAX per validation period", r["avax_pct"]))
    body = table(["forecast", "samples", "exact", "median \\|error\\|", "p90 \\|error\\|", "max \\|error\\|"],
                 [x for x in rows if x])
    late = r["late"]
    late_text = (f", {late['count']} of them late by {num([late['min_days'], late['max_days']], 'g')} days"
                 if late["count"] else ", none late")
    apy = r["apy_methods"]
    return block(r, body,
                 f"Seed {r['seed']}: {num(r['days'])} protocol days, {r['distributions']} GGP distribution"
                 f"{'' if r['distributions'] == 1 else 's'}{late_text}; a build "
                 f"every {r['every_days']} protocol days, {num(r['builds'])} in all, "
                 f"{'with' if r['archive'] else 'without'} archive state; {secs(r['wall_seconds'])} s. Error is forecast − paid, "
                 f"in percent of what was paid (per staker also in GGP); {r['staker_exact_builds']} builds were exact for every "
                 f"staker. `ggavax_apy` was null after the first build in {r['apy_null_after_first']} of "
                 f"{num(r['builds'] - 1)} builds (method: " + ", ".join(f"`{k}` {v}" for k, v in apy.items()) + ").")


def function(r: dict) -> str:
    w, bad, cold, t = r["warm_us"], r.get("warm_bad_input_us") or {}, r["cold_ms"], r["targets"]
    rows = [
        ["warm request p50 / p90 / p99", f"{num(w['p50'], 'g')} µs / {num(w['p90'], 'g')} µs / {num(w['p99'], 'g')} µs "
         f"(refused input: p50 {num(bad.get('p50'), 'g')} µs)", f"p50 ≤ {t['p50_us']} µs: {verdict([('', w['p50'] <= t['p50_us'])])}"],
        ["cold import, extracted zip with its bytecode", f"{num(cold['bytecode']['import_median'], 'g')} ms",
         f"≤ {t['cold_import_ms']} ms: {verdict([('', cold['bytecode']['import_median'] <= t['cold_import_ms'])])}"],
        ["cold import, extracted sources only (compiled at every start)", f"{num(cold['source']['import_median'], 'g')} ms", ""],
        ["whole process (interpreter start to first answer), bytecode / sources",
         f"{num(cold['bytecode']['process_median'], '.1f')} / {num(cold['source']['process_median'], '.1f')} ms", ""],
        *([["first withdrawal estimate of a cold start (its params loaded, the line's module imported), "
             "its whole process", f"{num(cold['estimate']['first_request_median'], 'g')} ms, "
             f"{num(cold['estimate']['process_median'], '.1f')} ms", ""]] if "estimate" in cold else []),
        [f"zip size (handler, formula and their bytecode for {r['runtime']})", size(r["zip_bytes"]), ""],
    ]
    return block(r, table(["figure", "value", "target"], rows),
                 f"{num(w.get('requests'))} varied queries, params cached.")


def serve(r: dict) -> str:
    body = table(["requests", "concurrent clients", "requests/s", "p50", "p99", "max", "errors", "listen-queue overflows"],
                 [[num(r["requests"]), num(r["concurrency"]), num(r["requests_per_second"], ",.0f"), f"{num(r['p50_ms'], '.0f')} ms",
                   f"{num(r['p99_ms'], '.0f')} ms", f"{num(r['max_ms'], '.0f')} ms", num(r["errors"]), num(r["listen_overflows"])]])
    return block(r, body)


SOAK_FAULTS = {
    "none": "none",
    "stall": "stall (`eth_call` never answered; {stall_deadline} s deadline)",
    "s3 error": "S3 500 after 1–5 uploads",
    "reorg": "reorg of the pinned block (retried at the new head)",
    "price jump": "oracle price doubled",
    "missing history": "live history not handed to the build",
}


def soak(r: dict) -> str:
    rows = [[SOAK_FAULTS.get(f["fault"], f["fault"]).format(**r), num(f["runs"]), num(f["failed"]), num(f["longest_seconds"], ".1f")]
            for f in r["faults"]]
    rows.append(["**total**", f"**{num(r['runs'])}**", f"**{num(r['failed'])}**",
                 f"data lost **{num(r['lost'])}**, runs past their deadline **{num(r['past_deadline'])}**"])
    return block(r, table(["fault", "runs", "failed", "longest run (s)"], rows),
                 f"Seed {r['seed']}; the soak took {num(r['seconds'] / 60, '.0f')} min.")


def mainnet(r: dict) -> str:
    rows = []
    for x in r["rows"]:
        run = "first, price history from scratch" if x["run"] == "first" else "later, history resumed"
        where = "local" if not x["latency_ms"] else f"+{x['latency_ms']} ms per request"
        if x.get("node"):
            where = f"{x['node']} node, {where}"
        calls = f"{num(x['rpc_calls'])}, of which {num(x['eth_calls'])} `eth_call`" if x.get("eth_calls") else num(x["rpc_calls"])
        rows.append([f"{run}, {where}", f"{num(x['rpc_http_requests'])} ({calls})", num(x["api_requests"]),
                     size(x["rpc_bytes"], ".1f"), f"{secs(x['read_seconds'])} s", f"{secs(x['build_seconds'])} s"])
    body = table(["run", "RPC requests (JSON-RPC calls)", "API requests", "bytes with the node", "read (chain + APIs)",
                  "whole build"], rows)
    first = r["rows"][0]
    return block(r, body, f"Rehearsal `{r['scenario']}` as mainnet: {num(first['stakers'])} stakers, "
                 f"{num(first['minipools'])} minipools; the build writes {num(first['files'])} files "
                 f"({size(first['file_bytes'], '.1f')}).")


def queue(r: dict) -> str:
    w, wo = r["with queue"], r["without queue"]
    grow = r["growth_pct"]
    rows = [[name, secs(x["seconds"]), secs(x["cpu"]), num(x["rpc_calls"]), size(x["snapshot_bytes"], ".1f")]
            for name, x in (("without the queue", wo), ("with the queue", w))]
    rows.append(["growth", f"{num(grow['seconds'], '+.1f')} %", f"{num((w['cpu'] / wo['cpu'] - 1) * 100, '+.1f')} %",
                 f"+{num(w['rpc_calls'] - wo['rpc_calls'])}", f"{num(grow['snapshot_bytes'], '+.1f')} %"])
    body = table(["snapshot of `" + r["scenario"] + "`", "wall s (min of 3)", "CPU s", "JSON-RPC calls", "saved snapshot"], rows)
    holds = f"The queue holds {num(r['open_requests'])} open requests from {num(r['requesters'])} requesters"
    rc = r.get("receipts")
    if rc:
        o = rc["outcomes"]
        holds += (f" and the receipts of all {num(rc['count'])} requests ever filed, by {num(rc['requesters_ever'])} requesters: "
                  + ", ".join(f"{num(o.get(k, 0))} {k}" for k in ("claimed", "cancelled", "reclaimed", "open")))
    sentences = [f"{holds} ({num(r['ids'])} ids issued). Target: the snapshot grows by at most 20 %: "
                 f"{verdict([('', max(grow['seconds'], grow['snapshot_bytes']) <= 20)])}."]
    b = r.get("before")
    if b:
        def pct(before, after) -> str:
            return f"{num((after / before - 1) * 100, '+.1f')} %" if before and after is not None else ""

        def row(name: str, x: tuple, y: tuple, target: str = "") -> list[str]:
            (bw, bc), (aw, ac) = x, y
            return [name, secs(bw), secs(aw), pct(bw, aw), secs(bc), secs(ac), pct(bc, ac), target]

        bq, bf, ran, was = b["with queue"], b["full_build"], r["resumed_run"], b.get("resumed_run") or {}
        wall = r["snapshot_and_build"] / b["snapshot_and_build"] - 1
        cpu_b, cpu_a = bq["cpu"] + bf.get("cpu", 0), w["cpu"] + r["full_build"].get("cpu", 0)
        claim, claimed = r.get("one_claim") or {}, b.get("one_claim") or {}
        rows = [row("snapshot (the queue's logs read from the first block)", (bq["seconds"], bq["cpu"]), (w["seconds"], w["cpu"])),
                row(f"full build ({num(bf['files'])} → {num(r['full_build']['files'])} files)", (bf["seconds"], bf.get("cpu")),
                    (r["full_build"]["seconds"], r["full_build"].get("cpu"))),
                row("**snapshot + full build**", (b["snapshot_and_build"], cpu_b), (r["snapshot_and_build"], cpu_a),
                    f"≤ +20 %: wall {verdict([('', wall <= 0.20)])}, CPU {verdict([('', cpu_a / cpu_b - 1 <= 0.20)])}"),
                row("a run resuming from its tree, read + build", (was["read"] + was["build"] if was else None, was.get("cpu")),
                    (ran["read"] + ran["build"], ran.get("cpu"))),
                row("one claim, then such a run", (claimed["snapshot"] + claimed["build"] if claimed else None, None),
                    (claim["snapshot"] + claim["build"] if claim else None, None))]
        when = b["recorded"]
        sentences.append(f"Before and after the receipts: the same benchmark on {when.get('commit') or 'the tree before them'} "
                         f"(measured {when['date']}, load average {num(b['load'], '.1f')}), whose `{b['scenario']}` queue "
                         f"had {num(b['ids'])} ids and no closed history. CPU seconds are this process's and its ended "
                         f"children's (a build's workers).\n\n"
                         + table(["figure", "wall s before", "after", "change", "CPU s before", "after", "change", "target"], rows))
    if r.get("prior_load_seconds") is not None:
        sentences.append(f"Reading the previous run's receipts back from its requester files took "
                         f"{secs(r['prior_load_seconds'])} s in a fresh process; the runs after it, in the same process "
                         "(as in `publisher watch`), parse again only the files a build rewrote.")
    for key, what in (("one_request", "One new request filed by a holder"), ("one_claim", "One claim by a requester")):
        x = r.get(key)
        if not x:
            continue
        listed = [c for c in x["changed"] if not re.fullmatch(r"withdrawals/0x[0-9a-f]{40}\.html", c)]
        pages = x.get("pages_changed", 0) + len(x["changed"]) - len(listed)  # counted, or listed by an earlier run
        mine = [c for c in listed if c.startswith("withdrawals") or c == "status.json"]
        timed = [c for c in listed if c not in mine]
        sentences.append(f"{what}, then a run resuming from the tree (read {secs(x['snapshot'])}, incremental build "
                         f"{secs(x['build'])}, {num(x['rendered'])} bodies rendered) rewrote {num(len(listed) + pages)} files: "
                         + ", ".join(f"`{c}`" for c in mine) + " for the " + ("request" if key == "one_request" else "claim")
                         + _pages_sentence(x, pages)
                         + "; and " + ", ".join(f"`{c}`" for c in timed) + " that move with the block's time anyway.")
    return block(r, body, *sentences)


def _pages_sentence(x: dict, pages: int) -> str:
    """What a block did to the requester pages (``withdrawals/{address}.html``)."""
    if not pages:
        return ""
    if "pages_relative_words_only" not in x:  # an earlier run's report: the count alone
        return f"; {num(pages)} requester pages (`withdrawals/{{address}}.html`)"
    own, words = x["own_page_changed"], x["pages_relative_words_only"]
    rest = pages - own - words
    said = f"; {'its requester page' if own else 'no page of its requester'}"
    if words:  # runs before the pages' relative times were their script's
        said += (f"; {num(words)} other requester pages whose relative times (\"in 3 days\") alone moved with "
                 "the block's time")
    return said + (f", and {num(rest)} other requester pages for other reasons" if rest else ", and no other page")


TABLES: dict[str, Callable[[dict], str]] = {
    "snapshot": snapshot, "pipeline": pipeline, "growth": growth, "live": live,
    "function": function, "serve": serve, "soak": soak, "mainnet": mainnet, "queue": queue, "watch": watch,
    "watch-scale": watch,
}


def load(name: str, results: Path = RESULTS) -> dict:
    return json.loads((results / f"{name}.json").read_text(encoding="utf-8"))


def sections(results: Path = RESULTS) -> readme.Sections:
    return {f"bench-{name}": (DOC, lambda name=name, make=make: make(load(name, results))) for name, make in TABLES.items()}


if __name__ == "__main__":
    readme.main(sections())
