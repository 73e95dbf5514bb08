"""The build core: Snapshot -> validated files in out/, doing work in proportion to what changed.

``build(snapshot, profile, out)`` is what ``publisher build`` and the benchmarks call.

``out`` is a symlink to one of two sibling trees, ``.out.a`` and ``.out.b``. A build brings the
tree ``out`` does not point at from its own state (two runs ago) to this run's, touching only the
files whose digest differs, then flips the link with one rename: a reader sees the previous tree
or the new one, never a missing or half-written out/.

Each tree holds a record, ``.build.json``: for every file its sha256, size and a key saying what
it was made from. A per-entity file (``Deferred``) whose inputs hash to the same key is not
rendered again: it is hard-linked from the live tree. An aggregate whose content apart from
``meta`` is unchanged keeps its previous bytes, so its ``meta.block`` is the block at which that
content was last read (it still holds at this run's block; /status names this run's block and is
the freshness authority). Every file rendered is validated once, here, with its endpoint in hand;
carried files were validated when they were written. The record is also the manifest
``publisher publish`` trusts.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import itertools
import os
import pickle
import shutil
import signal
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from . import __version__, snapshot
from .build import generated_at
from .config import Profile
from .endpoints.context import Context
from .endpoints.registry import Deferred, Endpoint, Row, file_for, load_all, resolve
from .endpoints.units import dumps, dumps_value
from .errors import PublisherError
from .snapshot import Snapshot
from .tree import RECORD_FORMAT, TreeFiles, TreeWriter, flip, read_record, sha256, trees
from .validate import compare_previous, invariants, schema_problems, strict_loads

JSON = "application/json"


@dataclass
class Built:
    out_dir: Path  # the link readers use
    tree: Path  # the directory it points at
    count: int
    bytes: int
    endpoints: int
    rendered: int  # bodies computed and validated this run
    carried: int  # files reused from the previous run without rendering
    written: int  # files written or linked into the tree
    seconds: float
    stages: dict[str, float] = field(default_factory=dict)


def context(snap: Snapshot, profile: Profile) -> Context:
    return Context(snap, flags=profile.flags, generated_at=generated_at(),
                   cadence_seconds=profile.cadence_seconds, version=__version__,
                   validator_default_rate_pct=profile.validator_default_rate_pct)


def bodies(ctx: Context, entities: bool | None = None) -> Iterator[tuple[Endpoint, str, object]]:
    """(endpoint, URL path, body or Deferred) for every file but the final ones, in registry order;
    ``entities``: only the per-entity endpoints (True) or only the others (False)."""
    seen: set[str] = set()
    for ep in load_all().values():
        if ep.is_function or ep.final or (entities is not None and entities != ("{" in ep.path)):
            continue
        assert ep.render is not None
        match = ep.pattern.match  # tens of thousands of paths: looked up once per endpoint
        for path, value in ep.render(ctx):
            if not match(path):
                raise PublisherError(f"{ep.path} rendered a file at {path}, outside its path template")
            if path in seen:
                raise PublisherError(f"two responses for {path}")
            seen.add(path)
            yield ep, path, value


def final_bodies(ctx: Context, files: Mapping[str, tuple[str, int]]) -> Iterator[tuple[Endpoint, str, object]]:
    """The files that describe all the others (/status), from their digests."""
    for ep in load_all().values():
        if ep.final:
            assert ep.render is not None
            for path, body in ep.render(ctx, files):  # type: ignore[call-arg]
                yield ep, path, body


def encode(path: str, body) -> bytes:
    return body.encode() if isinstance(body, str) else _dumps(path, body)


def _dumps(path: str, value, document: bool = True) -> bytes:
    try:
        if not document and type(value) is list and value and all(type(r) is Row for r in value):
            return b"[" + b",".join(_row_json(r) for r in value) + b"]"  # compact JSON: the same bytes
        return dumps(value) if document else dumps_value(value)
    except ValueError as exc:  # NaN or Infinity
        raise PublisherError(f"{path}: {exc}") from None


def _row_json(row: Row) -> bytes:
    data = getattr(row, "json", None)
    if data is None:
        data = row.json = dumps_value(row)
    return data


def inputs_key(value: Deferred, memo: dict[int, bytes]) -> str:
    parts: list[bytes] = []
    _describe(parts, value.inputs, memo)
    return hashlib.blake2b(b"".join(parts), digest_size=16).hexdigest()


def _describe(parts: list[bytes], x, memo: dict[int, bytes]) -> None:
    """A complete, stable description of frozen dataclasses, tuples, lists and scalars: scalars by
    their repr, each snapshot record digested once per build however many files read it (records
    live as long as the build, so their ids are stable; nothing else is memoized by id)."""
    kind = type(x)
    if kind is tuple or kind is list:
        parts.append(b"[")
        for item in x:  # tens of thousands of records per build: the memo first
            digest = memo.get(id(item))
            if digest is None:
                _describe(parts, item, memo)
            else:
                parts.append(digest)
        parts.append(b"]")
    elif hasattr(kind, "__dataclass_fields__"):
        digest = memo.get(id(x))
        if digest is None:
            # Its class and field values, pickled: half the cost of its repr. Pickle's bytes
            # determine the value they load as, so two different records never share them.
            fields = x.__dict__.values() if hasattr(x, "__dict__") else [getattr(x, f) for f in kind.__dataclass_fields__]
            data = pickle.dumps((kind.__qualname__, tuple(fields)), 5)
            digest = memo[id(x)] = hashlib.blake2b(data, digest_size=16).digest()
        parts.append(digest)
    else:
        parts.append(repr(x).encode() + b"\0")


def content_key(body: dict) -> str:
    """The digest of an aggregate without its block stamp."""
    return sha256(dumps({k: v for k, v in body.items() if k != "meta"}))


def encode_stamped(path: str, body: dict) -> tuple[bytes, str]:
    """(bytes, content key) of an aggregate with ``meta``, encoding it once: canonical JSON is its
    sorted members joined, so the file and the content without ``meta`` share their members."""
    members = [(k, dumps_value(k) + b":", _dumps(path, v, document=False)) for k, v in sorted(body.items())]
    content = hashlib.sha256()
    for i, (_, key, value) in enumerate(m for m in members if m[0] != "meta"):
        content.update(b"," if i else b"{")
        content.update(key)
        content.update(value)
    content.update(b"}\n")
    return b"{" + b",".join(key + value for _, key, value in members) + b"}\n", content.hexdigest()


@cache
def code_digest() -> str:
    """Digest of the package's code and templates: a per-entity key says nothing about the code
    that renders it, so a different build of the publisher renders everything again."""
    root = Path(__file__).parent
    h = hashlib.sha256(__version__.encode())
    for f in sorted([*root.rglob("*.py"), *root.rglob("*.j2")]):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def run_key(snap: Snapshot, profile: Profile) -> str:
    """What every file of a run depends on besides its own inputs."""
    return sha256(dumps([code_digest(), snap.network, snap.chain_id, dict(sorted(profile.flags.items())),
                         profile.cadence_seconds, profile.validator_default_rate_pct]))


def _previous_content(live: Path | None, path: str) -> tuple[str, bytes] | None:
    """(content key, bytes) of an aggregate in a tree without a usable record."""
    if live is None:
        return None
    try:
        data = (live / file_for(path)).read_bytes()
        body = strict_loads(data)
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or dumps(body) != data:
        return None  # not written by this serializer: nothing to keep
    return content_key(body), data


class _Bodies(dict):
    """Bodies for the invariants; a carried aggregate is read from its file only if one reads it
    and this process has not kept what the invariants read of those very bytes already."""

    def __init__(self):
        super().__init__()
        self.exact: dict[str, str] = {}  # path -> sha256 of the bytes its value was read from

    def __getitem__(self, path):
        value = super().__getitem__(path)
        if isinstance(value, _Carried):
            sha, remembered = value.sha, _REMEMBERED.get(path)
            value = remembered[1] if remembered and remembered[0] == sha else \
                _kept(path, strict_loads(value.file.read_bytes()))
            self[path] = value
            self.exact[path] = sha
        return value

    def remember(self) -> None:
        """Keep, for this process's next build, what was read of these very bytes."""
        _REMEMBERED.clear()
        _REMEMBERED.update((path, (sha, dict.__getitem__(self, path))) for path, sha in self.exact.items())

    def get(self, path, default=None):
        try:
            return self[path]
        except KeyError:
            return default


