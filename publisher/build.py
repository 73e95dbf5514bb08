"""Stage two and three: Snapshot -> responses -> validated files. The core that writes out/ is
publisher.pipeline; this module keeps the snapshot invariants and an in-memory render."""
from __future__ import annotations

import os
import time
from pathlib import Path

from .config import Profile
from .endpoints.registry import resolve
from .errors import PublisherError, every_cause
from .snapshot import Snapshot


def generated_at() -> int:
    # SOURCE_DATE_EPOCH makes rebuilds byte-identical, /status included.
    return int(os.environ.get("SOURCE_DATE_EPOCH") or time.time())


def render(snap: Snapshot, profile: Profile) -> dict[str, bytes]:
    """Every file of the API in memory, by URL path, in registry order (/status last): a full
    render with no previous run, for tests and offline comparison (``build`` writes out/)."""
    from .pipeline import bodies, context, encode, final_bodies, sha256

    check_snapshot(snap)
    ctx = context(snap, profile)
    files = {path: encode(path, resolve(value)) for _, path, value in bodies(ctx)}
    digests = {path: (sha256(data), len(data)) for path, data in files.items()}
    files.update({path: encode(path, body) for _, path, body in final_bodies(ctx, digests)})
    return files


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
        raise PublisherError(f"snapshot invariant violated: {every_cause(problems)}")
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


def build(snap: Snapshot, profile: Profile, out_dir: str | Path, *, force: bool = False, full: bool = False):
    """Build into out_dir (see publisher.pipeline.build)."""
    from .pipeline import build as run

    return run(snap, profile, out_dir, force=force, full=full)


def write_tree(out_dir: Path, files: dict[str, bytes]) -> None:
    """Swap in a tree of the given files, unvalidated and without a record (hand-made trees)."""
    from .pipeline import write_files

    write_files(out_dir, files)
