"""The incremental layer beside the build core: the same files, with work in proportion to change.

``build(snap, profile, out, cache=, workers=)`` runs the core (``pipeline.build``) with its own way
of making the files before /status:

- a file made from declared inputs (``registry.Deferred``) is keyed by a digest of its maker's name
  and those inputs. A key equal to the live record's, in a run of the same code for the same
  network, means the same file: it is hard-linked from the live tree instead of made, if the live
  file is still the one recorded (``tree.holds``: an edit by hand is made again). Makers receive
  their declared inputs and nothing else, so that holds by construction;
- an aggregate made again whose content is unchanged keeps the live bytes (the core's rule; the
  live record's content key saves reading the file);
- the tree being written keeps what it already holds with the right digest, unless it was edited
  since (``TreeWriter``);
- the per-entity files are walked by ``workers`` forked processes, each taking every n-th entity
  of each endpoint, while this process makes the aggregates; a worker returns only digests;
- ``cache`` (a ``Cache``, owned by the caller) is what a build leaves for the next one in the same
  process: long lists' rows by their item, what the invariants read of a carried aggregate by the
  sha256 of its bytes, and the trees' records. Nothing else of this layer outlives a build (what a
  reader keeps of a file it reads back at the next build is the registry's, by the sha256 of the
  bytes written, for the core's builds too: ``registry.keeps``).
"""
from __future__ import annotations

import hashlib
import pickle
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from enum import Enum
from functools import cache, partial
from itertools import chain, compress
from operator import attrgetter, is_, not_
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..config import Profile
from ..endpoints.context import Context
from ..endpoints.registry import KEYED_RECORDS, Deferred, Each, Rows, file_for, load_all, resolve
from ..endpoints.units import dumps
from ..errors import PublisherError
from ..snapshot import Known, Snapshot
from .pipeline import Built, Made, bodies
from .pipeline import build as core_build
from .tree import Entry, Record, Records, TreeWriter, read_record, sha256
from .validate import extract, extracts, strict_loads
from .workers import Workers

if TYPE_CHECKING:
    from ..sources.queuelog import PriorActivity


class Cache:
    """What one build leaves for the next in the same process; the caller owns it (``publisher
    watch`` keeps one for its life, ``publisher build`` starts with a fresh one). Everything in it
    is kept by what it was made from, so a build writes the same bytes with a fresh cache or one
    that has seen any number of builds."""

    def __init__(self, *, keep_rows: bool = True) -> None:
        # Rows of long lists (``Each``), by row function and item. ``keep_rows=False`` is for a
        # process that builds once: each list's rows are then dropped once written (at 100 000
        # stakers, rows kept for a next build are the largest thing a build holds), and its read
        # keeps no records for a next one.
        self.rows: Rows | None = Rows() if keep_rows else None
        # path -> (sha256 of a carried aggregate's bytes, what the invariants read of them): a
        # watch carries /stakers build after build, and parsing it each time would cost more than
        # the rest of such a build.
        self.reads: dict[str, tuple[str, object]] = {}
        # The two trees' records, parsed once (``tree.Records``).
        self.records = Records(rebuilds=keep_rows)
        # The snapshot's long lists of records as the last build digested them (``Keys.warm``): a
        # build one block later finds most of them the same and takes their digests.
        self.digests: Digested = ()
        # The withdraw queue's activity and receipts as the last build published them, with the
        # sha256 of the /withdrawals it wrote (``runs.read_and_build`` resumes the queue's log
        # scan from it while the live file is that one, instead of parsing every requester file).
        self.queue: tuple[str, PriorActivity] | None = None
        # The records the last read made (``snapshot.Known``): a record read again unchanged is
        # that very object, which ``Keys.warm`` then finds at its place without comparing. A
        # process that builds once has no next read to hand them to.
        self.known: Known | None = Known() if keep_rows else None


def build(snap: Snapshot, profile: Profile, out_dir: str | Path, *, cache: Cache, workers: int,
          force: bool = False) -> Built:
    """``pipeline.build``, carrying what is unchanged from the live tree (see the module)."""
    layer = _Layer(cache, workers)
    try:
        built = core_build(snap, profile, out_dir, force=force, files=layer, records=cache.records)
    finally:
        if cache.rows is not None:
            cache.rows.turn()
    cache.reads = layer.reads.exact_values() if layer.reads is not None else {}
    return built


