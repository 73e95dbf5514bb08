"""The build core: Snapshot -> every file of the API, validated, in a new tree behind ``out``.

    render    every endpoint's bodies from the snapshot, in registry order (pure functions)
    validate  each body against its endpoint's schema, once, as it is rendered
    write     each into the tree ``out`` does not point at (``publisher.tree``)
    check     /status from the digests of all the others, the cross-file invariants, the change
              bounds against the live tree
    switch    ``out`` to the new tree with one rename

``build`` does exactly that for every file (``publisher build --full``). ``publisher.incremental``
is a layer beside it that hands ``build`` its own way of making the files (``files``): it carries
the files whose declared inputs are unchanged from the live tree and spreads the per-entity files
over forked workers. It must leave the same bytes; a test holds it to this core over random changes.

One rule of the output lives here: an aggregate (a body with ``meta``) whose content apart from
``meta`` equals the live file's keeps the live bytes. Its ``meta.block`` is then the block at which
that content was last read (it still holds at this run's block); /status names this run's block and
is the freshness authority. A block that changes nothing changes no file but /status.
"""
from __future__ import annotations

import gc
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from .. import __version__, snapshot
from ..compute.rewards import ParamsError
from ..config import Profile
from ..endpoints.context import Context
from ..endpoints.meta import STATUS_PATH
from ..endpoints.registry import Endpoint, Row, file_for, load_all, resolve, written
from ..endpoints.rewards import parsed_params
from ..endpoints.units import dumps, dumps_value
from ..errors import PublisherError, every_cause
from ..snapshot import Snapshot
from .tree import RECORD_FORMAT, Entry, Record, Records, TreeFiles, TreeWriter, flip, points_at, read_file, read_record, sha256, trees
from .validate import compare_previous, extract, invariants, older_block, schema_problems

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
    record: Record | None = None  # the tree's record, as written (what a publish right after may trust)


# (context, live tree, its record, tree being written) -> the files
Files = Callable[[Context, "Path | None", "Record | None", Path], "Made"]


def build(snap: Snapshot, profile: Profile, out_dir: str | Path, *, force: bool = False,
          files: Files | None = None, records: Records | None = None) -> Built:
    """Render, validate and write every file, check the whole, switch ``out_dir`` to the new tree.

    ``files`` makes the files before /status into the tree being written (default ``render_all``:
    every one; ``incremental.build`` passes its own). ``force``: skip the change bounds against the
    live tree (schemas and invariants always hold). ``records``: the records a caller building
    again and again keeps (``tree.Records``)."""
    t0 = time.monotonic()
    snapshot.check(snap)
    load_all()  # the registry's modules are imported once, here, before any worker forks
    ctx = context(snap, profile)
    _formula_accepts(ctx)
    out = Path(os.path.abspath(out_dir))
    out.parent.mkdir(parents=True, exist_ok=True)
    live, target = trees(out)
    # The live run's files the guards compare with, and the feed carries on from: those still as
    # its build wrote them.
    live_record = read_record(live, records)
    previous = TreeFiles(live, record=live_record) if live is not None else None
    ctx.previous = previous if previous is not None else {}
    if previous is not None and not force:
        # First, before anything is rendered: a block older than the live run's is refused as such.
        try:
            went_back = older_block(previous[STATUS_PATH], snap.network, snap.chain_id, snap.block.number)
        except KeyError:
            went_back = None
        if went_back:
            raise PublisherError(f"refusing to write {out_dir}: {went_back}; --force overrides")
    # Every object alive now (the snapshot above all) outlives the build: the collector need not
    # visit them again and again while the build allocates. What the build allocates is freed as
    # it goes, by reference counts (rows, bodies, their bytes), and the collector finds no cycles
    # among them worth its passes during a build (tens of thousands of allocations a second): it
    # waits for the end of the build, as it does in a forked worker.
    gc.freeze()
    collecting = gc.isenabled()
    gc.disable()
    try:
        made = (files or render_all)(ctx, live, live_record, target)
        t = time.monotonic()
        final = {}
        for ep, path, body in final_bodies(ctx, made.entries):
            made.problems += schema_problems(ep, path, body)
            final[path] = encode(path, body)
            made.reads[path] = extract(path, body)
        made.problems += invariants(made.reads, profile.feed_max_age, profile.oracle_max_age, now=snap.block.timestamp)
        if previous is not None and not force:
            made.problems += compare_previous(previous, TreeFiles(target, final),
                                              max_price_move_pct=profile.max_price_move_pct,
                                              max_staker_drop_pct=profile.max_staker_drop_pct)
        if made.problems:
            raise PublisherError(f"refusing to write {out_dir}: {every_cause(made.problems)}")
        for path, data in final.items():
            sha = sha256(data)
            made.entries[path] = Entry(sha, len(data), None, None, *made.writer.write(path, data, sha))
        made.writer.finish(record(snap, made), records)
        flip(out, target)
        made.stages["guards+status+swap"] = time.monotonic() - t
    except BaseException:
        _discard(out, target)
        raise
    finally:
        gc.unfreeze()
        if collecting:
            gc.enable()
    endpoints = sum(1 for e in load_all().values() if not e.is_function)
    return Built(out, target, len(made.entries), sum(e.size for e in made.entries.values()), endpoints,
                 made.rendered, made.carried, made.writer.written, time.monotonic() - t0, made.stages,
                 Record(made.entries, made.run, 0))


