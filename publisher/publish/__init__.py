"""Stage four: upload a built directory to S3 (+ CloudFront), changed objects only, /status last.

Order of a run: guards (the directory is a validated build; the change bounds against the live
data), entity files, aggregates, docs, deletes of removed entities, one docs invalidation, the
manifest's changed shards and its root, /status. Anything failing stops the run with the root and
/status still describing the previous one; a rerun uploads what is still missing and completes it.

A directory written by ``publisher build`` carries the build's record of every file's sha256: it
is trusted (the build validated every file) once every file is found as recorded (``tree.changes``:
none edited, missing or added since), and only the files to upload are read, each checked against
its recorded digest. Any other directory is read and validated whole, as ``check`` does.
"""
from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import partial
from itertools import takewhile
from pathlib import Path

from ..build.tree import Record, changes, read_record, trees
from ..build.validate import bounded_paths, compare_previous, load_dir, network_profile, strict_loads, validate
from ..deadline import Background
from ..endpoints.meta import STATUS_PATH
from ..endpoints.registry import file_for
from ..errors import PublisherError, every_cause
from .plan import (
    MANIFEST_KEY,
    RECONCILE_SECONDS,
    Item,
    Plan,
    Root,
    items,
    make_plan,
    normalize_prefix,
    object_key,
    parse_root,
    parse_shard,
    sha256,
    shard_key,
    shards,
    shards_to_read,
)
from .s3 import S3Sink

__all__ = ["Plan", "Result", "publish"]

DEFAULT_MAX_AGE = 60


@dataclass
class Result:
    plan: Plan
    target: str
    block: int
    live_block: int | None
    dry_run: bool
    seconds: float = 0.0
    invalidation: str | None = None
    requests: dict[str, int] = field(default_factory=dict)

    def describe(self) -> list[str]:
        live = f"live block {self.live_block}" if self.live_block is not None else "nothing live yet"
        lines = [f"target    {self.target} (block {self.block}, {live})"]
        p = self.plan
        if self.dry_run:
            return lines + p.describe() + ["dry run   nothing changed"]
        manifest = f", manifest ({len(p.shards)} shards)" if p.manifest_changed else ""
        lines.append(f"published {len(p.upload)} objects ({p.upload_bytes:,} bytes), {len(p.unchanged)} unchanged, "
                     f"{len(p.delete)} deleted" + manifest + (", full reconcile" if p.reconcile else "")
                     + f" in {self.seconds:.2f}s")
        if self.invalidation:
            lines.append(f"invalidated {', '.join(p.invalidation_paths)} ({self.invalidation})")
        return lines


