"""The single list of endpoints. Each is declared once — path, schema, docs text, cache policy and
render function — and build, check, the OpenAPI document, serve and publish all read it."""
from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..compute.rewards import canonical_json

# Cache-Control per policy; "{max_age}" follows the profile's publish cadence.
CACHE_POLICIES = {
    "data": "public, max-age={max_age}, stale-while-revalidate=60, stale-if-error=86400",
    "docs": "public, max-age=3600, stale-while-revalidate=600, stale-if-error=86400",
    "status": "public, max-age=30, stale-while-revalidate=30, stale-if-error=86400",
}

Render = Callable[..., Iterable[tuple[str, Any]]]  # (ctx), or (ctx, files) for final endpoints


class Deferred:
    """A body made only when a build needs it, from declared inputs: ``make(*inputs)``.

    ``inputs`` is a tuple of everything the body is made from and ``make`` a module-level function
    whose parameters are those inputs, in order. The maker receives the inputs and nothing else:
    a maker that closes over a variable (the context, above all), is not defined at module level,
    or whose parameters do not take the inputs is refused here, when the Deferred is made. A build
    keys the file by a digest of the maker's name and the inputs and keeps the previous file while
    the key is unchanged, so a carried file is the file the maker would make: the incremental build
    equals the full one by construction, not by a list kept in step with the maker by hand.

    An input is a scalar (str, int, float, bool, None, bytes), a tuple, list or dict of inputs, a
    frozen dataclass (a snapshot record, or a value derived from the snapshot such as
    ``rewards.StakerTerms``) or an ``Each`` (a long list made row by row). A derived value several
    files need is computed once by the render function (``ctx.cached``) and declared as an input
    of each; a maker reads no module state either.

    ``meta``: the run's stamp (``common.meta(ctx)``) for an aggregate, set into the body after
    ``make``. It is not an input: an aggregate carried from an earlier run keeps that run's stamp
    (its content was read then and still holds), and /status names this run's block. ``stamp``:
    the same for a page, which shows it where it says: passed to the maker as the keyword
    ``stamp``, not an input, so a page whose figures did not change keeps its bytes and the block
    it was rendered at.
    """

    __slots__ = ("inputs", "make", "meta", "stamp")

    def __init__(self, inputs: tuple, make: Callable[..., Any], meta: dict | None = None, stamp: dict | None = None):
        if type(inputs) is not tuple:
            raise TypeError(f"Deferred inputs are a tuple, not {type(inputs).__name__}")
        problem = _maker_problem(make, len(inputs), stamp is not None)
        if problem:
            raise TypeError(problem)
        self.inputs, self.make, self.meta, self.stamp = inputs, make, meta, stamp

    def body(self, inputs: list) -> Any:
        """``make`` on these inputs (the declared ones, each ``Each`` made), the stamp given."""
        body = self.make(*inputs) if self.stamp is None else self.make(*inputs, stamp=self.stamp)
        if self.meta is not None:
            body["meta"] = self.meta
        return body

    def __repr__(self) -> str:
        make = getattr(self, "make", None)
        return f"Deferred({getattr(make, '__qualname__', make)}, {len(getattr(self, 'inputs', ()))} inputs)"


class Each:
    """An input that is a long list made row by row, ``[row(item) for item in items]``; the maker
    receives the list. ``row`` is a module-level function of one item, ``items`` a tuple of
    hashable inputs (snapshot records, tuples of them). A build given a ``Rows`` memo reuses a row,
    its JSON included, whose item equals one it made in the build before; a page excerpt makes the
    first few rows only (a ``Head``). Keyed by the row function and the items."""

    __slots__ = ("items", "row")

    def __init__(self, row: Callable[[Any], dict], items: tuple):
        if type(items) is not tuple:
            raise TypeError(f"Each items are a tuple, not {type(items).__name__}")
        problem = _maker_problem(row, 1)
        if problem:
            raise TypeError(problem)
        self.row, self.items = row, items

    def make(self, rows: Rows | None = None) -> list:
        if rows is not None:
            return rows.make(self.row, self.items)
        row = self.row
        return [Row(row(item)) for item in self.items]

    def head(self, n: int) -> Head:
        return Head([self.row(item) for item in self.items[:n]], len(self.items))