class _Layer:
    def __init__(self, cache: Cache, workers: int):
        self.cache, self.workers = cache, workers
        self.reads: _Reads | None = None

    def __call__(self, ctx: Context, live: Path | None, record: Record | None, target: Path) -> Made:
        t0 = time.monotonic()
        run = run_key(ctx.snap, ctx.oracle_max_age)
        old = record.files if record else {}
        same_run = record is not None and record.run == run
        racy_from = record.racy_from if record else 0
        held = read_record(target, self.cache.records) if target.exists() else None
        made = Made(TreeWriter(target, held), run=run)
        made.reads = reads = self.reads = _Reads(self.cache.reads)
        ctx.rows = self.cache.rows
        made.stages["records"] = time.monotonic() - t0

        t = time.monotonic()
        keys = Keys()
        if self.workers > 1:
            _share_derived(ctx)
        # The long lists of records, the snapshot's and those the build derives for many files,
        # digested once, here, for the workers and the aggregates alike.
        snap = ctx.snap
        lists = (snap.stakers, snap.minipools, snap.queue_receipts,
                 snap.withdraw_queue.requests if snap.withdraw_queue else (), *(derive(ctx) for derive in KEYED_RECORDS))
        self.cache.digests = keys.warm(lists, self.cache.digests)
        made.stages["derive"] = time.monotonic() - t
        t = time.monotonic()
        carry = old if same_run and live is not None else {}
        job = partial(_entities, ctx, made.writer, live, racy_from, carry, keys, self.cache.rows)
        with Workers(self.workers, job) as pool:
            for ep, path, value in bodies(ctx, entities=False):
                key = keys.of(value) if type(value) is Deferred else None
                was = carry.get(path)
                if key is not None and was is not None and was.inputs_key == key:
                    entry = _link(made.writer, live, racy_from, path, was)
                    if entry is not None:
                        made.entries[path] = entry  # same inputs, same content: the live file, block stamp included
                        reads.carried(path, f"{live}/{file_for(path)}", was.sha256)
                        made.carried += 1
                        continue
                # The live record knows each aggregate's content.
                keep = partial(_keep_recorded, made.writer, live, racy_from, path, old.get(path))
                sha = made.put(ep, path, resolve(value, self.cache.rows), key, keep)
                if sha is not None and path in extracts():
                    reads.exact[path] = sha
            made.stages["aggregates"] = time.monotonic() - t
            t = time.monotonic()
            for share in pool.results():
                share.merge(made, carry, forked=pool.forked)
        made.stages["entities"] = time.monotonic() - t
        return made


@dataclass
class _Share:
    """One worker's part of the per-entity files: most are carried with their entry as recorded,
    and are sent back by path alone (unpickling tens of thousands of entries cost more than the
    rest of a build's merge)."""

    kept: list[str]  # carried, their entry the live record's own
    entries: dict[str, Entry]  # the others
    problems: list[str]
    rendered: int
    carried: int
    written: int

    def merge(self, made: Made, carry: dict[str, Entry], *, forked: bool) -> None:
        entries, reads = made.entries, made.reads
        for path, entry in chain(((p, carry[p]) for p in self.kept), self.entries.items()):
            if path in entries:
                raise PublisherError(f"two responses for {path}")
            entries[path] = entry
            reads[path] = None
        made.problems += self.problems
        made.rendered += self.rendered
        made.carried += self.carried
        if forked:  # the files a worker wrote count in this process's writer
            made.writer.written += self.written


def _entities(ctx: Context, writer: TreeWriter, live: Path | None, racy_from: int, carry: dict[str, Entry],
              keys: Keys, rows: Rows | None, share: int, n: int) -> _Share:
    """The files of every n-th entity of each per-entity endpoint from the ``share``-th: linked from
    the live tree while its key is unchanged and the file is still the recorded one, else
    rendered, validated and written."""
    made, before = Made(writer), writer.written
    kept: list[str] = []
    # Every n-th entity from the share-th, for each endpoint: one entity's files (a staker's
    # /stakers and /rewards, a requester's JSON, page and calendar) read the same records and
    # inputs, which a worker then keys once, and a worker declares no file of another's share. The
    # context is this worker's own copy (or, with one share, the build's, unchanged).
    ctx.share = (share, n)
    for ep, path, value in bodies(ctx, entities=True):
        key = keys.of(value) if type(value) is Deferred else None
        was = carry.get(path)
        if key is not None and was is not None and was.inputs_key == key:
            entry = _link(writer, live, racy_from, path, was)
            if entry is not None:
                if entry is was:
                    kept.append(path)
                else:
                    made.entries[path] = entry
                made.carried += 1
                continue
        made.put(ep, path, resolve(value, rows), key)
    return _Share(kept, made.entries, made.problems, made.rendered, made.carried, writer.written - before)