class Local:
    """A built directory's files: URL path -> (sha256, size, …), and their bytes on demand.

    ``built``: the record of the tree as this process's build just wrote it, every file checked
    as it was written or carried. It stands for the tree's record without the walk over the tree
    that compares every file with it: that walk only names early a file edited since the build,
    and such a file is refused anyway when it is to be uploaded (each is read and checked against
    its digest), while one not uploaded is already live as built."""

    def __init__(self, directory: str | Path, built: Record | None = None):
        self.root = Path(directory).resolve()  # one tree, even if a build flips out/ meanwhile
        link = Path(directory)
        # The other tree of a build's two (``tree.trees``): the build before this one's.
        self.other = trees(link)[1] if link.is_symlink() else None
        self.cache: dict[str, bytes] = {}
        try:
            status = (self.root / "status.json").read_bytes()
        except OSError:
            raise PublisherError(f"{directory} is not a built directory (no status.json)") from None
        record = built or read_record(self.root)
        recorded = record.files.get("/status") if record else None
        if record and recorded and recorded.sha256 == sha256(status):
            changed = changes(self.root, record) if built is None else []
            if changed:
                more = f" (and {len(changed) - 3} more)" if len(changed) > 3 else ""
                raise PublisherError(f"refusing to publish {directory}: {'; '.join(changed[:3])}{more}; "
                                     "build again to replace them")
            # The record's entries as they are: each begins (sha256, size), and copying 34 000 of
            # them cost a watch's publish more than the rest of its look at the tree.
            self.files: Mapping[str, tuple] = record.files
            self.trusted = True
        else:
            self.cache = load_dir(self.root)
            self.files = {url: (sha256(b), len(b)) for url, b in self.cache.items()}
            self.trusted = False
        self.status_bytes = status
        self.status = strict_loads(status)

    def read(self, url: str) -> bytes:
        data = self.cache.get(url)
        if data is None:
            data = (self.root / file_for(url)).read_bytes()
            if sha256(data) != self.files[url][0]:
                raise PublisherError(f"refusing to publish {self.root}: {url} changed since it was built "
                                     "(publisher check says more)")
        return data

    def earlier(self, url: str, digest: str) -> bytes | None:
        """``url``'s file in the other tree behind ``out`` (the build before this one), if it is
        there with this sha256; else None."""
        if self.other is None:
            return None
        try:
            data = (self.other / file_for(url)).read_bytes()
        except OSError:
            return None
        return data if sha256(data) == digest else None

    def check(self, directory) -> object:
        """Refuse a directory that would not pass `publisher check`; returns its network's profile."""
        try:
            profile = network_profile({"/status": self.status_bytes}, directory)
        except PublisherError as exc:
            raise PublisherError(f"refusing to publish {exc}") from None
        if not self.trusted:
            problems = validate(self.cache, feed_max_age=profile.feed_max_age, oracle_max_age=profile.oracle_max_age)
            if problems:
                raise PublisherError(f"refusing to publish {directory}: {every_cause(problems)}")
        return profile


def publish(directory: str | Path, bucket: str, prefix: str = "", *, endpoint_url: str | None = None,
            region: str | None = None, distribution_id: str | None = None, dry_run: bool = False,
            force: bool = False, max_age: int | None = None, workers: int = 16, session=None,
            verify: bool = False, sink: S3Sink | None = None, built: Record | None = None,
            look: LiveLook | None = None) -> Result:
    """``sink``: the caller's client for ``bucket``, kept from run to run (``publisher watch``);
    else one is made for this run. ``built``: the record of the tree ``directory`` points at, as
    the caller's build just wrote it (see ``Local``). ``look``: the live /status and manifest,
    asked for by the caller with ``sink`` before it built (see ``LiveLook``)."""
    t0 = time.monotonic()
    stragglers = [t.name for t in threading.enumerate() if t.name.startswith(_THREADS) and t.is_alive()]
    if stragglers:
        # Left by a run its deadline stopped (``_map``): one landing after this run's upload of
        # the same object would put the older bytes back under this run's manifest.
        raise PublisherError(f"{len(stragglers)} request(s) of an earlier run are still in flight: publishing once "
                             "they end")
    prefix = normalize_prefix(prefix)
    if sink is None:
        sink = S3Sink(bucket, endpoint_url=endpoint_url, region=region, session=session, workers=workers)
    elif sink.bucket != bucket:
        raise ValueError(f"a client for s3://{sink.bucket} cannot publish to s3://{bucket}")
    target = sink.where(prefix)
    look = LiveLook.at(sink, prefix, look)
    local = Local(directory, built)
    profile = local.check(directory)
    status = local.status
    live_status, live_root_bytes = look.result()
    counted = look.requests  # the run's requests count from its look's start (a watch's history check included)
    live_root = parse_root(live_root_bytes)
    all_items = items(local.files, prefix, max_age or status.get("cadenceSeconds") or DEFAULT_MAX_AGE)
    local_shards = shards(all_items)
    names = shards_to_read(all_items, live_root, local_shards)
    live_shards = dict(zip(names, _map(lambda n: parse_shard(sink.get(shard_key(prefix, n))), names, workers), strict=True))

    if not force:
        problems = _guards(_live_guarded(sink, prefix, live_status, live_root, live_shards, all_items, local), local, status, profile)
        if problems:
            raise PublisherError(f"refusing to publish to {target}: {every_cause(problems)}; --force overrides")

    now = int(time.time())
    # A reconcile time ahead of this clock (skewed, or written by hand) is no reason never to reconcile.
    reconcile = verify or live_root is None or not 0 <= now - live_root.reconciled_at < RECONCILE_SECONDS
    listing = md5 = None
    if reconcile:
        listing = sink.listing(prefix)
        md5 = lambda x: hashlib.md5(x if isinstance(x, bytes) else local.read(x.url)).hexdigest()  # noqa: E731
    plan = make_plan(all_items, prefix=prefix, status=status, live_root=live_root, live_shards=live_shards,
                     live_status=live_status, listing=listing, md5=md5, now=now, local_shards=local_shards)
    result = Result(plan, target, status["block"]["number"], _block(live_status), dry_run)
    if not dry_run:
        for item in plan.upload:  # every file it sends is the file the build validated, or nothing is sent
            local.read(item.url)
        result.invalidation = _execute(plan, sink, local, distribution_id, workers)
    result.seconds = time.monotonic() - t0
    result.requests = dict(sink.requests - counted)
    return result