@cache
def _maker_problem(make: Callable, count: int, stamped: bool = False) -> str | None:
    """Why ``make`` cannot be a maker of ``count`` inputs (and the keyword ``stamp`` when
    ``stamped``); None: it can. Checked once per function."""
    if not inspect.isfunction(make):
        return f"{make!r} is not a function: a maker is a module-level function of its declared inputs"
    where = f"{make.__module__}.{make.__qualname__}"
    if make.__closure__ or "<" in make.__qualname__:  # a closure, a lambda, a function in a function
        names = ", ".join(make.__code__.co_freevars)
        return (f"{where} is not a module-level function{f' (it closes over {names})' if names else ''}: "
                f"a maker receives its declared inputs and nothing else")
    signature = inspect.signature(make)
    try:
        signature.bind(*range(count), **({"stamp": None} if stamped else {}))
    except TypeError:
        extra = " and the keyword stamp" if stamped else ""
        return f"{where}({', '.join(signature.parameters)}) does not take the {count} input(s){extra} declared for it"
    return None


class Head(list):
    """The first items of a list of ``total``."""

    def __init__(self, items, total: int):
        super().__init__(items)
        self.total = total


class Row(dict):
    """A row of a long list, which keeps what builds learn of it while its item is unchanged (rows
    are never changed once made): its canonical JSON once encoded (``json``), the endpoint whose
    schema it last passed (``checked``) and what the checks last read of it (``read``: the
    extract's tree and the projection)."""

    __slots__ = ("checked", "json", "read")
    json: bytes
    checked: str
    read: tuple[dict | None, Any]


class Rows:
    """Rows made for ``Each`` inputs, by row function and item: the last ones made, reused while an
    item is equal (frozen records compare by value), and this build's, which ``turn`` makes the
    last. A watch rewrites /stakers for one changed staker without making and encoding 10 000 rows
    again. Owned by the caller's build cache (``incremental.Cache``), never by a module.

    An item is found first by what it is made of (``_made_of``): a record read again unchanged is
    the very object it was (``snapshot.Known``), and hashing and comparing 10 000 records by value
    each build cost more than the rest of /stakers. Only the items not found so are compared by
    value: with the item at the same place of the last list (``placed``), then with the last
    build's items that were not found either."""

    def __init__(self) -> None:
        # row function -> what an item is made of -> (the item, its row); the item held, so the
        # ids that name it stay its own.
        self.last: dict[Callable, dict[Any, tuple[Any, Row]]] = {}
        self.made: dict[Callable, dict[Any, tuple[Any, Row]]] = {}
        # This build's lists by row function and items (held, so the id is theirs): a body made
        # twice in a build from the one Deferred (a page reads the file it shows) makes them once.
        self.lists: dict[tuple[Callable, int], tuple[tuple, list]] = {}
        # Each row function's last list in order, the last build's (``placed``) and this one's.
        self.placed: dict[Callable, tuple[tuple, list]] = {}
        self.placing: dict[Callable, tuple[tuple, list]] = {}

    def make(self, row: Callable[[Any], dict], items: tuple) -> list:
        hit = self.lists.get((row, id(items)))
        if hit is not None and hit[0] is items:
            return list(hit[1])
        last, made = self.last.get(row, {}), self.made.setdefault(row, {})
        out: list[Row | None] = []
        missed: list[tuple[int, Any]] = []
        for item in items:
            key = _made_of(item)
            found = last.get(key)
            if found is None:
                missed.append((len(out), key))
                out.append(None)
            else:
                made[key] = found
                out.append(found[1])
        if missed:
            # By value: first against the item at the same place in the last list of this row
            # function (a list derived anew each build, as the queue's schedule, is mostly where it
            # was, and hashing thousands of nested records costs more than comparing each with
            # one), then among the last build's items nobody took (one changed record: one item).
            placed, placed_rows = self.placed.get(row, ((), ()))
            rest: dict | None = None
            for i, key in missed:
                item = items[i]
                if i < len(placed) and type(placed[i]) is type(item) and placed[i] == item:
                    r = placed_rows[i]
                else:
                    if rest is None:
                        rest = {item: r for key, (item, r) in last.items() if key not in made}
                    r = rest.get(item)
                    if r is None:
                        r = Row(row(item))
                made[key] = (item, r)
                out[i] = r
        self.lists[row, id(items)] = (items, out)
        self.placing[row] = (items, out)
        return list(out)

    def turn(self) -> None:
        """The end of a build: the rows it made replace the last ones of the same row function."""
        self.last.update(self.made)
        self.placed.update(self.placing)
        self.made, self.lists, self.placing = {}, {}, {}


