"""The guards each endpoint declares: every check reads only the fields it names (a build keeps
nothing else of the files it carries), and those fields are the endpoint's."""
from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from publisher.build import validate as V
from publisher.build.tree import sha256
from publisher.build.validate import (
    accumulated,
    bounded_paths,
    compare_previous,
    declared_bounds,
    declared_checks,
    extract,
    extracts,
    invariants,
    load_dir,
    schema_problems,
    strict_loads,
)
from publisher.compute.rewards import canonical_json
from publisher.endpoints import registry
from publisher.endpoints.market import HISTORY_PATH, PRICES_PATH
from publisher.endpoints.meta import STATUS_PATH
from publisher.endpoints.operators import MINIPOOLS_PATH, STAKERS_PATH
from publisher.endpoints.registry import load_all, match
from publisher.endpoints.vault import APY_PATH, METRICS_PATH, VAULT_PATH
from publisher.endpoints.withdrawals import QUEUE_PATH

# ---- every field read is declared by its endpoint's schema ---------------------------------------


def _branches(schema: dict):
    yield schema
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, ()):
            yield from _branches(branch)


def _has(schema: dict, steps: list[str]) -> bool:
    if not steps:
        return True
    for branch in _branches(schema):
        if steps[0] == "[]":
            if "items" in branch and _has(branch["items"], steps[1:]):
                return True
        elif steps[0] in branch.get("properties", {}) and _has(branch["properties"][steps[0]], steps[1:]):
            return True
    return False


def _steps(name: str) -> list[str]:
    return [s for part in name.split(".") for s in ((part[:-2], "[]") if part.endswith("[]") else (part,))]


def _declared_reads():
    for ep in load_all().values():
        for guard in (*ep.checks, *ep.bounds):
            for path, names in guard.reads.items():
                yield ep.path, guard.fn.__name__, path, names


def test_every_field_a_guard_reads_is_in_its_endpoints_schema():
    reads = list(_declared_reads())
    assert {fn for _, fn, _, _ in reads} == {g.fn.__name__ for g in (*declared_checks(), *declared_bounds())}
    for owner, fn, path, names in reads:
        assert path in load_all(), f"{owner} {fn} reads {path}, which no endpoint declares"
        schema = load_all()[path].schema
        for name in names:
            assert _has(schema, _steps(name)), f"{owner} {fn} reads {path} {name}, which its schema does not declare"
    for path, acc in accumulated().items():
        assert _has(load_all()[path].schema, [acc.entries, "[]", acc.key])


def test_the_guards_are_the_ones_the_endpoints_declare():
    assert {c.fn.__name__ for c in declared_checks()} == {
        "prices_hold", "history_share_prices", "vault_holds", "rates_in_range", "stakers_hold", "minipool_counts",
        "queue_holds"}
    assert set(bounded_paths()) == {PRICES_PATH, METRICS_PATH, QUEUE_PATH, HISTORY_PATH}
    assert set(extracts()) == {PRICES_PATH, STATUS_PATH, METRICS_PATH, APY_PATH, VAULT_PATH, HISTORY_PATH,
                               STAKERS_PATH, MINIPOOLS_PATH, QUEUE_PATH}


def test_an_extract_keeps_the_declared_fields_and_nothing_else():
    body = {"count": 2, "stakers": [{"stakerAddr": "0xA", "ggpStaked": 1.0, "effectiveGGPStaked": 0.5, "x": 1}, {}],
            "meta": {"block": {}}}
    assert extract(STAKERS_PATH, body) == {"count": 2, "stakers": [
        {"stakerAddr": "0xA", "ggpStaked": 1.0, "effectiveGGPStaked": 0.5}, {}]}
    assert extract(MINIPOOLS_PATH, {"count": 1, "minipools": [{"a": 1}], "countsByStatus": {"x": 1}}) == {
        "count": 1, "minipools": [{}], "countsByStatus": {"x": 1}}
    assert extract(QUEUE_PATH, {"status": "noQueue", "pending": None, "reason": "r"}) == {"status": "noQueue", "pending": None}
    assert extract("/stakers/0xabc", {"staker": {}}) is None


# ---- the same verdicts on full bodies and on their extracts --------------------------------------


@pytest.fixture(scope="module")
def files(built) -> dict:
    """The demo build's JSON files as ``validate`` gives them to the checks: aggregates whole,
    entities as None."""
    out = {}
    for path, data in load_dir(built).items():
        ep = match(path)
        if ep is not None and ep.content_type == "application/json":
            out[path] = None if "{" in ep.path else strict_loads(data)
    return out


