"""The single list of endpoints. Each is declared once — path, schema, docs text, cache policy and
render function — and build, check, the OpenAPI document, serve and publish all read it."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

# Cache-Control per policy; "{max_age}" follows the profile's publish cadence.
CACHE_POLICIES = {
    "data": "public, max-age={max_age}, stale-while-revalidate=60, stale-if-error=86400",
    "docs": "public, max-age=3600, stale-while-revalidate=600, stale-if-error=86400",
    "status": "public, max-age=30, stale-while-revalidate=30, stale-if-error=86400",
}

Render = Callable[..., Iterable[tuple[str, Any]]]  # (ctx), or (ctx, files) for final endpoints


@dataclass(frozen=True)
class Deferred:
    """A body computed only when a build needs it. ``inputs`` is everything the body is computed
    from; its ``repr`` is hashed, so a build reuses the previous file while the hash is unchanged.
    Per-entity endpoints yield these (thousands of files whose inputs rarely change), and so do the
    large aggregates."""

    inputs: Any
    make: Callable[[], Any]
    # The body with its long lists cut to their first ``n`` items (each a ``Head``), for a page
    # showing an excerpt: rendering every row of a large aggregate to show two costs a build.
    head: Callable[[int], Any] | None = None


class Head(list):
    """The first items of a list of ``total``."""

    def __init__(self, items, total: int):
        super().__init__(items)
        self.total = total


def listing(items, row: Callable[[Any], Any], limit: int | None = None) -> list:
    """``row`` of every item; with ``limit``, of the first ``limit`` only, as a ``Head``."""
    if limit is None:
        return [row(x) for x in items]
    return Head([row(x) for x in items[:limit]], len(items))


class Row(dict):
    """A row of a long list, which keeps its canonical JSON once a build has encoded it (``json``)."""

    __slots__ = ("json",)
    json: bytes


class Rows:
    """A long list's rows as this process last made them, by the inputs each was made from
    (hashable values: frozen snapshot records). A row whose inputs are equal is reused, JSON and
    all: a watch rewrites /stakers for one changed staker without making and encoding 10 000 rows
    again. Holds the rows of the last full listing only."""

    def __init__(self) -> None:
        self.last: dict[Any, Row] = {}

    def listing(self, items, inputs: Callable[[Any], Any], row: Callable[[Any], dict], limit: int | None = None) -> list:
        if limit is not None:  # an excerpt for a page: not remembered
            return listing(items, row, limit)
        last, made, out = self.last, {}, []
        for x in items:
            key = inputs(x)
            r = last.get(key)
            if r is None:
                r = Row(row(x))
            made[key] = r
            out.append(r)
        self.last = made
        return out


def resolve(value: Any) -> Any:
    return value.make() if isinstance(value, Deferred) else value


def excerpt(value: Any, n: int) -> Any:
    """The body, its long lists cut to ``n`` items where the endpoint can render it so."""
    return value.head(n) if isinstance(value, Deferred) and value.head else resolve(value)


@dataclass(frozen=True)
class Param:
    name: str
    where: str  # "path" or "query"
    description: str
    schema: dict
    example: str | None = None
    required: bool = True
    lowercase: bool = False  # the published key is lower-case; other spellings are normalized to it


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
        if path in REGISTRY:
            raise ValueError(f"endpoint {path} declared twice")
        REGISTRY[path] = Endpoint(path, summary, schema, render, **kwargs)
        _candidates.cache_clear()
        _literals.cache_clear()
        return render

    return register


def function_endpoint(path: str, *, summary: str, schema: dict, **kwargs) -> None:
    if path in REGISTRY:
        raise ValueError(f"endpoint {path} declared twice")
    REGISTRY[path] = Endpoint(path, summary, schema, None, **kwargs)
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
    """The templates that can match a path of this depth and first segment, in registry order: a
    build or check matches tens of thousands of paths, and most templates cannot apply."""
    out = []
    for ep in load_all().values():
        head = ep.path.split("/", 2)[1] if "/" in ep.path else ""
        if "{" in ep.path and ep.path.count("/") == depth and (head == first or head.startswith("{")):
            out.append(ep)
    return tuple(out)


def load_all() -> dict[str, Endpoint]:
    """Import every endpoint module (registration happens at import) and return the registry."""
    from . import catalogue  # noqa: F401

    # A fixed order whatever the import order: by path, so literal segments ("/rewards/grid") come
    # before templates ("/rewards/{address}") and win in match(); final endpoints last.
    if list(REGISTRY) != (ordered := sorted(REGISTRY, key=lambda p: (REGISTRY[p].final, p))):
        items = {p: REGISTRY[p] for p in ordered}
        REGISTRY.clear()
        REGISTRY.update(items)
    return REGISTRY