def _share_derived(ctx: Context) -> None:
    """Each per-entity endpoint's first file described in this process, before the workers fork:
    what a render function derives for all its files (the queue's schedule, the line through it)
    it computes before its first one, into ``ctx.cached``, and the workers then share that instead
    of each deriving it again beside the aggregates that need it too."""
    for ep in load_all().values():
        if ep.render is not None and not ep.is_function and not ep.final and "{" in ep.path:
            next(iter(ep.render(ctx)), None)


def _link(writer: TreeWriter, live: Path | None, racy_from: int, path: str, was: Entry) -> Entry | None:
    """The live tree's file, recorded as ``was``, in the tree being written (kept there or linked
    from the live tree); None if it is gone from both or no longer the file its record describes
    (edited since the build that wrote it): it is then made again."""
    if live is None:
        return None
    try:
        stat = writer.link(path, live, was, racy_from)
    except FileNotFoundError:
        return None
    if stat is None:
        return None
    # The tree may have kept a copy of its own with that sha256: its entry is that file's.
    return was if stat == (was.mtime_ns, was.inode) else was._replace(mtime_ns=stat[0], inode=stat[1])


def _keep_recorded(writer: TreeWriter, live: Path | None, racy_from: int, path: str, was: Entry | None,
                   ckey: str) -> Entry | None:
    """The live aggregate, linked into the tree, if its recorded content key is ``ckey``."""
    if was is None or was.content_key != ckey:
        return None
    return _link(writer, live, racy_from, path, was)


# ---- keys ----------------------------------------------------------------------------------------


@cache
def code_digest() -> str:
    """Digest of the package's code and templates: a key says nothing about the code that makes
    the file, so a different build of the publisher makes everything again."""
    root = Path(__file__).parents[1]  # the whole package, not only the build
    h = hashlib.sha256(__version__.encode())
    for f in sorted([*root.rglob("*.py"), *root.rglob("*.j2")]):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def run_key(snap: Snapshot, oracle_max_age: int) -> str:
    """What every key leaves out: the code that makes the files, the network an aggregate's stamp
    names besides its block, and the age past which the Oracle price is labelled stale (the label's
    bound is the profile's, not the chain's)."""
    return sha256(dumps([code_digest(), snap.network, snap.chain_id, oracle_max_age]))


_SCALARS = frozenset((str, int, float, bool, type(None), bytes))
_EXACT = _SCALARS - {float}  # equal values of one of these types pickle alike

class _Digests(bytes):
    """Records' digests joined, in a record's pickle in their place: a class of this module, so no
    value read from a chain pickles alike."""


_BULK = 64  # a sequence this long of records no file has keyed is digested whole (``Keys._bulk``)
_LONG_BYTES = 256  # bytes this long are described by their digest (``Keys._long_bytes``)

# A build's long lists of records and their digests, in order (``Keys.warm``).
Digested = tuple[tuple[Sequence, list[bytes]], ...]


def _record_kind(x) -> type:
    kind = type(x)
    if not hasattr(kind, "__dataclass_fields__"):
        raise TypeError(f"cannot warm a list of {kind.__qualname__}: its items are frozen dataclasses")
    return kind


