"""Benchmark: the publisher against the living devnet for many protocol cycles, every published
forecast scored against what the protocol then paid.

The demo chain runs forward one protocol day per step (devnet/ggp_devnet/live.py: prices move,
deposits and withdraw-queue requests, minipools created/launched/cycled/ended/canceled/errored, GGP cycles
distributed on time or late). Every ``--every`` days the publisher builds into one ``out/``
(recording its share-price history as a deployment does). When a GGP distribution runs, every
build made since the previous one is scored: the node-operator pool forecast and each staker's
``/rewards/estimate?address=`` ``ggpPerCycleWei`` (worked out from ``/rewards/{address}`` and the
params, as the function does) against what the distribution paid. Every AVAX validation
reward paid is scored against the validator rate the latest build published.

By default the builds see no archive state (``apy_base`` dropped, as on a pruned node), so
``ggavax_apy`` must come from the recorded history or the reward stream; ``--archive`` keeps it.

Run: python benchmarks/bench_live.py [--cycles 10] [--every 5] [--seed 1] [--archive] [--json FILE]
(prints figures and, with ``--json``, writes them for docs/performance.md; no assertions — tests
assert behaviour)
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import record
from ggp_devnet import devnet_profile, running_live
from ggp_devnet.scenarios import DAY

from publisher.build.incremental import Cache, build
from publisher.build.workers import cores
from publisher.collect import collect
from publisher.compute import rewards as R
from publisher.config import load_profile
from publisher.sources import history_file

WAD = 10**18
YEAR = 365 * DAY


@dataclasses.dataclass
class Published:
    time: int
    due: int
    overdue: bool
    pool: int
    stakers: dict[str, int]  # lower-case address -> ggpPerCycleWei
    rate_wad: int
    rate_source: str
    apy: float | None
    apy_method: str | None


def read_build(out: Path) -> Published:
    def read(path: str) -> dict:
        return json.loads((out / (path.lstrip("/") + ".json")).read_text())

    params, metrics, apy = read("/rewards/params"), read("/metrics"), read("/metrics/apy")
    stakers = {}
    parsed = R.parse_params(params)
    for f in (out / "rewards").glob("0x*.json"):
        # What /rewards/estimate?address= answers: the function's code on the staker's file and the params.
        estimate = R.staker_estimate(parsed, R.parse_staker(json.loads(f.read_text())))
        stakers[f.stem] = int(estimate["result"]["ggpPerCycleWei"])
    return Published(params["block"]["timestamp"], params["nextDistributionTime"], params["overdue"],
                     int(params["forecast"]["nodeOpPoolWei"]), stakers, int(params["validatorRate"]["wad"]),
                     params["validatorRate"]["source"], metrics["ggavax_apy"], apy["method"])


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def stats(values: list[float]) -> dict:
    """Samples, exact ones, the median, p90 and largest error by size, the largest with its sign and
    the mean with its sign."""
    a = [abs(v) for v in values]
    if not values:
        return {"samples": 0}
    return {"samples": len(values), "exact": sum(v == 0 for v in values), "median_abs": statistics.median(a),
            "p90_abs": pct(a, 0.9), "max_abs": max(a), "max_signed": max(values, key=abs), "mean_signed": statistics.fmean(values)}


def late_summary(delays: list[float]) -> dict:
    """How many scored distributions ran late, and by how many days at least and at most."""
    late = [d for d in delays if d]
    return {"count": len(late), "min_days": min(late, default=0), "max_days": max(late, default=0), "days": delays}


def summary(name: str, values: list[float], unit: str = "%") -> str:
    if not values:
        return f"{name}: no samples"
    a = [abs(v) for v in values]
    return (f"{name}: n={len(values)}  median |err| {statistics.median(a):.4g}{unit}  p90 {pct(a, 0.9):.4g}{unit}  "
            f"max {max(a):.4g}{unit}  mean signed {statistics.fmean(values):+.4g}{unit}  exact {sum(v == 0 for v in values)}")


KINDS = ("distribution on time", "distribution late, built before the cycle end", "built while overdue")


@dataclasses.dataclass
class Scores:
    """Every build's forecasts against what the live chain then paid."""

    pool_err: dict[str, list[float]] = dataclasses.field(default_factory=lambda: {k: [] for k in KINDS})
    staker_err: dict[str, list[float]] = dataclasses.field(default_factory=lambda: {k: [] for k in KINDS})
    staker_rel: dict[str, list[float]] = dataclasses.field(default_factory=lambda: {k: [] for k in KINDS})
    staker_exact_builds: int = 0
    horizon_err: dict[int, list[float]] = dataclasses.field(default_factory=dict)
    avax_err: list[float] = dataclasses.field(default_factory=list)
    apy_null_after_first: int = 0
    build_seconds: list[float] = dataclasses.field(default_factory=list)

    def distribution(self, d, delay: int, pending: list[Published]) -> None:
        """Score the builds made since the previous distribution against the one that just ran."""
        for b in pending:
            kind = KINDS[2] if b.overdue else KINDS[1] if delay else KINDS[0]
            self.pool_err[kind].append((b.pool - d.nodeop_total) / d.nodeop_total * 100)
            self.horizon_err.setdefault((d.time - b.time) // (7 * DAY), []).append((b.pool - d.nodeop_total) / d.nodeop_total * 100)
            self._stakers(kind, b, {a.lower(): v for a, v in d.paid.items()})

    def _stakers(self, kind: str, b: Published, paid: dict[str, int]) -> None:
        errs = []
        for addr in set(b.stakers) | set(paid):
            got, want = b.stakers.get(addr, 0), paid.get(addr, 0)
            if got or want:
                errs.append((got - want) / WAD)  # GGP
            if want:
                self.staker_rel[kind].append((got - want) / want * 100)
        self.staker_err[kind] += errs
        self.staker_exact_builds += all(e == 0 for e in errs)

    def payments(self, payments, builds: list[Published]) -> None:
        """AVAX rewards paid since the last look, against the latest published rate."""
        for p in payments:
            if p.reward > 0 and builds:
                forecast = p.principal * builds[-1].rate_wad * p.seconds / (WAD * YEAR)
                self.avax_err.append((forecast - p.reward) / p.reward * 100)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=10, help="GGP distributions to score")
    ap.add_argument("--every", type=int, default=5, help="protocol days between builds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--archive", action="store_true", help="let builds read archive state for the APY")
    ap.add_argument("--json", dest="json_path", help="also write the figures here")
    args = ap.parse_args()

    t0 = time.perf_counter()
    loads = record.Loads()
    loads.sample()
    builds: list[Published] = []
    pending: list[Published] = []
    sc = Scores()
    scored = 0
    with running_live(args.seed) as (net, live), tempfile.TemporaryDirectory() as tmp:
        profile = devnet_profile(load_profile("devnet"), net)
        out = Path(tmp) / "out"
        cache = Cache()  # one process building again and again, as `publisher watch`
        paid_seen = 0
        while scored < args.cycles:
            live.step()
            while len(live.distributions) > scored:
                d = live.distributions[scored]
                scored += 1
                sc.distribution(d, live.lateness.get(d.cycle - 1, 0), pending)
                pending = []
            sc.payments(live.payments[paid_seen:], builds)
            paid_seen = len(live.payments)
            if live.day % args.every == 0:
                build_once(args, profile, out, cache, sc)
                loads.sample()
                b = read_build(out)
                sc.apy_null_after_first += bool(builds) and b.apy is None
                builds.append(b)
                pending.append(b)
    report(args, sc, live, scored, builds, t0)
    if args.json_path:
        write_figures(args, sc, live, scored, builds, t0, loads)


