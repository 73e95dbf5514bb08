"""The guards every published file passes (DESIGN §10): its endpoint's schema, cross-file
invariants, and change bounds against the previous run. ``publisher build`` runs them before
writing; ``publisher check`` runs the same on any directory.

Each endpoint declares its own guards (``Endpoint.checks``, ``bounds``, ``accumulates``, with the
fields each reads); this module runs them over the registry: the checks on full bodies here, on
the declared fields (``extract``) in a build, which keeps nothing else of the files it carries."""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import jsonschema_rs

from .. import jsonin
from ..endpoints.meta import STATUS_PATH
from ..endpoints.registry import NOT_KEPT, Accumulates, Bound, Check, Endpoint, Limits, Row, Run, kept, load_all, match, url_for
from ..errors import PublisherError
from .tree import changes, list_files, read_file, read_record, sha256

if TYPE_CHECKING:
    from ..config import Profile


def _refuse(name):
    raise ValueError(f"{name} is not valid JSON")


# One decoder for every file: json.loads with a keyword builds a new decoder per call.
_STRICT = json.JSONDecoder(parse_constant=_refuse)


def strict_loads(data: bytes | str):
    """``json.loads`` refusing NaN and Infinity, which are not JSON."""
    if isinstance(data, str):
        if data.startswith("\ufeff"):  # as json.loads says it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", data, 0)
    else:
        data = data.decode(json.detect_encoding(data), "surrogatepass")
    return jsonin.within(_STRICT.decode, data)


@cache
def _validator(path: str) -> jsonschema_rs.Draft202012Validator:
    """The endpoint's schema compiled by jsonschema-rs: JSON Schema 2020-12 natively, and fast
    enough for tens of thousands of entity files (measured: about 4x fastjsonschema here)."""
    ep: Endpoint = load_all()[path]
    if not jsonschema_rs.meta.is_valid(ep.schema):
        raise PublisherError(f"{path}: its schema is not valid JSON Schema 2020-12")
    return jsonschema_rs.Draft202012Validator(ep.schema)


def schema_problems(ep: Endpoint, path: str, body) -> list[str]:
    """Up to three lines saying where ``body`` breaks its endpoint's schema; empty when it passes.
    A long list's rows that passed this endpoint's schema in an earlier build are not checked
    again (an array's items are valid one by one; its schemas have no array-wide keyword)."""
    v = _validator(ep.path)
    fresh: list[Row] = []
    if v.is_valid(_unchecked(body, ep.path, fresh)):
        for row in fresh:
            row.checked = ep.path
        return []
    errors = sorted(v.iter_errors(body), key=lambda e: [str(p) for p in e.instance_path])
    return [f"{path}: schema: at {'/'.join(str(p) for p in e.instance_path) or '(root)'}: {e.message[:200]}"
            for e in errors[:3]]


def _unchecked(value, schema: str, fresh: list[Row]):
    """``value`` with each list of rows (at any depth of objects) cut to the rows not yet checked
    against the endpoint ``schema``, which are added to ``fresh``; ``value`` itself when it holds
    no list of rows (the tens of thousands of entity files are not copied)."""
    kind = type(value)
    if kind is list and value and type(value[0]) is Row:
        rows = [r for r in value if getattr(r, "checked", None) != schema]
        fresh += rows
        return rows
    if kind is dict:
        cut = None
        for k, v in value.items():
            inner = type(v)
            if inner is not dict and inner is not list:  # most values: no call for them
                continue
            u = _unchecked(v, schema, fresh)
            if u is not v:
                cut = cut if cut is not None else dict(value)
                cut[k] = u
        return value if cut is None else cut
    return value


def load_dir(directory: str | Path) -> dict[str, bytes]:
    """URL path -> bytes for every file of a built directory (dotfiles and dot-directories
    skipped, symlinked directories not followed), in path order."""
    names = list_files(os.fspath(directory))
    return {url_for(rel): read_file(os.path.join(directory, rel)) for rel in sorted(names, key=lambda n: n.split("/"))}


def recorded_problems(directory: str | Path, files: Mapping[str, bytes]) -> list[str]:
    """How a built directory's files (``load_dir``'s) differ from the record its build left: edited,
    missing or added since. None without a record: a directory made by hand is judged by its files
    alone."""
    record = read_record(Path(directory))
    return changes(Path(directory), record, files) if record else []


def text_problems(content_type: str, path: str, data: bytes) -> list[str]:
    """A calendar or an Atom feed that does not parse (standard library), one line each; other
    files than JSON (the pages) are not checked."""
    from ..endpoints import calendar, feed

    check = {calendar.ICS: calendar.problems, feed.ATOM: feed.problems}.get(content_type)
    return [f"{path}: {p}" for p in check(data)] if check else []


