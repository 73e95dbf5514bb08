"""What a publish will do, decided from the local digests and the parts of the bucket's manifest
that differ, without I/O.

Object keys mirror URL paths without the file extension (``/stakers/0xab…`` -> ``stakers/0xab…``,
``/`` -> ``index.html``). The bucket's manifest says what each key holds (sha256, size, headers):
mtimes and ETags say nothing about content across machines and multipart uploads. It is sharded so
a run moves what changed, not the whole list:

- ``_manifest.json``, the root: this run's stamp, the /status entry, a run counter, when the
  bucket was last reconciled and the sha256 of every shard;
- ``_manifest/<shard>.json``: the entries of one shard. Entity keys are spread over 256 shards by
  a hash of their last segment (so /stakers/0xab… and /rewards/0xab… share one); aggregates and
  docs form the shard ``aggregates``.

A run compares its own shards' digests with the root's and reads only the shards that differ. A
lost or tampered object is found by a full reconcile — a listing of the bucket compared with the
local files' MD5 (the ETag of a single-part upload) — on ``--verify``, when the root is missing or
unreadable, and once ``RECONCILE_SECONDS`` have passed since the last one (wall time, not runs:
``publisher watch`` may publish every few seconds).
"""
from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from .. import jsonin
from ..endpoints.registry import CACHE_POLICIES, match

MANIFEST_KEY = "_manifest.json"
SHARD_DIR = "_manifest/"
MANIFEST_FORMAT = "ggp-publisher-manifest/3"
AGGREGATES = "aggregates"
RECONCILE_SECONDS = 2 * 3600  # a listing costs one request per 1 000 objects
# Upload order. Entity files go before the aggregates that list them, so a client following a
# link from a fresh /stakers never meets a 404 (when every one of them is live already, a new
# version of it, they go together); docs after data; "final" (/status) after the manifest, so
# the live /status only ever describes complete data.
WAVES = ("entities", "aggregates", "docs", "final")
LISTED = 20  # paths shown per list in a printed plan


def normalize_prefix(prefix: str | None) -> str:
    prefix = (prefix or "").strip("/")
    return prefix + "/" if prefix else ""


def object_key(prefix: str, url_path: str) -> str:
    return prefix + ("index.html" if url_path == "/" else url_path.lstrip("/"))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical(doc) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


class Item(NamedTuple):
    """One local file as it is to be stored (its bytes are read only if it is uploaded). A tuple:
    a publish makes one per file, tens of thousands."""

    key: str
    url: str
    sha256: str
    size: int
    content_type: str
    cache_control: str
    wave: str
    shard: str  # the manifest shard that lists it

    def entry(self) -> dict:
        return {"sha256": self.sha256, "size": self.size, "contentType": self.content_type,
                "cacheControl": self.cache_control}


def shard_of(key: str, wave: str) -> str:
    if wave != "entities":
        return AGGREGATES
    return hashlib.sha256(key.rsplit("/", 1)[-1].encode()).hexdigest()[:2]


class _Last:
    """This process's last ``items`` and ``shards``: ``publisher watch`` publishes block after
    block, the same paths with a few files changed, and each is made again from the last one for
    the files that changed only (the same list and bytes as made afresh)."""

    # (files, prefix, max age, items in upload order, each path's place in them)
    items: tuple[dict[str, tuple], str, int, list[Item], dict[str, int]] | None = None
    # (items, each shard's places in them, each shard's body)
    shards: tuple[list[Item], dict[str, list[int]], dict[str, bytes]] | None = None


def items(files: Mapping[str, tuple], prefix: str, max_age: int) -> list[Item]:
    """Every file of a validated build (URL path -> (sha256, size, …): a record's entries, or
    pairs), in upload order."""
    last = _Last.items
    if (last is not None and last[1:3] == (prefix, max_age) and len(last[0]) == len(files)
            and files.keys() == last[0].keys()):
        before, out, place = last[0], list(last[3]), last[4]
        for url, value in files.items():
            if before[url] is not value and before[url][:2] != value[:2]:
                out[place[url]] = _item(url, value[0], value[1], prefix, max_age)
    else:
        rank = _upload_ranks(frozenset(files), prefix, max_age)
        order = sorted(files, key=rank.__getitem__)
        out = [_item(url, files[url][0], files[url][1], prefix, max_age) for url in order]
        place = {url: n for n, url in enumerate(order)}
    _Last.items = (dict(files), prefix, max_age, out, place)
    return list(out)