def _discard(out: Path, target: Path) -> None:
    """Remove the tree a failed build wrote (the next build writes it afresh), unless ``out``
    already points at it: an interrupt may land just after the swap."""
    if not points_at(out, target):
        shutil.rmtree(target, ignore_errors=True)


def render_all(ctx: Context, live: Path | None, record: Record | None, target: Path) -> Made:
    """Every file rendered, validated and written into a fresh tree."""
    made = Made(TreeWriter(target))
    t = time.monotonic()
    for ep, path, value in bodies(ctx):
        was = record.files.get(path) if record else None
        made.put(ep, path, resolve(value), keep=partial(keep_live, made.writer, live, path, was))
    made.stages["render+validate+write"] = time.monotonic() - t
    return made


@dataclass
class Made:
    """The files of a build but the final ones (/status), as the rest of the build needs them."""

    writer: TreeWriter
    run: str | None = None  # what the record's input keys leave out (the incremental layer's)
    entries: dict[str, Entry] = field(default_factory=dict)  # path -> its record entry
    reads: dict = field(default_factory=dict)  # path -> what the checks read of it (validate.extract)
    problems: list[str] = field(default_factory=list)
    rendered: int = 0
    carried: int = 0
    stages: dict[str, float] = field(default_factory=dict)

    def put(self, ep: Endpoint, path: str, body, key: str | None = None,
            keep: Callable[[str], Entry | None] | None = None) -> str | None:
        """Validate a rendered body and write it; the sha256 written, or None (a schema problem, or
        the live bytes kept). ``keep(content key)``, for an aggregate: puts the live file into the
        tree and returns its entry when its content is the same as this body's."""
        self.reads[path] = extract(path, body)
        data, ckey = b"", None
        if type(body) is dict and type(body.get("meta")) is dict:
            data, ckey = encode_stamped(path, body)
            old = keep(ckey) if keep else None
            if old is not None:
                self.entries[path] = old._replace(inputs_key=key, content_key=ckey)
                self.carried += 1
                return None
        self.rendered += 1
        if ep.content_type == JSON:
            errors = schema_problems(ep, path, body)
            if errors:
                self.problems += errors
                return None
        data = data or encode(path, body)
        sha = sha256(data)
        self.entries[path] = Entry(sha, len(data), key, ckey, *self.writer.write(path, data, sha))
        written(path, sha, body)
        return sha


def _formula_accepts(ctx: Context) -> None:
    """Refuse, by name, chain values the rewards formula refuses (an inflation rate above 2x per
    interval, an implausible cycle) before anything is rendered: the parameters the build
    publishes, parsed as the function parses them (and kept for the files that need them)."""
    try:
        ctx.cached(parsed_params)
    except ParamsError as exc:
        raise PublisherError(f"chain value outside the rewards formula's range at block {ctx.snap.block.number}: {exc}") from None