def _read_templates() -> set[str]:
    return {path for c in declared_checks() for path in c.reads if "{" in path}


def _verdict(b: dict, profile, now) -> tuple:
    try:
        return "problems", invariants(b, profile.feed_max_age, profile.oracle_max_age, now=now)
    except Exception as exc:  # a check that fails on one side only is the finding
        return "raised", type(exc).__name__


def _extracts(full: dict) -> dict:
    """What a build keeps: each file the checks read (a template's: that it exists), as its extract."""
    templates = _read_templates()
    return {p: extract(p, body) for p, body in full.items()
            if p in extracts() or (match(p) is not None and match(p).path in templates)}


def _same_verdicts(full: dict, profile, now) -> tuple:
    verdict = _verdict(full, profile, now)
    assert verdict == _verdict(_extracts(full), profile, now)
    return verdict


def _scalar_variants(v) -> list:
    if isinstance(v, bool):
        return [not v, None]
    if isinstance(v, int):
        return [0, v + 1, v - 1, v * 2, -1, 10**12, None]
    if isinstance(v, float):
        return [0.0, v * 2, v / 2, -v, v * (1 + 1e-7), 150.0, None]
    if isinstance(v, str):
        return [v[:-1] + ("1" if v[-1:] != "1" else "2"), v.upper(), "", None]
    return [0, 1.5, True, "x", 10**12]  # null


@st.composite
def _mutated(draw, body):
    """A copy of ``body`` with one value changed, one member deleted, or a row dropped or doubled,
    the place chosen down from the root (the declared members of a file as likely as the rest)."""
    body = copy.deepcopy(body)
    parent, key = None, None
    node = body
    while True:
        if isinstance(node, dict) and node:
            k = draw(st.sampled_from(sorted(node)))
            if draw(st.integers(0, 9)) == 0:
                del node[k]
                return body
            parent, key, node = node, k, node[k]
        elif isinstance(node, list) and node:
            i = draw(st.integers(0, len(node) - 1))
            op = draw(st.sampled_from(["descend", "descend", "drop", "double"]))
            if op == "drop":
                del node[i]
                return body
            if op == "double":
                node.insert(i, copy.deepcopy(node[i]))
                return body
            parent, key, node = node, i, node[i]
        else:
            replacement = draw(st.sampled_from(_scalar_variants(node)))
            if parent is None:
                return replacement
            parent[key] = replacement
            return body


@st.composite
def _corrupted(draw, files: dict):
    """The demo files with a few changes: bodies mutated (kept only if they still pass their schema,
    as ``validate`` keeps them), entity files removed or added."""
    out = dict(files)
    read = sorted(p for p in files if p in extracts())
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(["body", "body", "body", "drop", "add"]))
        if what == "drop":
            out.pop(draw(st.sampled_from(sorted(out))), None)
        elif what == "add":
            address = "0x" + draw(st.sampled_from(["0" * 40, "f" * 40, "1" * 40]))
            out[draw(st.sampled_from(["/stakers/", "/withdrawals/"])) + address] = None
        else:
            path = draw(st.sampled_from(read))
            if path not in out:
                continue
            body = draw(_mutated(out[path]))
            if schema_problems(match(path), path, body):
                del out[path]  # validate keeps no body that breaks its schema
            else:
                out[path] = body
    return out


@given(data=st.data())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_check_gives_the_same_verdict_on_full_bodies_and_on_their_extracts(files, demo_profile, data):
    full = data.draw(_corrupted(files))
    status = full.get(STATUS_PATH) or files[STATUS_PATH]
    now = data.draw(st.sampled_from([None, status["block"]["timestamp"], status["block"]["timestamp"] + 10**7]))
    _same_verdicts(full, demo_profile, now)


def _set(body: dict, where: str, value) -> dict:
    body = copy.deepcopy(body)
    *parents, last = where.split(".")
    node = body
    for k in parents:
        node = node[int(k)] if isinstance(node, list) else node[k]
    node[int(last) if isinstance(node, list) else last] = value
    return body