class LiveLook:
    """The live /status and manifest root under ``prefix``, asked for from now on, on threads of
    their own (reads only: a look still in flight when a run fails changes nothing). ``publisher
    watch`` starts one before a turn's read, so its publish finds them in hand instead of asking
    after the build; a publish started without one starts its own. What the plan then compares with
    is the live data as of the look, as a publish's plan always is as of its reads: another
    publisher's run landing in between is what the manifest's next reconcile settles."""

    def __init__(self, sink: S3Sink, prefix: str = ""):
        self.sink, self.prefix = sink, normalize_prefix(prefix)
        self.requests = sink.requests.copy()  # before the look's own
        self._gets = [Background(partial(sink.get, key), "publish-live", sink.where(self.prefix))
                      for key in (object_key(self.prefix, "/status"), self.prefix + MANIFEST_KEY)]

    @classmethod
    def at(cls, sink: S3Sink, prefix: str, look: LiveLook | None) -> LiveLook:
        """``look``, which must be one at ``sink``'s ``prefix``; without one, a look started now
        (asked for while the local tree is looked at)."""
        if look is None:
            return cls(sink, prefix)
        if (look.sink, look.prefix) != (sink, prefix):
            raise ValueError(f"a look at {look.sink.where(look.prefix)} cannot stand for {sink.where(prefix)}")
        return look

    def status(self) -> bytes | None:
        """The live /status, or None; waits for it."""
        return self._gets[0].result()

    def result(self) -> tuple[bytes | None, bytes | None]:
        """(live /status, live manifest root), each None if absent; waits for both."""
        return self._gets[0].result(), self._gets[1].result()


def _live_guarded(sink: S3Sink, prefix: str, live_status: bytes | None, live_root: Root | None, live_shards: dict,
                  all_items: list[Item], local: Local) -> dict[str, bytes]:
    """The live objects the change bounds read. Without a readable manifest every one is fetched
    (the bounds would otherwise compare ours with itself). With it, one the manifest says equals
    ours is ours, and one it says equals the tree built before ours (still beside it: a watch's
    last publish) is read from there, its digest checked; only the others are fetched."""
    live = {STATUS_PATH: live_status} if live_status is not None else {}
    # The bounded files are aggregates, which follow the entity files in upload order (plan.WAVES).
    by_url = {i.url: i for i in takewhile(lambda i: i.wave != "entities", reversed(all_items))}
    fetch = []
    known = live_root is not None and live_status is not None
    for url in bounded_paths():
        item = by_url.get(url)
        if item is None:
            continue
        if known and item.shard not in live_shards:
            live[url] = local.read(url)  # its shard is the root's, unchanged: the live object is ours
            continue
        entry = (live_shards.get(item.shard) or {}).get(item.key) if known else None
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if digest == item.sha256:
            live[url] = local.read(url)
            continue
        body = local.earlier(url, digest) if isinstance(digest, str) else None
        if body is not None:
            live[url] = body
        else:
            fetch.append(url)
    for url, body in zip(fetch, _map(lambda u: sink.get(object_key(prefix, u)), fetch, 4), strict=True):
        if body is not None:
            live[url] = body
    return live