def validate(files: dict[str, bytes], *, feed_max_age: int | None = None, oracle_max_age: int | None = None) -> list[str]:
    """Every problem found, as one line each; empty means publishable."""
    load_all()
    problems, bodies = [], {}
    for path in sorted(files):
        ep = match(path)
        if ep is None:
            problems.append(f"{path}: no endpoint declares this path")
            continue
        if ep.content_type != "application/json":
            problems += text_problems(ep.content_type, path, files[path])
            continue
        try:
            body = strict_loads(files[path])
        except ValueError as exc:
            problems.append(f"{path}: {exc}")
            continue
        errors = schema_problems(ep, path, body)
        problems += errors
        if not errors:
            # The checks read only aggregates (entities: whether they exist), and only bodies that
            # match their schema; an entity's body is not kept.
            bodies[path] = None if "{" in ep.path else body
    problems += invariants(bodies, feed_max_age, oracle_max_age)
    return problems


# ---- the engine: the checks and bounds the endpoints declare ----------------------------------------


@cache
def declared_checks() -> tuple[Check, ...]:
    """Every endpoint's cross-file checks, in registry order."""
    return tuple(c for ep in load_all().values() for c in ep.checks)


@cache
def declared_bounds() -> tuple[Bound, ...]:
    return tuple(b for ep in load_all().values() for b in ep.bounds)


@cache
def extracts() -> dict[str, dict]:
    """URL path -> the tree of the fields the checks read of it (see ``extract``): the union of
    every check's ``reads``; a template and a path read without fields (whether files exist) have
    none."""
    fields: dict[str, list[str]] = {}
    for check in declared_checks():
        for path, names in check.reads.items():
            if names and "{" not in path:
                fields.setdefault(path, []).extend(names)
    return {path: _tree(names) for path, names in fields.items()}


def _tree(names: list[str]) -> dict:
    """``("a.b", "rows[].f", "n")`` -> ``{"a": {"b": None}, "rows": {"[]": {"f": None}}, "n": None}``:
    None keeps a whole value, ``"[]"`` each row of a list."""
    root: dict = {}
    for name in names:
        steps = [s for part in name.split(".") for s in ((part[:-2], "[]") if part.endswith("[]") else (part,))]
        node: dict | None = root
        for i, step in enumerate(steps):
            if node is None:
                break  # a whole value is read already
            if i == len(steps) - 1:
                node[step] = node.get(step, {}) if step == "[]" else None
            else:
                node = node.setdefault(step, {})
    return root


def _project(value, tree: dict | None):
    if tree is None:
        return value
    if "[]" in tree:
        return [_row(row, tree["[]"]) for row in value] if isinstance(value, list) else value
    if not isinstance(value, dict):
        return value  # null where an object may be
    return {k: _project(value[k], sub) for k, sub in tree.items() if k in value}


def _row(value, tree: dict | None):
    """``_project`` of a list's item; a row keeps its projection for the next build."""
    if type(value) is not Row:
        return _project(value, tree)
    read = getattr(value, "read", None)
    if read is None or read[0] is not tree:
        read = value.read = (tree, _project(value, tree))
    return read[1]


def extract(path: str, body):
    """What the checks read of a body: the fields they declare (None: nothing but that it exists).
    A build keeps this of every body it writes or carries, not the body (tens of megabytes at
    100 000 stakers)."""
    tree = extracts().get(path)
    if tree is None or not isinstance(body, dict):
        return None
    return _project(body, tree)


def invariants(b: Mapping, feed_max_age: int | None = None, oracle_max_age: int | None = None,
               now: int | None = None) -> list[str]:
    """Every declared cross-file check over ``b`` (URL path -> full body or its ``extract``; an
    entity: None). ``now`` is the run's block timestamp (default: /status's): ages are taken at the
    run's block, not at a carried file's ``meta.block``."""
    run = Run(now, feed_max_age, oracle_max_age)
    return [problem for check in declared_checks() for problem in check.fn(b, run)]


def older_block(old_status: bytes, network: str, chain_id: int, number: int) -> str | None:
    """The refusal when block ``number`` is older than the block of the previous run (its /status)
    of the same network; None when it is not, or the previous run cannot be read."""
    try:
        o = strict_loads(old_status)
    except ValueError:
        return None
    if not isinstance(o, dict) or (o.get("network"), o.get("chainId")) != (network, chain_id):
        return None
    old_block = o["block"].get("number") if isinstance(o.get("block"), dict) else None
    if isinstance(old_block, int) and not isinstance(old_block, bool) and number < old_block:
        return f"block {number} is older than the last run's {old_block}"
    return None