def record(snap: Snapshot, made: Made) -> dict:
    """The tree's ``.build.json``: what it holds, and the run that made it."""
    return {"format": RECORD_FORMAT, "run": made.run, "network": snap.network, "chainId": snap.chain_id,
            "block": {"number": snap.block.number, "hash": snap.block.hash, "timestamp": snap.block.timestamp},
            "files": made.entries}


# ---- rendering -----------------------------------------------------------------------------------


def generated_at() -> int:
    # SOURCE_DATE_EPOCH makes rebuilds byte-identical, /status included.
    return int(os.environ.get("SOURCE_DATE_EPOCH") or time.time())


def context(snap: Snapshot, profile: Profile) -> Context:
    return Context(snap, flags=profile.flags, generated_at=generated_at(),
                   cadence_seconds=profile.cadence_seconds, version=__version__,
                   announcements=profile.announced(),
                   validator_default_rate_pct=profile.validator_default_rate_pct, oracle_max_age=profile.oracle_max_age,
                   depositor_max_age=profile.depositor_max_age)


def bodies(ctx: Context, entities: bool | None = None) -> Iterator[tuple[Endpoint, str, object]]:
    """(endpoint, URL path, body or Deferred) for every file but the final ones, in registry order;
    ``entities``: only the per-entity endpoints (True) or only the others (False). A per-entity
    endpoint declares the files of this process's share of its entities (``Context.own``). A path
    made twice is refused before its second file is written (two workers' files, when each made
    one, meet in the build's merge, which refuses them)."""
    seen: set[str] = set()
    for ep in load_all().values():
        if ep.is_function or ep.final or (entities is not None and entities != ("{" in ep.path)):
            continue
        assert ep.render is not None
        match = ep.pattern.match  # tens of thousands of paths: looked up once per endpoint
        # An aggregate's bodies are the ones the pages show (rendered once); the per-entity files stream.
        for path, value in ep.render(ctx) if "{" in ep.path else ctx.rendered(ep.path, ep.render):
            if path in seen:
                raise PublisherError(f"two responses for {path}")
            seen.add(path)
            if not match(path):
                raise PublisherError(f"{ep.path} rendered a file at {path}, outside its path template")
            yield ep, path, value


def final_bodies(ctx: Context, files: Mapping[str, tuple]) -> Iterator[tuple[Endpoint, str, object]]:
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
        return dumps(value) if document else _value_json(value)
    except ValueError as exc:  # NaN or Infinity
        raise PublisherError(f"{path}: {exc}") from None


def _value_json(value) -> bytes:
    """``dumps_value(value)``, each list of rows in it (at any depth of objects) joined from the
    rows' own JSON, which a row keeps from build to build while its item is unchanged."""
    kind = type(value)
    if kind is list and value and all(type(r) is Row for r in value):
        return b"[" + b",".join(_row_json(r) for r in value) + b"]"  # compact JSON: the same bytes
    if kind is dict and all(type(k) is str for k in value):  # members in sorted order, as the encoder puts them
        return b"{" + b",".join(dumps_value(k) + b":" + _value_json(v) for k, v in sorted(value.items())) + b"}"
    return dumps_value(value)


def _row_json(row: Row) -> bytes:
    data = getattr(row, "json", None)
    if data is None:
        data = row.json = dumps_value(row)
    return data


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


def keep_live(writer: TreeWriter, live: Path | None, path: str, was: Entry | None, ckey: str) -> Entry | None:
    """The live aggregate at ``path``, written into the tree, if its record (``was``) says its
    content is ``ckey`` and its bytes are still the recorded ones. A live file the record does not
    vouch for (none, another content, or edited since) is not kept: its ``meta`` could say
    anything."""
    if live is None or was is None or was.content_key != ckey:
        return None
    try:
        data = read_file(f"{live}/{file_for(path)}")
    except OSError:
        return None
    sha = sha256(data)
    if sha != was.sha256:
        return None
    return Entry(sha, len(data), was.inputs_key, ckey, *writer.write(path, data, sha))
