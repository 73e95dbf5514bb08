"""What a publish will do, decided from the local files and what the bucket holds, without I/O.

Object keys mirror URL paths without the file extension (``/stakers/0xab…`` -> ``stakers/0xab…``,
``/`` -> ``index.html``). A manifest object lists every key with its sha256, so a run uploads only
what changed: mtimes and ETags say nothing about content across machines and multipart uploads.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from ..endpoints.registry import CACHE_POLICIES, match

MANIFEST_KEY = "_manifest.json"
MANIFEST_FORMAT = "ggp-publisher-manifest/1"
# Upload order. Entity files go before the aggregates that list them, so a client following a
# link from a fresh /stakers never meets a 404; docs after data; "final" (/status) after the
# manifest, so the live /status only ever describes complete data.
WAVES = ("entities", "aggregates", "docs", "final")
LISTED = 20  # paths shown per list in a printed plan


def normalize_prefix(prefix: str | None) -> str:
    prefix = (prefix or "").strip("/")
    return prefix + "/" if prefix else ""


def object_key(prefix: str, url_path: str) -> str:
    return prefix + ("index.html" if url_path == "/" else url_path.lstrip("/"))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Item:
    """One local file as it is to be stored."""

    key: str
    url: str
    body: bytes = field(repr=False)
    sha256: str
    content_type: str
    cache_control: str
    wave: str

    @property
    def size(self) -> int:
        return len(self.body)

    def entry(self) -> dict:
        return {"sha256": self.sha256, "size": self.size, "contentType": self.content_type,
                "cacheControl": self.cache_control}


def items(files: dict[str, bytes], prefix: str, max_age: int) -> list[Item]:
    """Every file of a validated build (so every URL has an endpoint), in upload order."""
    out = []
    for url, body in files.items():
        ep = match(url)
        if ep is None:
            raise ValueError(f"{url}: no endpoint declares this path")
        wave = ("final" if ep.final else "docs" if ep.cache == "docs"
                else "entities" if "{" in ep.path else "aggregates")
        out.append(Item(object_key(prefix, url), url, body, sha256(body), ep.content_type,
                        CACHE_POLICIES[ep.cache].format(max_age=max_age), wave))
    return sorted(out, key=lambda i: (WAVES.index(i.wave), i.key))


def manifest(all_items: list[Item], status: dict) -> bytes:
    return json.dumps({
        "format": MANIFEST_FORMAT,
        "generatedAt": status["generatedAt"],
        "network": status["network"],
        "chainId": status["chainId"],
        "block": status["block"],
        "files": {i.key: i.entry() for i in all_items},
    }, sort_keys=True, separators=(",", ":")).encode()


def parse_manifest(data: bytes | None) -> dict[str, dict]:
    """The ``files`` of a manifest; empty when absent or unreadable (everything is then uploaded,
    and nothing is deleted: only keys a manifest vouches for are ever ours to delete)."""
    if not data:
        return {}
    try:
        doc = json.loads(data)
    except ValueError:
        return {}
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT or not isinstance(doc.get("files"), dict):
        return {}
    return {k: v for k, v in doc["files"].items() if isinstance(v, dict)}


@dataclass
class Plan:
    prefix: str
    upload: list[Item]  # in upload order, /status last
    unchanged: list[Item]
    delete: list[str]
    manifest: bytes = field(repr=False)
    manifest_changed: bool

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
    def invalidation_paths(self) -> list[str]:
        """CDN paths of changed docs objects. Data needs none: its max-age is the publish cadence."""
        paths = set()
        for i in self.wave("docs"):
            paths.add(i.url)
            if i.url == "/":
                paths.add("/index.html")  # the object behind "/" is reachable under its own name too
        return sorted(paths)

    @property
    def empty(self) -> bool:
        return not (self.upload or self.delete or self.manifest_changed)

    def describe(self) -> list[str]:
        lines = [f"plan      {len(self.upload)} to upload ({self.upload_bytes:,} bytes), "
                 f"{len(self.unchanged)} unchanged ({self.unchanged_bytes:,} bytes), {len(self.delete)} to delete"
                 + (", manifest" if self.manifest_changed else "")]
        for verb, keys in (("upload", [i.key for i in self.upload]), ("delete", self.delete)):
            lines += [f"{verb:<9} {k}" for k in keys[:LISTED]]
            if len(keys) > LISTED:
                lines.append(f"{verb:<9} … and {len(keys) - LISTED} more")
        return lines


def make_plan(all_items: list[Item], *, prefix: str, status: dict, old_manifest: bytes | None,
              present: dict[str, int], live_status: bytes | None) -> Plan:
    """Decide uploads and deletes.

    ``present`` maps the keys found in the bucket to their sizes: an object the old manifest lists
    but the bucket lacks (or holds truncated) is uploaded again, so a rerun repairs. /status is
    compared with the live object itself rather than the manifest, because the manifest is
    written just before it and may already describe a /status that never made it.
    """
    old = parse_manifest(old_manifest)
    upload, unchanged = [], []
    for i in all_items:
        if i.wave == "final":
            same = live_status is not None and sha256(live_status) == i.sha256
        else:
            same = old.get(i.key) == i.entry() and present.get(i.key) == i.size
        (unchanged if same else upload).append(i)
    keys = {i.key for i in all_items}
    manifest_key = prefix + MANIFEST_KEY
    delete = sorted(k for k in old if k not in keys and k in present and k.startswith(prefix) and k != manifest_key)
    body = manifest(all_items, status)
    return Plan(prefix, upload, unchanged, delete, body, body != old_manifest)