@functools.lru_cache(maxsize=1 << 17)
def _item(url: str, digest: str, size: int, prefix: str, max_age: int) -> Item:
    """Remembered, as ``_placement``: a watch's publish finds all but a few files as they were."""
    key, content_type, cache_control, wave, shard = _placement(url, prefix, max_age)
    return Item(key, url, digest, size, content_type, cache_control, wave, shard)


@functools.lru_cache(maxsize=4)
def _upload_ranks(urls: frozenset[str], prefix: str, max_age: int) -> dict[str, int]:
    """Each URL path's rank in upload order (by wave, then object key), remembered: a watch
    publishes the same paths block after block."""
    order = {w: n for n, w in enumerate(WAVES)}
    placed = {url: _placement(url, prefix, max_age) for url in urls}
    ranked = sorted(urls, key=lambda url: (order[placed[url][3]], placed[url][0]))
    return {url: n for n, url in enumerate(ranked)}


@functools.lru_cache(maxsize=1 << 18)
def _placement(url: str, prefix: str, max_age: int) -> tuple[str, str, str, str, str]:
    """(object key, content type, cache control, wave, manifest shard) of a URL path, remembered:
    ``publisher watch`` places the same tens of thousands of paths every publish."""
    ep = match(url)
    if ep is None:
        raise ValueError(f"{url}: no endpoint declares this path")
    wave = "final" if ep.final else "docs" if ep.cache == "docs" else "entities" if "{" in ep.path else "aggregates"
    key = object_key(prefix, url)
    return key, ep.content_type, CACHE_POLICIES[ep.cache].format(max_age=max_age), wave, shard_of(key, wave)


def shards(all_items: list[Item]) -> dict[str, bytes]:
    """Shard name -> its manifest object's bytes (every item but /status, which the root holds)."""
    last = _Last.shards
    if last is not None and len(last[0]) == len(all_items):
        before, places, bodies = last
        moved = [(i, j) for i, j in zip(all_items, before, strict=True) if i is not j]
        # Only files changed, each in its place (the same key, shard and wave): their shards alone.
        if all(i.key == j.key and i.shard == j.shard and i.wave == j.wave for i, j in moved):
            bodies = dict(bodies)
            for name in {i.shard for i, _ in moved if i.wave != "final"}:
                bodies[name] = _shard_body(tuple(all_items[n] for n in places[name]))
            _Last.shards = (list(all_items), places, bodies)
            return dict(bodies)
    groups: dict[str, list[int]] = {}
    for n, i in enumerate(all_items):
        if i.wave != "final":
            groups.setdefault(i.shard, []).append(n)
    bodies = {name: _shard_body(tuple(all_items[n] for n in group)) for name, group in groups.items()}
    _Last.shards = (list(all_items), groups, bodies)
    return dict(bodies)


@functools.lru_cache(maxsize=1024)
def _shard_body(group: tuple[Item, ...]) -> bytes:
    """Remembered: ``publisher watch`` publishes again and again, and most shards stay as they were."""
    return canonical({i.key: i.entry() for i in group})


@functools.lru_cache(maxsize=1024)
def shard_digest(body: bytes) -> str:
    """A shard body's sha256, remembered with the body (``_shard_body`` returns the same bytes)."""
    return sha256(body)


def shard_key(prefix: str, name: str) -> str:
    return f"{prefix}{SHARD_DIR}{name}.json"


@dataclass
class Root:
    """The bucket's manifest root, as read."""

    shards: dict[str, str]
    status: dict | None
    run: int
    reconciled_at: int  # unix time of the last full reconcile


def parse_root(data: bytes | None) -> Root | None:
    """None when absent or unreadable: the run then reconciles against a listing, and deletes
    nothing (only keys a manifest vouches for are ever ours to delete)."""
    if not data:
        return None
    try:
        doc = jsonin.loads(data)
        if doc["format"] != MANIFEST_FORMAT or not isinstance(doc["shards"], dict):
            return None
        return Root({str(k): str(v) for k, v in doc["shards"].items()}, doc.get("status"),
                    int(doc["run"]), int(doc["reconciledAt"]))
    except (ValueError, KeyError, TypeError, AttributeError, ArithmeticError):  # 1e999 is an infinite float
        return None