def _made_of(item: Any) -> Any:
    """The objects an item is (a tuple's, and its tuples' one level down), by id: equal for two
    items only when they are made of the very same objects, which are then equal."""
    if type(item) is not tuple:
        return id(item)
    return tuple([id(x) if type(x) is not tuple else tuple(map(id, x)) for x in item])


def resolve(value: Any, rows: Rows | None = None) -> Any:
    """The body: a Deferred's ``make(*inputs)``, each ``Each`` made first (reusing ``rows``), its
    ``meta`` set; any other value as it is."""
    if type(value) is not Deferred:
        return value
    return value.body([x.make(rows) if type(x) is Each else x for x in value.inputs])


def excerpt(value: Any, n: int) -> Any:
    """The body with each ``Each`` list cut to its first ``n`` rows (a ``Head``), for a page
    showing an example: making every row of a large aggregate to show two costs a build."""
    if type(value) is not Deferred:
        return value
    return value.body([x.head(n) if type(x) is Each else x for x in value.inputs])


@dataclass(frozen=True)
class Param:
    name: str
    where: str  # "path" or "query"
    description: str
    schema: dict
    example: str | None = None
    required: bool = True
    lowercase: bool = False  # the published key is lower-case; other spellings are normalized to it


# ---- guards declared with their endpoints ---------------------------------------------------------

REL = 1e-9  # the relative tolerance of a check comparing floats made from the same wei


@dataclass(frozen=True)
class Run:
    """What a check is given besides the files: the run's block timestamp (None: take /status's)
    and the network's age bounds (None: not checked)."""

    now: int | None = None
    feed_max_age: int | None = None
    oracle_max_age: int | None = None


@dataclass(frozen=True)
class Limits:
    """The network's bounds on what may change since the previous run."""

    max_price_move_pct: float
    max_staker_drop_pct: float


Reads = Mapping[str, tuple[str, ...]]  # URL path or template -> fields read (see Check)


@dataclass(frozen=True)
class Check:
    """A cross-file check: ``fn(files, run)`` -> one line per problem. ``files`` maps every URL path
    of the build to what the checks read of it; an entity file and a file no check reads map to
    None. ``reads`` names each file ``fn`` reads and the fields it reads of it: ``"a"`` a whole
    member, ``"a.b"`` a member of an object, ``"rows[].f"`` a member of each row of a list
    (``"rows[]"``: how many rows); a template (``/stakers/{address}``) with no fields: which such
    files exist. A build keeps only those fields of the bodies it writes or carries, so ``fn``
    must read nothing else (a property test holds every check to it)."""

    fn: Callable[[Mapping[str, Any], Run], list[str]]
    reads: Reads


@dataclass(frozen=True)
class Bound:
    """A bound against the previous run of the same network: ``fn(old, new, limits)`` -> one line per
    problem, where ``old`` and ``new`` map URL paths to the files' bytes; a previous file it cannot
    read bounds nothing. ``reads``: as a Check's (the live files a publish fetches)."""

    fn: Callable[[Mapping[str, bytes], Mapping[str, bytes], Limits], list[str]]
    reads: Reads