def _carry(writer: TreeWriter, path: str, live: Path, old: list, verify: bool = False) -> bool:
    """Link the live tree's file; False if it is gone (then it is rendered again). ``verify``
    (aggregates: few files, and the guards compare them) also refuses a file that no longer
    matches its record, edited in place since the build that wrote it."""
    if verify:
        try:
            if sha256((live / file_for(path)).read_bytes()) != old[0]:
                return False
        except OSError:
            return False
    try:
        writer.link(path, live, old[0])
    except FileNotFoundError:
        return False
    return True


# ---- the build ---------------------------------------------------------------------------------

# What validate.invariants reads of each aggregate: every other body is dropped once written, and
# of the long lists only these fields of each row are kept (the bodies are tens of megabytes at
# 100 000 stakers). path -> {list field: row fields kept}.
INVARIANT_READS: dict[str, dict[str, tuple[str, ...]]] = {
    "/prices": {}, "/metrics": {}, "/metrics/apy": {}, "/ggAvax": {},
    "/stakers": {"stakers": ("stakerAddr", "ggpStaked", "effectiveGGPStaked")}, "/minipools": {"minipools": ()},
}


@dataclass(frozen=True)
class _Carried:
    file: Path
    sha: str


# path -> (sha256, what the invariants read of it) for the aggregates of this process's last
# build: a watch carries /stakers build after build, and parsing it each time would cost more
# than the rest of such a build.
_REMEMBERED: dict[str, tuple[str, object]] = {}


