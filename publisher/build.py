"""Stage two and three: Snapshot -> responses -> validated files, written to out/ atomically."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import __version__
from .config import Profile
from .endpoints.context import Context
from .endpoints.registry import file_for, load_all
from .endpoints.units import dumps
from .errors import PublisherError
from .snapshot import Snapshot
from .validate import compare_previous, load_dir, validate


@dataclass
class Built:
    out_dir: Path
    files: dict[str, bytes]
    endpoints: int
    seconds: float

    @property
    def bytes(self) -> int:
        return sum(len(b) for b in self.files.values())


def generated_at() -> int:
    # SOURCE_DATE_EPOCH makes rebuilds byte-identical, /status included.
    return int(os.environ.get("SOURCE_DATE_EPOCH") or time.time())


def render(snap: Snapshot, profile: Profile) -> dict[str, bytes]:
    """Every file of the API, by URL path, in registry order (/status last)."""
    check_snapshot(snap)
    ctx = Context(snap, flags=profile.flags, generated_at=generated_at(),
                  cadence_seconds=profile.cadence_seconds, version=__version__,
                  validator_default_rate_pct=profile.validator_default_rate_pct)
    for ep in load_all().values():
        if ep.is_function:
            continue
        for path, body in ep.render(ctx):
            if not ep.pattern.match(path):
                raise PublisherError(f"{ep.path} rendered a file at {path}, outside its path template")
            if path in ctx.files:
                raise PublisherError(f"two responses for {path}")
            try:
                ctx.files[path] = body.encode() if isinstance(body, str) else dumps(body)
            except ValueError as exc:  # NaN or Infinity
                raise PublisherError(f"{path}: {exc}") from None
    return dict(ctx.files)


def check_snapshot(snap: Snapshot) -> None:
    """Exact invariants of the chain data itself, before anything is rendered."""
    problems = []
    total = sum(s.ggp_staked for s in snap.stakers)
    if total != snap.total_ggp_stake:
        problems.append(f"sum of staker ggpStaked ({total}) != getTotalGGPStake ({snap.total_ggp_stake})")
    if len(snap.minipools) != snap.minipool_count:
        problems.append(f"{len(snap.minipools)} minipools read, getMinipoolCount() is {snap.minipool_count}")
    if any(m.status > 6 for m in snap.minipools):
        problems.append("a minipool has an unknown status")
    if snap.oracle.price <= 0:
        problems.append("oracle GGP price is not positive")
    if snap.ggavax.amount_available_for_staking > snap.ggavax.total_assets:
        problems.append("ggAVAX amountAvailableForStaking exceeds totalAssets")
    for s in snap.stakers:
        if s.effective_ggp_staked > s.ggp_staked:
            problems.append(f"staker {s.staker_addr}: effective stake exceeds stake")
            break
    if problems:
        raise PublisherError(f"snapshot invariant violated: {problems[0]}" + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""))
    check_formula_inputs(snap)


def check_formula_inputs(snap: Snapshot) -> None:
    """The rewards formula refuses some chain values (an inflation rate above 2x per interval, an
    implausible cycle): name the value here, not as an error deep in rendering."""
    import json

    from .compute import params as P
    from .compute import rewards as R

    try:
        R.parse_params(json.loads(R.canonical_json(P.rewards_params(snap))))
    except R.ParamsError as exc:
        raise PublisherError(f"chain value outside the rewards formula's range at block {snap.block.number}: {exc}") from None


def build(snap: Snapshot, profile: Profile, out_dir: str | Path, *, force: bool = False) -> Built:
    t0 = time.monotonic()
    files = render(snap, profile)
    problems = validate(files, feed_max_age=profile.feed_max_age, oracle_max_age=profile.oracle_max_age)
    out = Path(out_dir)
    if out.is_dir() and not force:
        problems += compare_previous(load_dir(out), files, max_price_move_pct=profile.max_price_move_pct,
                                     max_staker_drop_pct=profile.max_staker_drop_pct)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PublisherError(f"refusing to write {out}: {problems[0]}{more}")
    write_tree(out, files)
    return Built(out, files, sum(1 for e in load_all().values() if not e.is_function), time.monotonic() - t0)


def write_tree(out_dir: Path, files: dict[str, bytes]) -> None:
    """Write into a sibling temp dir, then swap it in: readers never see a half-written out/."""
    out_dir = out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    try:
        targets = {path: tmp / file_for(path) for path in files}
        for folder in {t.parent for t in targets.values()}:
            folder.mkdir(parents=True, exist_ok=True)
        for path, target in targets.items():
            with open(target, "wb") as fh:
                fh.write(files[path])
        (tmp / ".gitkeep").touch()  # the repository keeps an empty out/ folder
        os.chmod(tmp, 0o755)
        old = None
        if out_dir.exists():
            old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
            os.rename(out_dir, old)
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