@dataclass(frozen=True)
class Accumulates:
    """A file whose list ``entries`` only grows across runs, its entries told apart by ``key``: a run
    may add entries and advance the newest one; an older entry may gain what it lacked (a field it
    did not have, a null filled), never lose or change a value it had."""

    entries: str
    key: str


@dataclass(frozen=True)
class Endpoint:
    path: str  # URL template, e.g. "/stakers/{address}"
    summary: str
    schema: dict  # JSON Schema (2020-12) of the response body
    render: Render | None  # None: answered by the rewards function, not a file
    description: str = ""
    tag: str = ""
    cache: str = "data"
    params: tuple[Param, ...] = ()
    content_type: str = "application/json"
    # Rendered after every other file, from their digests (render(ctx, files)): /status.
    final: bool = False
    documented: bool = True  # listed in the OpenAPI document and the pages
    # A function endpoint's real answer for the reference: example(ctx) -> (query string, body).
    example: Callable[..., tuple[str, Any]] | None = None
    # The guards of this file (publisher.validate runs them over the registry): cross-file checks,
    # bounds against the previous run, and the list that accumulates across runs.
    checks: tuple[Check, ...] = ()
    bounds: tuple[Bound, ...] = ()
    accumulates: Accumulates | None = None

    @property
    def is_function(self) -> bool:
        return self.render is None

    @property
    def pattern(self) -> re.Pattern:
        """Regex matching concrete URL paths of this endpoint."""
        return _pattern(self.path)


    def canonical(self, url_path: str) -> str:
        """The published path for a request path (e.g. a checksummed address lower-cased)."""
        m = self.pattern.match(url_path)
        if not m or not any(p.lowercase for p in self.params):
            return url_path
        names = re.findall(r"\{([^}]+)\}", self.path)
        lower = {p.name for p in self.params if p.lowercase}
        values = [v.lower() if n in lower else v for n, v in zip(names, m.groups(), strict=True)]
        return self.path.format(**dict(zip(names, values, strict=True)))


@cache
def _pattern(template: str) -> re.Pattern:
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile("^" + "".join("([^/]+)" if p.startswith("{") else re.escape(p) for p in parts) + "$")


REGISTRY: dict[str, Endpoint] = {}


def endpoint(path: str, *, summary: str, schema: dict, **kwargs) -> Callable[[Render], Render]:
    """Register a file endpoint rendered by the decorated function."""

    def register(render: Render) -> Render:
        _add(Endpoint(path, summary, schema, render, **kwargs))
        return render

    return register


def function_endpoint(path: str, *, summary: str, schema: dict, **kwargs) -> None:
    _add(Endpoint(path, summary, schema, None, **kwargs))


# Long lists of records a build derives (a render function's ``ctx.cached`` values) that thousands
# of files declare among their inputs: the incremental layer digests each list once per build,
# before its workers fork, taking the digest of a record equal to the last build's at its place.
KEYED_RECORDS: list[Callable[[Any], tuple]] = []


def keyed_records(derive: Callable[[Any], tuple]) -> Callable[[Any], tuple]:
    """Register ``derive(ctx)``: a tuple of frozen dataclasses in a stable order (see KEYED_RECORDS)."""
    KEYED_RECORDS.append(derive)
    return derive


# What a later build or publish in this process reads back of a file it wrote, without reading the
# file: top-level members of the body, as parsing the written bytes gives them, by the sha256 of
# those bytes. /withdrawals is megabytes at scale and made again at every block while the vault's
# reward stream moves its liquidity: the feed compares the queue's parameters and pauses with the
# last one's, and a publish bounds it against the live one, the build before (whose file this
# process wrote too). Readers register the members they read; the last two files written at a path
# are kept.
_KEPT_MEMBERS: dict[str, set[str]] = {}
_KEPT: dict[str, dict[str, dict]] = {}
NOT_KEPT = object()


def keeps(path: str, members: Iterable[str]) -> None:
    """Register top-level members of the file at ``path`` that a reader takes back (see _KEPT)."""
    _KEPT_MEMBERS.setdefault(path, set()).update(members)