def _kept(path: str, body):
    """What the invariants need of an aggregate's body (None: nothing but that it exists)."""
    if path not in INVARIANT_READS or not isinstance(body, dict):
        return None
    lists = INVARIANT_READS[path]
    return {k: [{f: row[f] for f in lists[k] if f in row} for row in v if isinstance(row, dict)]
            if k in lists and isinstance(v, list) else v for k, v in body.items()}


@dataclass
class _Carry:
    """What an entity file may be carried from: the live tree and its record (same run key)."""

    live: Path
    files: dict[str, list]


@dataclass
class _Share:
    """One worker's part of the per-entity files."""

    done: list[tuple[str, str, int, str | None]] = field(default_factory=list)  # path, sha256, size, inputs key
    problems: list[str] = field(default_factory=list)
    written: int = 0
    rendered: int = 0
    carried: int = 0


def _entities(ctx: Context, share: int, n: int, writer: TreeWriter, carry: _Carry | None,
              memo: dict[int, bytes]) -> _Share:
    """Every n-th per-entity file from the ``share``-th: carried from the live tree while its
    inputs key is unchanged, else rendered, validated and written."""
    out, before = _Share(), writer.written
    for ep, path, value in itertools.islice(bodies(ctx, entities=True), share, None, n):
        ikey = inputs_key(value, memo) if isinstance(value, Deferred) else None
        old = carry.files.get(path) if carry else None
        if carry and old and ikey and old[2] == ikey and _carry(writer, path, carry.live, old):
            out.done.append((path, old[0], old[1], ikey))  # same inputs, same content
            out.carried += 1
            continue
        out.rendered += 1
        body = resolve(value)
        if ep.content_type == JSON:
            errors = schema_problems(ep, path, body)
            if errors:
                out.problems += errors
                continue
        data = encode(path, body)
        sha = sha256(data)
        writer.write(path, data, sha)
        out.done.append((path, sha, len(data), ikey))
    out.written = writer.written - before
    return out


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class _Workers:
    """``_entities`` over forked processes, one per core, each taking every n-th entity, while the
    parent renders the aggregates: forked after the snapshot is in memory, a worker is sent
    nothing and returns only digests. Inline with one core."""

    def __init__(self, ctx: Context, writer: TreeWriter, carry: _Carry | None, memo: dict[int, bytes]):
        self.ctx, self.writer, self.carry, self.memo = ctx, writer, carry, memo
        self.n = _cores() if hasattr(os, "fork") else 1
        self.children: list[tuple[int, int]] = []  # (pid, read end of its pipe)

    def __enter__(self):
        for share in range(self.n if self.n > 1 else 0):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the worker: never returns into the caller's code
                status = 1
                try:
                    # A collection would write to every object it visits, copying pages the
                    # worker only reads: a worker lives for one build and never collects.
                    gc.disable()
                    os.close(r)
                    try:
                        result: tuple = ("ok", _entities(self.ctx, share, self.n, self.writer, self.carry, self.memo))
                    except BaseException as exc:  # every failure goes to the parent
                        result = ("error", exc)
                    try:
                        data = pickle.dumps(result)
                    except Exception:  # an exception that does not pickle: its text
                        data = pickle.dumps(("error", PublisherError(repr(result[1]))))
                    with os.fdopen(w, "wb") as pipe:
                        pipe.write(data)
                    status = 0
                finally:
                    os._exit(status)
            os.close(w)
            self.children.append((pid, r))
        return self

    def results(self) -> Iterator[_Share]:
        """Each share; the files a worker wrote count in the parent's writer."""
        if self.n == 1:
            yield _entities(self.ctx, 0, 1, self.writer, self.carry, self.memo)
        while self.children:
            pid, r = self.children[0]
            with os.fdopen(r, "rb") as pipe:
                data = pipe.read()
            os.waitpid(pid, 0)
            self.children.pop(0)
            if not data:
                raise PublisherError("a build worker died without an answer")
            kind, value = pickle.loads(data)
            if kind == "error":
                raise value
            self.writer.written += value.written
            yield value

    def __exit__(self, *exc) -> None:
        for pid, r in self.children:  # left when the parent failed: stop them before the tree goes
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
        self.children.clear()