class _Parsed(Mapping):
    """Files' bodies by URL path, each parsed when a bound first reads it: an unreadable one raises
    ValueError there, a missing one KeyError. Of bytes this process wrote, the body is the members
    it kept of them (``registry.kept``), which hold every member a bound declares it reads: a watch
    bounds megabytes of /withdrawals at every block, its own build's against the one before.
    ``parsed``: bodies by their bytes, shared by the old and the new side."""

    def __init__(self, files: Mapping[str, bytes], parsed: dict[bytes, object]):
        self.files, self.bodies, self.parsed = files, dict[str, object](), parsed

    def __getitem__(self, path: str):
        if path not in self.bodies:
            data = self.files[path]
            if data not in self.parsed:
                # Bytes this process wrote: the members the bounds read, as it kept them.
                members = kept(path, sha256(data))
                self.parsed[data] = strict_loads(data) if members is NOT_KEPT else members
            self.bodies[path] = self.parsed[data]
        return self.bodies[path]

    def __iter__(self):
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


def compare_previous(old: Mapping[str, bytes], new: Mapping[str, bytes], *, max_price_move_pct: float,
                     max_staker_drop_pct: float) -> list[str]:
    """Change bounds against the previous run of the same network: the block, every endpoint's
    declared bounds, and the files that accumulate."""
    try:
        o, n = strict_loads(old[STATUS_PATH]), strict_loads(new[STATUS_PATH])
    except (KeyError, ValueError):
        return []
    if not isinstance(o, dict) or (o.get("network"), o.get("chainId")) != (n.get("network"), n.get("chainId")):
        return []
    out = []
    went_back = older_block(old[STATUS_PATH], n["network"], n["chainId"], n["block"]["number"])
    if went_back:
        out.append(went_back)
    parsed: dict[bytes, object] = {}
    limits, was, now = Limits(max_price_move_pct, max_staker_drop_pct), _Parsed(old, parsed), _Parsed(new, parsed)
    for bound in declared_bounds():
        out += bound.fn(was, now, limits)
    return out + compare_accumulated(old, new)


def accumulated() -> dict[str, Accumulates]:
    """The files that accumulate across runs: path -> its list and key."""
    return {ep.path: ep.accumulates for ep in load_all().values() if ep.accumulates is not None}


def bounded_paths() -> tuple[str, ...]:
    """The files the change bounds read besides /status, in registry order: what a publish fetches
    of the live run."""
    paths = [p for b in declared_bounds() for p in b.reads if p != STATUS_PATH] + list(accumulated())
    return tuple(dict.fromkeys(paths))


# The way out of a history refusal: the last run there is another chain's (a devnet of another
# scenario, a rehearsal) or is meant to be replaced.
KEEP_OR_FORCE = ": keep that history by writing this run elsewhere (build --out DIR, publish --prefix P), or replace it with --force"


def compare_accumulated(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[str]:
    """The files that accumulate (``Endpoint.accumulates``): a run may add entries and advance the
    newest one (today's point, a later block); an older entry may gain what it lacked (a field it
    did not have, a null filled: a day's share price rebuilt once), never lose or change a value
    it had."""
    out = []
    for path, acc in accumulated().items():
        field, key = acc.entries, acc.key
        if path not in old:
            continue
        try:
            before = strict_loads(old[path])[field]
            if not isinstance(before, list) or not all(isinstance(e, dict) and type(e.get(key)) in (str, int) for e in before):
                continue  # entries keyed by anything but a string or number are no file this code wrote
        except (ValueError, KeyError, TypeError):
            continue  # a previous file we cannot read protects nothing
        try:
            after = strict_loads(new[path])[field] if path in new else []
            after_by_key = {e[key]: e for e in after}
        except (ValueError, KeyError, TypeError):
            out.append(f"{path} is unreadable where the last run had {len(before)} entries")
            continue
        if len(after) < len(before):
            out.append(f"{path} would shrink from {len(before)} to {len(after)} entries{KEEP_OR_FORCE}")
            continue
        missing = [e[key] for e in before if e[key] not in after_by_key]
        if missing:
            out.append(f"{path} would drop {len(missing)} entries recorded by earlier runs (first {missing[0]}){KEEP_OR_FORCE}")
            continue
        # The newest entry of the last run may still advance (today's point, a later block);
        # every value an older one holds is final.
        changed = [e[key] for e in before[:-1] if _rewrites(e, after_by_key[e[key]])]
        if changed:
            out.append(f"{path} would rewrite {len(changed)} entries recorded by earlier runs (first {changed[0]})"
                       f"{KEEP_OR_FORCE}")
    return out


def _rewrites(old: dict, new: dict) -> bool:
    """Whether ``new`` loses or changes a (non-null) value of ``old``."""
    return not isinstance(new, dict) or any(v is not None and (k not in new or new[k] != v) for k, v in old.items())


def network_profile(files: dict[str, bytes], directory) -> Profile:
    """The profile of the network a built directory's /status names: its bounds judge the files."""
    from ..config import NETWORKS, load_profile

    try:
        network = strict_loads(files[STATUS_PATH]).get("network")
    except (KeyError, ValueError, AttributeError):
        raise PublisherError(f"{directory} is not a built directory (no readable status.json)") from None
    if network not in NETWORKS:
        raise PublisherError(f"{directory}: status.json names no known network ({network!r})")
    return load_profile(network)