def written(path: str, sha: str, body: Any) -> None:
    """The build wrote ``body`` at ``path`` as bytes of this sha256: keep what is read back of it."""
    names = _KEPT_MEMBERS.get(path)
    if names is None or type(body) is not dict:
        return
    # As parsing the file gives them: each member's JSON is the file's own (a few kilobytes).
    members = json.loads(canonical_json({k: body[k] for k in names if k in body}))
    last = _KEPT.setdefault(path, {})
    last.pop(sha, None)
    last[sha] = members
    while len(last) > 2:
        del last[next(iter(last))]


def kept(path: str, sha: str) -> dict | Any:
    """The registered members of a file this process wrote at ``path`` (one of the last two) if
    those bytes had this sha256; ``NOT_KEPT`` otherwise (the file is then read)."""
    return _KEPT.get(path, {}).get(sha, NOT_KEPT)


_ordered = True  # whether REGISTRY is in load_all's order


def _add(ep: Endpoint) -> None:
    global _ordered
    if ep.path in REGISTRY:
        raise ValueError(f"endpoint {ep.path} declared twice")
    REGISTRY[ep.path] = ep
    for bound in ep.bounds:  # what a bound reads of a file this process wrote is kept (see _KEPT)
        for path, names in bound.reads.items():
            keeps(path, (name.split(".")[0].removesuffix("[]") for name in names))
    _ordered = False
    _candidates.cache_clear()
    _literals.cache_clear()


def file_for(url_path: str) -> str:
    """Relative file name for a URL path: ``/a/b`` -> ``a/b.json``; ``/`` -> ``index.html``."""
    if url_path in ("", "/"):
        return "index.html"
    if "." in url_path.rsplit("/", 1)[-1]:
        return url_path.lstrip("/")
    return url_path.lstrip("/") + ".json"


def url_for(file_name: str) -> str:
    if file_name == "index.html":
        return "/"
    if "/" + file_name in load_all():  # an endpoint named with its extension (/openapi.json, /docs.html)
        return "/" + file_name
    return "/" + (file_name[: -len(".json")] if file_name.endswith(".json") else file_name)


def match(url_path: str) -> Endpoint | None:
    ep = _literals().get(url_path)
    if ep is not None:
        return ep  # a literal path wins over any template
    for ep in _candidates(url_path.count("/"), url_path.split("/", 2)[1] if "/" in url_path else ""):
        if ep.pattern.match(url_path):
            return ep
    return None


@cache
def _literals() -> dict[str, Endpoint]:
    return {path: ep for path, ep in load_all().items() if "{" not in path}


@cache
def _candidates(depth: int, first: str) -> tuple[Endpoint, ...]:
    """The templates that can match a path of this depth and first segment, the most literal first
    (``/withdrawals/{address}.html`` before ``/withdrawals/{address}``, whose parameter would also
    match ``0x….html``), else in registry order: a build or check matches tens of thousands of
    paths, and most templates cannot apply."""
    out = []
    for ep in load_all().values():
        head = ep.path.split("/", 2)[1] if "/" in ep.path else ""
        if "{" in ep.path and ep.path.count("/") == depth and (head == first or head.startswith("{")):
            out.append(ep)
    return tuple(sorted(out, key=lambda ep: -len(re.sub(r"\{[^}]+\}", "", ep.path))))


def load_all() -> dict[str, Endpoint]:
    """Import every endpoint module (registration happens at import) and return the registry."""
    from . import catalogue  # noqa: F401

    global _ordered
    # A fixed order whatever the import order: by path, so literal segments ("/rewards/grid") come
    # before templates ("/rewards/{address}") and win in match(); final endpoints last. Sorted once
    # per registration, not per call: a build or publish asks tens of thousands of times.
    if not _ordered:
        items = {p: REGISTRY[p] for p in sorted(REGISTRY, key=lambda p: (REGISTRY[p].final, p))}
        REGISTRY.clear()
        REGISTRY.update(items)
        _ordered = True
    return REGISTRY