def build(snap: Snapshot, profile: Profile, out_dir: str | Path, *, force: bool = False,
          full: bool = False) -> Built:
    """Render, validate and write what changed since the live tree; guards; flip ``out_dir``.

    ``full``: render and validate every file, ignoring the previous run's record (the result is
    byte for byte the same; the tests hold the incremental build to it)."""
    # Every object alive now (the snapshot above all) outlives the build: the collector need not
    # visit them again and again while the build allocates.
    gc.freeze()
    try:
        return _build(snap, profile, out_dir, force=force, full=full)
    finally:
        gc.unfreeze()


def _build(snap: Snapshot, profile: Profile, out_dir: str | Path, *, force: bool, full: bool) -> Built:
    t0 = time.monotonic()
    stages: dict[str, float] = {}
    snapshot.check(snap)
    load_all()  # the registry imports its modules once, here, not in each worker
    ctx = context(snap, profile)
    out = Path(os.path.abspath(out_dir))
    out.parent.mkdir(parents=True, exist_ok=True)
    live, tree = trees(out)
    run = run_key(snap, profile)
    prev = None if full else read_record(live)
    prev_files: dict[str, list] = prev["files"] if prev else {}
    same_run = prev is not None and prev.get("run") == run
    held = read_record(tree) if tree.exists() else None
    stages["records"] = time.monotonic() - t0

    writer = TreeWriter(tree, held["files"] if held else None)
    entries: dict[str, list] = {}  # path -> [sha256, size, inputs key, content key]
    kept = _Bodies()  # what the invariants read of each file (_kept); entities: None
    memo: dict[int, bytes] = {}
    problems: list[str] = []
    rendered = carried = 0
    t = time.monotonic()
    try:
        # The workers take the per-entity files (carried or rendered) while the aggregates are
        # rendered here.
        # The snapshot's records are digested once, here, for the workers and the aggregates alike.
        _describe([], (snap.stakers, snap.minipools), memo)
        workers = _Workers(ctx, writer, _Carry(live, prev_files) if same_run and live is not None else None, memo)
        with workers:
            for ep, path, value in bodies(ctx, entities=False):
                old = prev_files.get(path)
                ikey = inputs_key(value, memo) if isinstance(value, Deferred) else None
                if ikey and same_run and old and old[2] == ikey and live is not None and _carry(writer, path, live, old, verify=True):
                    # Same inputs, same content: the previous file, block stamp included.
                    entries[path] = old
                    kept[path] = _Carried(live / file_for(path), old[0]) if path in INVARIANT_READS else None
                    carried += 1
                    continue
                body = resolve(value)
                kept[path] = _kept(path, body)
                data = b""
                ckey = None
                if isinstance(body, dict) and isinstance(body.get("meta"), dict):
                    data, ckey = encode_stamped(path, body)
                    before: tuple[str, bytes | None] | None
                    if prev is not None:
                        before = (old[3], None) if old else None
                    else:
                        before = _previous_content(live, path)
                    if before and before[0] == ckey and live is not None:
                        # Only meta would change: keep the previous bytes.
                        if before[1] is not None:
                            data = before[1]
                            writer.write(path, data, sha256(data))
                            entries[path] = [sha256(data), len(data), ikey, ckey]
                            carried += 1
                            continue
                        if old is not None and _carry(writer, path, live, old, verify=True):
                            entries[path] = [old[0], old[1], ikey, ckey]
                            carried += 1
                            continue
                rendered += 1
                if ep.content_type == JSON:
                    errors = schema_problems(ep, path, body)
                    if errors:
                        problems += errors
                        continue
                data = data or encode(path, body)
                sha = sha256(data)
                writer.write(path, data, sha)
                entries[path] = [sha, len(data), ikey, ckey]
                if path in INVARIANT_READS:
                    kept.exact[path] = sha
            for share in workers.results():
                problems += share.problems
                rendered += share.rendered
                carried += share.carried
                for path, sha, size, ikey in share.done:
                    if path in entries:
                        raise PublisherError(f"two responses for {path}")
                    kept[path] = None
                    entries[path] = [sha, size, ikey, None]
        stages["render+validate+write"] = time.monotonic() - t

        t = time.monotonic()
        final = {}
        for ep, path, body in final_bodies(ctx, {p: (e[0], e[1]) for p, e in entries.items()}):
            problems += schema_problems(ep, path, body)
            final[path] = encode(path, body)
            kept[path] = body
        problems += invariants(kept, profile.feed_max_age, profile.oracle_max_age, now=snap.block.timestamp)
        if live is not None and not force:
            problems += compare_previous(TreeFiles(live), TreeFiles(tree, final),
                                         max_price_move_pct=profile.max_price_move_pct,
                                         max_staker_drop_pct=profile.max_staker_drop_pct)
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            raise PublisherError(f"refusing to write {out_dir}: {problems[0]}{more}")
        for path, data in final.items():
            sha = sha256(data)
            writer.write(path, data, sha)
            entries[path] = [sha, len(data), None, None]
        writer.finish({"format": RECORD_FORMAT, "run": run, "network": snap.network, "chainId": snap.chain_id,
                       "block": {"number": snap.block.number, "hash": snap.block.hash,
                                 "timestamp": snap.block.timestamp},
                       "files": entries})
        flip(out, tree)
        kept.remember()
        stages["guards+status+swap"] = time.monotonic() - t
    except BaseException:
        shutil.rmtree(tree, ignore_errors=True)  # never live; the next build writes it afresh
        raise
    endpoints = sum(1 for e in load_all().values() if not e.is_function)
    return Built(out, tree, len(entries), sum(e[1] for e in entries.values()), endpoints, rendered, carried,
                 writer.written, time.monotonic() - t0, stages)