def build_once(args, profile, out: Path, cache: Cache, sc: Scores) -> None:
    tb = time.perf_counter()
    prior = history_file.load_published(out / "prices" / "history.json")
    snap = collect(profile, history_prior=prior).snapshot
    if not args.archive:
        snap = dataclasses.replace(snap, apy_base=None)
    build(snap, profile, out, cache=cache, workers=cores(), force=True)
    sc.build_seconds.append(time.perf_counter() - tb)


def report(args, sc: Scores, live, scored: int, builds: list[Published], t0: float) -> None:
    print(f"live devnet seed {args.seed}: {live.day} protocol days, {scored} GGP distributions scored, "
          f"{len(builds)} builds (every {args.every} days, median {statistics.median(sc.build_seconds):.2f}s), "
          f"{time.perf_counter() - t0:.0f}s wall")
    print(f"distributions: {len(live.distributions)} (cycles {live.distributions[0].cycle}..{live.distributions[-1].cycle}); "
          f"delays drawn (days): {sorted(v / DAY for v in live.lateness.values())}")
    print("GGP node-operator pool, forecast vs paid (percent of paid):")
    for kind, v in sc.pool_err.items():
        print("  " + summary(kind, v))
    for h in sorted(sc.horizon_err):
        print("  " + summary(f"built {h}-{h + 1} weeks before", sc.horizon_err[h]))
    print("GGP per staker, forecast - paid (GGP):")
    for kind, v in sc.staker_err.items():
        print("  " + summary(kind, v, " GGP"))
    print("GGP per staker paid something, (forecast - paid) / paid:")
    for kind, v in sc.staker_rel.items():
        print("  " + summary(kind, v))
    print(f"  builds whose every staker forecast was exact: {sc.staker_exact_builds}")
    print("AVAX per validation period, (forecast - paid) / paid:")
    print("  " + summary("payments", sc.avax_err))
    print(f"validator rate sources: {dict(Counter(b.rate_source for b in builds))}")
    print(f"ggavax_apy methods: {dict(Counter(b.apy_method for b in builds))}; "
          f"null after the first build: {sc.apy_null_after_first} of {len(builds) - 1}")


def write_figures(args, sc: Scores, live, scored: int, builds: list[Published], t0: float, loads) -> None:
    late_days = [live.lateness.get(d.cycle - 1, 0) / DAY for d in live.distributions[:scored]]
    record.write(args.json_path, {
        "seed": args.seed, "cycles": args.cycles, "every_days": args.every, "archive": args.archive,
        "days": live.day, "distributions": scored, "late": late_summary(late_days),
        "builds": len(builds), "build_seconds_median": statistics.median(sc.build_seconds),
        "wall_seconds": time.perf_counter() - t0,
        "pool_pct": {kind: stats(v) for kind, v in sc.pool_err.items()},
        "staker_pct": {kind: stats(v) for kind, v in sc.staker_rel.items()},
        "staker_ggp": {kind: stats(v) for kind, v in sc.staker_err.items()},
        "staker_exact_builds": sc.staker_exact_builds,
        "avax_pct": stats(sc.avax_err),
        "validator_rate_sources": dict(Counter(b.rate_source for b in builds)),
        "apy_methods": dict(Counter(b.apy_method for b in builds)),
        "apy_null_after_first": sc.apy_null_after_first,
    }, loads.seen)


if __name__ == "__main__":
    main()
