"""Stage two and three: Snapshot -> responses -> validated files. The core that writes out/ is
publisher.pipeline; this module keeps an in-memory render."""
from __future__ import annotations

import os
import time
from pathlib import Path

from . import snapshot
from .config import Profile
from .endpoints.registry import resolve
from .snapshot import Snapshot


def generated_at() -> int:
    # SOURCE_DATE_EPOCH makes rebuilds byte-identical, /status included.
    return int(os.environ.get("SOURCE_DATE_EPOCH") or time.time())


def render(snap: Snapshot, profile: Profile) -> dict[str, bytes]:
    """Every file of the API in memory, by URL path, in registry order (/status last): a full
    render with no previous run, for tests and offline comparison (``build`` writes out/)."""
    from .pipeline import bodies, context, encode, final_bodies, sha256

    snapshot.check(snap)
    ctx = context(snap, profile)
    files = {path: encode(path, resolve(value)) for _, path, value in bodies(ctx)}
    digests = {path: (sha256(data), len(data)) for path, data in files.items()}
    files.update({path: encode(path, body) for _, path, body in final_bodies(ctx, digests)})
    return files


def build(snap: Snapshot, profile: Profile, out_dir: str | Path, *, force: bool = False, full: bool = False):
    """Build into out_dir (see publisher.pipeline.build)."""
    from .pipeline import build as run

    return run(snap, profile, out_dir, force=force, full=full)


def write_tree(out_dir: Path, files: dict[str, bytes]) -> None:
    """Swap in a tree of the given files, unvalidated and without a record (hand-made trees)."""
    from .tree import write_files

    write_files(out_dir, files)