class Keys:
    """Keys of Deferred bodies for one build: a digest of the maker's name and a complete, stable
    description of its inputs. Each frozen dataclass is digested, and each Deferred's inputs and
    long bytes described, once per build however many files read them (the memo holds the object,
    so its id is not reused while the build lasts); a description is the same whether the memo
    gave it or it was made."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[object, bytes]] = {}
        self.getters: dict[type, Callable[[Any], tuple]] = {}
        self.exact: dict[tuple[type, ...], bool] = {}  # field types -> all exact scalars (``_same``)

    def of(self, value: Deferred) -> str:
        make, inputs = value.make, value.inputs
        hit = self.memo.get(id(inputs))
        if hit is None:
            parts: list[bytes] = []
            self._describe(parts, inputs)
            # Other files are made from these very inputs (a requester's page and calendar from
            # its JSON's): their description is this one, kept with the tuple.
            hit = self.memo[id(inputs)] = (inputs, b"".join(parts))
        key = hashlib.blake2b(f"{make.__module__}.{make.__qualname__}".encode() + b"\0", digest_size=16)
        key.update(hit[1])
        return key.hexdigest()

    def warm(self, lists: tuple[Sequence, ...], last: Digested = ()) -> Digested:
        """Digest the records of these long lists now (before the workers fork, so they share the
        memo); returned with their digests, for the next build's ``last``. A record that is the one
        at its place in ``last`` (the same object, as the queue's receipts resumed from the last run
        are) or an equal one of exact scalars only (a staker read again, unchanged) takes its digest
        from there: the same class and values pickle to the same bytes."""
        out = []
        memo = self.memo
        for k, records in enumerate(lists):
            before, digests = last[k] if k < len(last) else ((), [])
            n = min(len(records), len(before))
            mine = digests[:n]
            # The records that are the very objects at their place last time (a staker read again
            # unchanged, a receipt resumed: tens of thousands a build) take their digest without a
            # look at their fields, in C; only the others are looked at, one by one. Only those go
            # into the memo first: a record digested below may hold a long tuple of records and
            # take their digests from the memo (``_digested``), which must be theirs.
            kept = records[:n]
            same = list(map(is_, kept, before[:n]))
            kept_same = list(compress(kept, same))
            memo.update(zip(map(id, kept_same), zip(kept_same, compress(mine, same), strict=True), strict=True))
            for i in compress(range(n), map(not_, same)):
                x = records[i]
                kind = _record_kind(x)
                if self._same(x, before[i]):
                    memo[id(x)] = (x, mine[i])
                else:
                    hit = memo.get(id(x))  # digested in an earlier list of this build
                    mine[i] = hit[1] if hit is not None else self._record(x, kind)
            for x in records[n:]:
                kind = _record_kind(x)
                hit = memo.get(id(x))
                mine.append(hit[1] if hit is not None else self._record(x, kind))
            out.append((records, mine))
        return tuple(out)

    def _same(self, x, y) -> bool:
        """Whether the records ``x`` and ``y`` digest alike without digesting either: the same
        object, or of one class with equal field values of the same exact scalar or enum types (a
        value that is a float, a container or a record is left to the digest: 0.0 equals -0.0 and 1
        equals True, and their pickles differ)."""
        if x is y:
            return True
        kind = type(x)
        if type(y) is not kind:
            return False
        get = self._values(kind)
        a, b = get(x), get(y)
        if a != b:
            return False
        types = tuple(map(type, a))
        if types != tuple(map(type, b)):
            return False
        exact = self.exact.get(types)
        if exact is None:
            # An enum's equal members are one object (its statuses): they pickle alike too.
            exact = self.exact[types] = all(t in _EXACT or issubclass(t, Enum) for t in types)
        return exact

    def _describe(self, parts: list[bytes], x) -> None:
        kind = type(x)
        if kind is tuple or kind is list:
            hit = self.memo.get(id(x)) if kind is tuple else None
            if hit is not None:  # a Deferred's inputs, described for an earlier file (``of``)
                parts.append(hit[1])
                return
            parts.append(b"(" if kind is tuple else b"[")
            self._items(parts, x)
            parts.append(b")")
        elif kind is bytes:  # a document declared as its bytes (a page's figures)
            if len(x) < _LONG_BYTES:  # length-prefixed, as is
                parts.append(b"b%d:" % len(x) + x)
            else:  # by its digest, taken once per build however many files declare it
                hit = self.memo.get(id(x))
                parts.append(hit[1] if hit is not None else self._long_bytes(x))
        elif kind in _SCALARS:
            parts.append(repr(x).encode() + b"\0")
        elif hasattr(kind, "__dataclass_fields__"):
            hit = self.memo.get(id(x))
            parts.append(hit[1] if hit is not None else self._record(x, kind))
        elif kind is dict:
            parts.append(b"{")
            for k, v in x.items():  # in order: a maker may read them in order
                self._describe(parts, k)
                self._describe(parts, v)
            parts.append(b"}")
        elif kind is Each:
            parts.append(f"each {x.row.__module__}.{x.row.__qualname__}\0".encode())
            self._describe(parts, x.items)
        else:
            raise TypeError(f"cannot key an input of type {kind.__qualname__}: an input is a scalar, a tuple, list "
                            f"or dict of inputs, a frozen dataclass or an Each")

    def _long_bytes(self, x: bytes) -> bytes:
        described = b"B" + hashlib.blake2b(x, digest_size=16).digest()
        self.memo[id(x)] = (x, described)
        return described

    def _items(self, parts: list[bytes], x: Sequence) -> None:
        if len(x) >= _BULK and self._bulk(parts, x):
            return
        memo = self.memo
        for item in x:  # tens of thousands of records per build: the memo first
            hit = memo.get(id(item))
            if hit is None:
                self._describe(parts, item)
            else:
                parts.append(hit[1])

    def _bulk(self, parts: list[bytes], x: Sequence) -> bool:
        """A long run of records of one class that no file has keyed yet this build (what a build
        derives, as the queue's schedule: thousands of records made anew each block) digested as
        one pickle, not one by one; False (nothing appended) for any other sequence."""
        kind = type(x[0])
        if not hasattr(kind, "__dataclass_fields__") or not kind.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            return False
        memo = self.memo
        for item in x:
            if type(item) is not kind or id(item) in memo:
                return False
        get = self._values(kind)
        data = pickle.dumps((kind.__module__, kind.__qualname__, [get(item) for item in x]), 5)
        parts.append(b"*" + hashlib.blake2b(data, digest_size=16).digest())
        return True

    def _record(self, x, kind: type) -> bytes:
        """The digest of a frozen dataclass, memoized for the build."""
        if not kind.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            raise TypeError(f"cannot key an input of {kind.__qualname__}: a dataclass input is frozen")
        # Its class and field values, pickled: pickle's bytes determine the value they load as, so
        # two different records never share them. A long tuple of records the build digested
        # already (the queue's requests in the queue's record) is their digests, not their pickles.
        values = self._values(kind)(x)
        if tuple in map(type, values) and any(type(v) is tuple and len(v) >= _BULK for v in values):
            values = tuple(self._digested(v) if type(v) is tuple and len(v) >= _BULK else v for v in values)
        data = pickle.dumps((kind.__module__, kind.__qualname__, values), 5)
        digest = hashlib.blake2b(data, digest_size=16).digest()
        self.memo[id(x)] = (x, digest)
        return digest

    def _digested(self, items: tuple) -> tuple | _Digests:
        """``items`` as their digests joined, when each is a record of the memo; else as they are."""
        memo = self.memo
        hits = [memo.get(id(item)) for item in items]
        if None in hits:
            return items
        return _Digests(b"".join(hit[1] for hit in hits))  # type: ignore[index]

    def _values(self, kind: type) -> Callable[[Any], tuple]:
        """The values of a dataclass's fields, in order (not any other attribute it holds)."""
        get = self.getters.get(kind)
        if get is None:
            names = [f.name for f in fields(kind)]
            get = self.getters[kind] = attrgetter(*names) if len(names) > 1 else lambda x: tuple(getattr(x, n) for n in names)
        return get


# ---- what the invariants read of carried aggregates ------------------------------------------------


@dataclass(frozen=True)
class _Carried:
    file: str
    sha: str


class _Reads(dict):
    """What the invariants read of each file; a carried aggregate is read from its file only when
    one reads it, and only if the cache holds no extract of those very bytes."""

    def __init__(self, kept: dict[str, tuple[str, object]]):
        super().__init__()
        self.kept = kept
        self.exact: dict[str, str] = {}  # path -> sha256 of the bytes its value was read from or made as

    def carried(self, path: str, file: str, sha: str) -> None:
        self[path] = _Carried(file, sha) if path in extracts() else None

    def __getitem__(self, path):
        value = super().__getitem__(path)
        if type(value) is _Carried:
            carried, kept = value, self.kept.get(path)
            value = kept[1] if kept and kept[0] == carried.sha else extract(path, strict_loads(Path(carried.file).read_bytes()))
            self[path] = value
            self.exact[path] = carried.sha
        return value

    def get(self, path, default=None):
        try:
            return self[path]
        except KeyError:
            return default

    def exact_values(self) -> dict[str, tuple[str, object]]:
        """What to keep for the next build: each extract read or made from known bytes."""
        return {path: (sha, dict.__getitem__(self, path)) for path, sha in self.exact.items()}