def parse_shard(data: bytes | None) -> dict[str, dict] | None:
    try:
        doc = jsonin.loads(data or b"")
    except ValueError:
        return None
    return {k: v for k, v in doc.items() if isinstance(v, dict)} if isinstance(doc, dict) else None


def root(status_item: Item, status: dict, shard_bodies: dict[str, bytes], run: int, reconciled_at: int) -> bytes:
    return canonical({
        "format": MANIFEST_FORMAT,
        "generatedAt": status["generatedAt"],
        "network": status["network"],
        "chainId": status["chainId"],
        "block": status["block"],
        "status": status_item.entry(),
        "run": run,
        "reconciledAt": reconciled_at,
        "shards": {name: shard_digest(body) for name, body in shard_bodies.items()},
    })


@dataclass
class Plan:
    prefix: str
    upload: list[Item]  # in upload order, /status last
    unchanged: list[Item]
    delete: list[str]
    shards: dict[str, bytes] = field(repr=False)  # shard key -> body, to upload
    manifest: bytes = field(repr=False)
    manifest_changed: bool = False
    reconcile: bool = False
    # No manifest vouched for the live objects: a run that failed before its invalidation may have
    # left docs the CDN still serves stale, which the listing alone shows as unchanged.
    unvouched: bool = False
    # An entity file to upload is not live yet: the aggregates that list it wait for it (WAVES).
    new_entities: bool = True

    @property
    def manifest_key(self) -> str:
        return self.prefix + MANIFEST_KEY

    @property
    def manifest_sha256(self) -> str:
        return sha256(self.manifest)

    def wave(self, name: str) -> list[Item]:
        return [i for i in self.upload if i.wave == name]

    @property
    def upload_bytes(self) -> int:
        return sum(i.size for i in self.upload)

    @property
    def unchanged_bytes(self) -> int:
        return sum(i.size for i in self.unchanged)

    @property
    def manifest_bytes(self) -> int:
        return sum(map(len, self.shards.values())) + (len(self.manifest) if self.manifest_changed else 0)

    @property
    def invalidation_paths(self) -> list[str]:
        """CDN paths of changed docs objects. Data needs none: its max-age is the publish cadence.
        The distribution has no origin path, so an object is served at its key, prefix included."""
        paths = set()
        for i in self.wave("docs") + ([i for i in self.unchanged if i.wave == "docs"] if self.unvouched else []):
            paths.add("/" + i.key)
            if i.url == "/":  # the index is served for its folder too: "/", or the prefix's
                paths.add("/" + i.key.removesuffix("index.html"))
        return sorted(paths)

    @property
    def empty(self) -> bool:
        return not (self.upload or self.delete or self.manifest_changed or self.shards)

    def describe(self) -> list[str]:
        manifest = (f", manifest ({len(self.shards)} shards, {self.manifest_bytes:,} bytes)"
                    if self.manifest_changed or self.shards else "")
        lines = [f"plan      {len(self.upload)} to upload ({self.upload_bytes:,} bytes), "
                 f"{len(self.unchanged)} unchanged ({self.unchanged_bytes:,} bytes), {len(self.delete)} to delete"
                 + manifest + (", full reconcile" if self.reconcile else "")]
        for verb, keys in (("upload", [i.key for i in self.upload]), ("delete", self.delete)):
            lines += [f"{verb:<9} {k}" for k in keys[:LISTED]]
            if len(keys) > LISTED:
                lines.append(f"{verb:<9} … and {len(keys) - LISTED} more")
        return lines


def shards_to_read(all_items: list[Item], live_root: Root | None, local_shards: dict[str, bytes] | None = None) -> list[str]:
    """The shards whose live entries this run needs: those whose digest differs from ours
    (``local_shards``: ``shards(all_items)``, when the caller has them)."""
    if live_root is None:
        return []
    mine = shards(all_items) if local_shards is None else local_shards
    local = {n: shard_digest(b) for n, b in _with_emptied(mine, live_root.shards).items()}
    return sorted(n for n in local.keys() | live_root.shards.keys() if local.get(n) != live_root.shards.get(n))