def _corruptions(files: dict) -> dict:
    """One corruption each check refuses, by what it breaks."""
    prices, apy, vault = files[PRICES_PATH], files[APY_PATH], files[VAULT_PATH]
    stakers, minipools, queue, history = files[STAKERS_PATH], files[MINIPOOLS_PATH], files[QUEUE_PATH], files[HISTORY_PATH]
    dated = next(i for i, p in enumerate(history["points"]) if p.get("ggavaxBlock") is not None)
    staker_file = next(p for p in files if p.startswith("/stakers/"))
    requester = next(p for p in files if p.startswith("/withdrawals/0x"))
    return {
        "a zero price": {PRICES_PATH: _set(prices, "ggpInAvax", 0)},
        "a stale label that contradicts /metrics": {PRICES_PATH: _set(prices, "stale", not prices["stale"])},
        "an old feed": {STATUS_PATH: _set(files[STATUS_PATH], "block.timestamp", prices["feed"]["updatedAt"] + 10**8)},
        "an APY of 150 %": {APY_PATH: _set(apy, "total_apy", 150.0)},
        "more for staking than in all": {VAULT_PATH: _set(vault, "amountAvailableForStaking", vault["totalAssets"] + 1)},
        "a staker count off by one": {STAKERS_PATH: _set(stakers, "count", stakers["count"] + 1)},
        "an effective stake above the stake": {STAKERS_PATH: _set(stakers, "stakers.0.effectiveGGPStaked",
                                                                   stakers["stakers"][0]["ggpStaked"] + 1)},
        "a staker without its file": {staker_file: "drop"},
        "a minipool count off by one": {MINIPOOLS_PATH: _set(minipools, "count", minipools["count"] + 1)},
        "more claimable than funded": {QUEUE_PATH: _set(queue, "funded.claimableCount", queue["funded"]["count"] + 1)},
        "a requester file missing": {requester: "drop"},
        "a share price without its rate": {HISTORY_PATH: _set(history, f"points.{dated}.ggavaxExchangeRate", None)},
        "a share price after the file's block": {HISTORY_PATH: _set(history, "meta.block.number", 0)},
    }


def test_corrupted_bodies_get_the_same_refusals_from_their_extracts(files, demo_profile):
    assert _same_verdicts(files, demo_profile, None) == ("problems", [])
    assert files[QUEUE_PATH]["status"] == "ok"  # the demo has a queue: its checks are exercised
    for name, changes in _corruptions(files).items():
        full = dict(files)
        for path, body in changes.items():
            if body == "drop":
                del full[path]
            else:
                assert not schema_problems(match(path), path, body), name
                full[path] = body
        kind, problems = _same_verdicts(full, demo_profile, None)
        assert kind == "problems" and problems, f"{name}: not refused"


# ---- what a publish fetches of the live run is all the bounds read -------------------------------


@given(data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_bounds_read_only_the_live_files_a_publish_fetches(files, demo_profile, data):
    old = {p: json.dumps(body).encode() for p, body in files.items() if body is not None}
    new = dict(old)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(sorted(bounded_paths())))
        new[path] = json.dumps(data.draw(_mutated(files[path]))).encode()
    fetched = {p: old[p] for p in (STATUS_PATH, *bounded_paths())}
    limits = {"max_price_move_pct": demo_profile.max_price_move_pct, "max_staker_drop_pct": demo_profile.max_staker_drop_pct}
    assert compare_previous(fetched, new, **limits) == compare_previous(old, new, **limits)


@given(data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_bounds_read_what_this_process_kept_of_files_it_wrote_and_judge_alike(files, demo_profile, data, monkeypatch):
    """A bound reads the members it declares of a file this process wrote from what it kept when it
    wrote it (a watch bounds megabytes of /withdrawals at every block), not from the file: with the
    same verdicts as from the files parsed."""
    old = {p: canonical_json(body) for p, body in files.items() if body is not None}
    new = dict(old)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(sorted(bounded_paths())))
        new[path] = canonical_json(data.draw(_mutated(files[path])))
    limits = {"max_price_move_pct": demo_profile.max_price_move_pct, "max_staker_drop_pct": demo_profile.max_staker_drop_pct}
    monkeypatch.setattr(registry, "_KEPT", {})
    parsed_whole = compare_previous(old, new, **limits)
    for side in (old, new):
        for path in bounded_paths():
            registry.written(path, sha256(side[path]), json.loads(side[path]))
    parsed: list[bytes] = []
    monkeypatch.setattr(V, "strict_loads", lambda b: parsed.append(b) or strict_loads(b))
    assert compare_previous(old, new, **limits) == parsed_whole
    assert not {old[p] for p in bounded_paths() if p not in accumulated()} & {*parsed} - {old[STATUS_PATH], new[STATUS_PATH]}
