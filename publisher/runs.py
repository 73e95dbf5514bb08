"""One run of the publisher, composed from the stages: read the chain and the sources, build,
publish. ``publisher build`` is the first two, ``publisher watch`` all three for every head that
changes the protocol."""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .build import incremental, pipeline
from .build.incremental import Cache
from .build.pipeline import Built
from .build.tree import read_file, sha256
from .build.validate import older_block, strict_loads
from .config import Profile
from .errors import PublisherError
from .progress import Progress
from .snapshot import Snapshot
from .sources import history_file

# The chain's modules (and their ABI libraries) are loaded by a run that reads it: a build from a
# saved snapshot, like check, serve and publish, starts without them.
if TYPE_CHECKING:
    from .collect import Collected
    from .publish import LiveLook
    from .publish.s3 import S3Sink
    from .sources.queuelog import PriorActivity


@dataclass(frozen=True)
class Target:
    """Where ``publish`` sends a built directory."""

    bucket: str
    prefix: str = ""
    endpoint_url: str | None = None
    region: str | None = None
    distribution_id: str | None = None
    max_age: int | None = None


@dataclass
class Run:
    collected: Collected
    built: Built
    published: object | None = None  # publish.Result
    seconds: dict[str, float] = field(default_factory=dict)  # by stage


def build(snap: Snapshot, profile: Profile, out: str | Path, *, cache: Cache, workers: int, force: bool = False,
          full: bool = False) -> Built:
    """``snap`` built into ``out``: by the incremental layer with the caller's ``cache`` and
    ``workers`` processes, or with ``full`` by the plain core (every file rendered and validated
    in this process; the same bytes)."""
    if full:
        return pipeline.build(snap, profile, out, force=force)
    return incremental.build(snap, profile, out, cache=cache, workers=workers, force=force)


def read_and_build(profile: Profile, out: str | Path, block: int | None = None, *, cache: Cache, workers: int,
                   force: bool = False, full: bool = False, progress: Progress | None = None,
                   history_from: Path | None = None, not_older: bool = False) -> Run:
    """The snapshot at ``block`` (the head when None), built into ``out`` (see ``build``). The price
    history resumes from ``history_from`` (a published ``/prices/history``), else from the one
    ``out`` already holds; the withdraw queue's log scan (its activity and receipts) from the
    ``/withdrawals`` and the requester files ``out`` holds. ``not_older``: refuse a block older than
    ``out``'s even when ``force`` lets the build through."""
    from .collect import collect
    from .sources import queuelog

    t0 = time.monotonic()
    prior = history_file.load_published(history_from or Path(out) / "prices" / "history.json")
    got = collect(profile, block, progress, history_prior=prior, queue_prior=_queue_prior(Path(out), cache), known=cache.known)
    if (got.replaced is not None and not force) or not_older:
        _new_head_not_older(got, Path(out))
    t1 = time.monotonic()
    built = build(got.snapshot, profile, out, cache=cache, workers=workers, force=force, full=full)
    published = built.record.files.get("/withdrawals") if built.record else None
    resumable = queuelog.from_snapshot(got.snapshot)
    cache.queue = (published.sha256, resumable) if published and resumable else None
    return Run(got, built, seconds={"read": t1 - t0, "build": time.monotonic() - t1})


def _queue_prior(out: Path, cache: Cache) -> PriorActivity | None:
    """Where the withdraw queue's log scan resumes: what the cache's last build published, while
    ``out``'s /withdrawals is still the file it wrote (the same as reading it back, which a test
    holds it to), else what ``out`` holds, read from its files."""
    published = out / "withdrawals.json"
    if cache.queue is not None:
        sha, prior = cache.queue
        with contextlib.suppress(OSError):
            if sha256(read_file(str(published))) == sha:
                return prior
    from .sources import queuelog

    return queuelog.load_published(published, out / "withdrawals")


def _new_head_not_older(got: Collected, out: Path) -> None:
    """A block older than the one ``out`` holds is refused before anything is built: after a
    reorg, naming it (the build's own guard would name only the older block), or from a node behind
    the one read last (a lagging fallback URL): built anyway, ``out`` would move back, its price
    history rebuilt shorter than the live one, which every later run would then be refused for."""
    snap = got.snapshot
    try:
        status = (out / "status.json").read_bytes()
    except OSError:
        return
    if not older_block(status, snap.network, snap.chain_id, snap.block.number):
        return
    live = strict_loads(status)["block"]["number"]
    if got.replaced is not None:
        raise PublisherError(f"{got.replaced.what()}, and the new head, block {snap.block.number}, is older than the "
                             f"last run's {live}: nothing was written")
    raise PublisherError(f"block {snap.block.number} is older than the last run's {live} (a node behind the one read "
                         "last?): nothing was written")


def read_build_publish(profile: Profile, out: str | Path, target: Target, *, cache: Cache, workers: int,
                       history_from: Path | None = None, sink: S3Sink | None = None, look: LiveLook | None = None) -> Run:
    """A whole run at the head: nothing is published unless the build passed every guard, and
    publish applies its own (the change bounds against the live data, /status last). ``sink``:
    the caller's client for the target's bucket (see ``publish``); ``look``: the live /status and
    manifest the caller asked for with it before the read (``publish.LiveLook``)."""
    from .publish import publish

    # The change bounds are applied once, by publish, against the live data users see: the local
    # tree may be older than what is live (a move published by hand with --force), and bounding
    # against it would refuse that move forever. Schemas and invariants still hold every build.
    run = read_and_build(profile, out, cache=cache, workers=workers, force=True, history_from=history_from, not_older=True)
    t0 = time.monotonic()
    run.published = publish(out, target.bucket, target.prefix, endpoint_url=target.endpoint_url,
                            region=target.region, distribution_id=target.distribution_id, max_age=target.max_age,
                            sink=sink, built=run.built.record, look=look)
    run.seconds["publish"] = time.monotonic() - t0
    return run
