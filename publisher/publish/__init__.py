"""Stage four: upload a built directory to S3 (+ CloudFront), changed objects only, /status last.

Order of a run: guards (schemas and invariants, then the change bounds against the live data),
entity files, aggregates, docs, deletes of removed entities, one docs invalidation, the manifest,
/status. Anything failing stops the run with the manifest and /status still describing the
previous one; a rerun uploads what is still missing and completes it.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from ..errors import PublisherError
from ..validate import compare_previous, load_dir, network_profile, strict_loads, validate
from .plan import MANIFEST_KEY, Item, Plan, items, make_plan, normalize_prefix, object_key
from .s3 import S3Sink

__all__ = ["publish", "Result", "Plan"]

# The live objects the change bounds read (accumulated files: they may only grow).
GUARDED = ("/status", "/prices", "/metrics", "/prices/history")
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

    def describe(self) -> list[str]:
        live = f"live block {self.live_block}" if self.live_block is not None else "nothing live yet"
        lines = [f"target    {self.target} (block {self.block}, {live})"]
        p = self.plan
        if self.dry_run:
            return lines + p.describe() + ["dry run   nothing changed"]
        lines.append(f"published {len(p.upload)} objects ({p.upload_bytes:,} bytes), {len(p.unchanged)} unchanged, "
                     f"{len(p.delete)} deleted" + (", manifest" if p.manifest_changed else "")
                     + f" in {self.seconds:.2f}s")
        if self.invalidation:
            lines.append(f"invalidated {', '.join(p.invalidation_paths)} ({self.invalidation})")
        return lines


def publish(directory: str | Path, bucket: str, prefix: str = "", *, endpoint_url: str | None = None,
            region: str | None = None, distribution_id: str | None = None, dry_run: bool = False,
            force: bool = False, max_age: int | None = None, workers: int = 16, session=None) -> Result:
    t0 = time.monotonic()
    prefix = normalize_prefix(prefix)
    files = load_dir(directory)
    if "/status" not in files:
        raise PublisherError(f"{directory} is not a built directory (no status.json)")
    status, profile = _check(files, directory)

    sink = S3Sink(bucket, endpoint_url=endpoint_url, region=region, session=session, workers=workers)
    target = sink.where(prefix)
    live = {url: sink.get(object_key(prefix, url)) for url in GUARDED}
    live = {url: body for url, body in live.items() if body is not None}
    if not force:
        problems = _guards(live, files, status, profile)
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            raise PublisherError(f"refusing to publish to {target}: {problems[0]}{more}; --force overrides")

    plan = make_plan(items(files, prefix, max_age or status.get("cadenceSeconds") or DEFAULT_MAX_AGE),
                     prefix=prefix, status=status, old_manifest=sink.get(prefix + MANIFEST_KEY),
                     present=sink.sizes(prefix), live_status=live.get("/status"))
    result = Result(plan, target, status["block"]["number"], _block(live.get("/status")), dry_run)
    if not dry_run:
        result.invalidation = _execute(plan, sink, distribution_id, workers)
    result.seconds = time.monotonic() - t0
    return result


def _check(files: dict[str, bytes], directory) -> tuple[dict, object]:
    """Refuse a directory that would not pass `publisher check`; returns its status and profile."""
    try:
        profile = network_profile(files, directory)
    except PublisherError as exc:
        raise PublisherError(f"refusing to publish {exc}") from None
    problems = validate(files, feed_max_age=profile.feed_max_age, oracle_max_age=profile.oracle_max_age)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PublisherError(f"refusing to publish {directory}: {problems[0]}{more}")
    return strict_loads(files["/status"]), profile


def _guards(live: dict[str, bytes], files: dict[str, bytes], status: dict, profile) -> list[str]:
    """Change bounds against the live run, and no silent switch of network under a bucket
    (compare_previous alone would skip its checks across networks)."""
    try:
        was = strict_loads(live["/status"])
        network = (was["network"], was["chainId"])
    except (KeyError, TypeError, ValueError):
        return []  # nothing (readable) live yet
    if network != (status["network"], status["chainId"]):
        return [f"the live data is {network[0]} (chain {network[1]}), this build is "
                f"{status['network']} (chain {status['chainId']})"]
    return compare_previous(live, files, max_price_move_pct=profile.max_price_move_pct,
                            max_staker_drop_pct=profile.max_staker_drop_pct)


def _block(status: bytes | None) -> int | None:
    try:
        return int(strict_loads(status)["block"]["number"])
    except (TypeError, ValueError, KeyError):
        return None


def _execute(plan: Plan, sink: S3Sink, distribution_id: str | None, workers: int) -> str | None:
    for wave in ("entities", "aggregates", "docs"):
        _put_all(sink, plan.wave(wave), workers)
    if plan.delete:
        sink.delete(plan.delete)
    invalidation = None
    if distribution_id and plan.invalidation_paths:
        # Before the manifest: if the run stops after this, the rerun re-sends the same request
        # (same reference), so the docs are never left cached and unrecorded.
        invalidation = sink.invalidate(distribution_id, plan.invalidation_paths, plan.manifest_sha256)
    if plan.manifest_changed:
        sink.put_bytes(plan.manifest_key, plan.manifest, "application/json", "no-store", plan.manifest_sha256)
    for item in plan.wave("final"):
        sink.put(item)
    return invalidation


def _put_all(sink: S3Sink, wave: list[Item], workers: int) -> None:
    if not wave:
        return
    pool = ThreadPoolExecutor(max_workers=min(workers, len(wave)), thread_name_prefix="publish")
    try:
        for future in as_completed([pool.submit(sink.put, item) for item in wave]):
            future.result()  # the first failure stops the run
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