def _with_emptied(local: dict[str, bytes], old: dict[str, str]) -> dict[str, bytes]:
    """A shard whose keys are all gone stays, empty: it records their deletion."""
    return {**{n: canonical({}) for n in old.keys() - local.keys()}, **local}


def _etag_is(etag: str, md5: str) -> bool:
    return etag.strip('"') == md5  # a multipart or KMS-encrypted ETag never matches: uploaded again


def make_plan(all_items: list[Item], *, prefix: str, status: dict, live_root: Root | None,
              live_shards: dict[str, dict | None], live_status: bytes | None,
              listing: dict[str, tuple[int, str]] | None = None, md5=None, now: int = 0,
              local_shards: dict[str, bytes] | None = None) -> Plan:
    """Decide uploads and deletes.

    ``live_shards``: the shards read from the bucket (those ``shards_to_read`` named); every other
    shard is the same as ours, entry for entry. ``listing`` (key -> (size, ETag)) and ``md5``
    (item or bytes -> hex) make it a full reconcile: an object is unchanged only if the bucket
    holds it with our bytes (``now``, unix time, is then recorded as the reconcile's time).
    /status is compared with the live object itself, because the manifest is written just before
    it and may describe a /status that never made it.
    """
    old = live_root.shards if live_root else {}
    local_shards = _with_emptied(shards(all_items) if local_shards is None else local_shards, old)
    local_sha = {n: shard_digest(b) for n, b in local_shards.items()}

    def live_entry(i: Item) -> dict | None:
        if i.shard in live_shards:
            return (live_shards[i.shard] or {}).get(i.key)
        return i.entry() if old.get(i.shard) == local_sha[i.shard] else None

    # The items of a shard the bucket holds as ours, entry for entry, are unchanged as a block (all
    # but a few hundred of a watch's 34 000): only the others are looked at one by one.
    settled = set() if listing is not None else {n for n, d in local_sha.items() if n not in live_shards and old.get(n) == d}
    unchanged: list[Item] = [i for i in all_items if i.shard in settled and i.wave != "final"] if settled else []
    rest = [i for i in all_items if i.shard not in settled or i.wave == "final"] if settled else all_items
    upload: list[Item] = []
    for i in rest:
        if i.wave == "final":
            same = live_status is not None and sha256(live_status) == i.sha256
        elif listing is not None:
            got = listing.get(i.key)
            same = (got is not None and got[0] == i.size and _etag_is(got[1], md5(i))
                    and (live_root is None or live_entry(i) == i.entry()))
        elif i.shard in live_shards:
            same = (live_shards[i.shard] or {}).get(i.key) == i.entry()
        else:  # a shard the bucket holds as ours lists this item as it is
            same = old.get(i.shard) == local_sha[i.shard]
        (unchanged if same else upload).append(i)
    # What the bucket holds already, of the entity files to upload (by the shards read, or the listing).
    new_entities = any(i.wave == "entities" and (i.key not in listing if listing is not None else live_entry(i) is None)
                       for i in upload)

    near = {i.key for i in rest if i.shard in live_shards}  # where a live shard's keys are, unless a key moved shard
    gone = [k for shard in live_shards.values() if shard for k in shard
            if k not in near and k.startswith(prefix) and not k.startswith(prefix + SHARD_DIR)
            and k != prefix + MANIFEST_KEY and (listing is None or k in listing)]
    keys = {i.key for i in all_items} if gone else set()
    delete = {k for k in gone if k not in keys}
    send = {n for n in local_shards if local_sha[n] != old.get(n)}
    if listing is not None:
        send |= {n for n in local_shards
                 if not _etag_is((listing.get(shard_key(prefix, n)) or (0, ""))[1], md5(local_shards[n]))}
    status_item = next(i for i in all_items if i.wave == "final")
    changed = bool(upload or delete or send)
    run = (live_root.run if live_root else 0) + (1 if changed or live_root is None else 0)
    reconciled_at = now if listing is not None or live_root is None else live_root.reconciled_at
    body = root(status_item, status, local_shards, run, reconciled_at)
    return Plan(prefix, upload, unchanged, sorted(delete),
                {shard_key(prefix, n): local_shards[n] for n in sorted(send)}, body,
                manifest_changed=changed or live_root is None or listing is not None,
                reconcile=listing is not None, unvouched=live_root is None, new_entities=new_entities)