def _guards(live: dict[str, bytes], files, status: dict, profile) -> list[str]:
    """Change bounds against the live run, and no silent switch of network under a bucket
    (compare_previous alone would skip its checks across networks)."""
    try:
        was = strict_loads(live[STATUS_PATH])
        network = (was["network"], was["chainId"])
    except (KeyError, TypeError, ValueError):
        return []  # nothing (readable) live yet
    if network != (status["network"], status["chainId"]):
        return [f"the live data is {network[0]} (chain {network[1]}), this build is "
                f"{status['network']} (chain {status['chainId']})"]
    return compare_previous(live, _Files(files), max_price_move_pct=profile.max_price_move_pct,
                            max_staker_drop_pct=profile.max_staker_drop_pct)


def _block(status: bytes | None) -> int | None:
    if status is None:
        return None
    try:
        return int(strict_loads(status)["block"]["number"])
    except (TypeError, ValueError, KeyError, ArithmeticError):  # 1e400 is an infinite float
        return None


def _execute(plan: Plan, sink: S3Sink, local: Local, distribution_id: str | None, workers: int) -> str | None:
    rounds = (("entities",), ("aggregates",), ("docs",)) if plan.new_entities else (("entities", "aggregates"), ("docs",))
    for waves in rounds:
        _map(lambda i: sink.put(i, local.read(i.url)), [i for w in waves for i in plan.wave(w)], workers)
    if plan.delete:
        sink.delete(plan.delete)
    invalidation = None
    if distribution_id and plan.invalidation_paths:
        # Before the manifest: if the run stops after this, the rerun re-sends the same request
        # (same reference), so the docs are never left cached and unrecorded.
        invalidation = sink.invalidate(distribution_id, plan.invalidation_paths, plan.manifest_sha256)
    _map(lambda kv: sink.put_bytes(kv[0], kv[1], "application/json", "no-store", sha256(kv[1])),
         list(plan.shards.items()), workers)
    if plan.manifest_changed:
        sink.put_bytes(plan.manifest_key, plan.manifest, "application/json", "no-store", plan.manifest_sha256)
    for item in plan.wave("final"):
        sink.put(item, local.read(item.url))
    return invalidation


class _Files(Mapping):
    """The local files by URL path, read when the guards ask."""

    def __init__(self, local: Local):
        self.local = local

    def __getitem__(self, url: str) -> bytes:
        if url not in self.local.files:
            raise KeyError(url)
        return self.local.read(url)

    def __iter__(self):
        return iter(self.local.files)

    def __len__(self) -> int:
        return len(self.local.files)


_THREADS = "publish-request"  # the name of _map's threads


def _map(fn, work: list, workers: int) -> list:
    """fn over work on a thread pool, results in order; a failure stops the run, and the one
    reported is the first in work's order among those that failed (the same on every rerun)."""
    if len(work) <= 1:
        return [fn(w) for w in work]
    pool = ThreadPoolExecutor(max_workers=min(workers, len(work)), thread_name_prefix=_THREADS)
    try:
        futures = [pool.submit(fn, w) for w in work]
        for future in as_completed(futures):
            if future.exception() is not None:
                break
    except BaseException:
        # The run's deadline or an interrupt: a request stalled on a slow server must not hold
        # it (botocore bounds each socket wait, not a whole request).
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True, cancel_futures=True)
    return [f.result() for f in futures if not f.cancelled()]
