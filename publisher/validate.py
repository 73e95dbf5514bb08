"""The guards every published file passes (DESIGN §10): its endpoint's schema, cross-file
invariants, and change bounds against the previous run. ``publisher build`` runs them before
writing; ``publisher check`` runs the same on any directory."""
from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import jsonschema_rs

from .endpoints.registry import Endpoint, load_all, match, url_for
from .errors import PublisherError
from .tree import changes, list_files, read_file, read_record

if TYPE_CHECKING:
    from .config import Profile

REL = 1e-9


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
    return _STRICT.decode(data)


@cache
def _validator(path: str) -> jsonschema_rs.Draft202012Validator:
    """The endpoint's schema compiled by jsonschema-rs: JSON Schema 2020-12 natively, and fast
    enough for tens of thousands of entity files (measured: about 4x fastjsonschema here)."""
    ep: Endpoint = load_all()[path]
    if not jsonschema_rs.meta.is_valid(ep.schema):
        raise PublisherError(f"{path}: its schema is not valid JSON Schema 2020-12")
    return jsonschema_rs.Draft202012Validator(ep.schema)


def schema_problems(ep: Endpoint, path: str, body) -> list[str]:
    """Up to three lines saying where ``body`` breaks its endpoint's schema; empty when it passes."""
    v = _validator(ep.path)
    if v.is_valid(body):
        return []
    errors = sorted(v.iter_errors(body), key=lambda e: [str(p) for p in e.instance_path])
    return [f"{path}: schema: at {'/'.join(str(p) for p in e.instance_path) or '(root)'}: {e.message[:200]}"
            for e in errors[:3]]


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
    from .endpoints import calendar, feed

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
            # Cross-file invariants read only aggregates (entities: whether they exist), and only
            # bodies that match their schema; an entity's body is not kept.
            bodies[path] = None if "{" in ep.path else body
    problems += invariants(bodies, feed_max_age, oracle_max_age)
    return problems


def invariants(b: dict, feed_max_age: int | None = None, oracle_max_age: int | None = None,
               now: int | None = None) -> list[str]:
    """Cross-file checks. ``now`` is the run's block timestamp (default: /status's): ages are taken
    at the run's block, not at a carried file's ``meta.block``."""
    prices = b.get("/prices")
    out = _price_invariants(b, prices, now, feed_max_age, oracle_max_age) if prices else []
    out += _anomalies(b)
    out += _staker_invariants(b)
    if b.get("/prices/history"):
        out += _history_problems(b["/prices/history"])
    out += _minipool_invariants(b.get("/minipools"), b.get("/metrics"))
    out += _queue_invariants(b)
    return out


def _price_invariants(b: dict, prices: dict, now: int | None, feed_max_age: int | None,
                      oracle_max_age: int | None) -> list[str]:
    if now is None:
        status = b.get("/status") or {}
        now = status["block"]["timestamp"] if "block" in status else prices["meta"]["block"]["timestamp"]
    metrics = b.get("/metrics")
    out = []
    for k in ("ggpInAvax", "ggpInUSD", "avaxInUSD"):
        if not prices[k] > 0:
            out.append(f"/prices: {k} must be > 0, got {prices[k]}")
    age = now - prices["feed"]["updatedAt"]
    if feed_max_age is not None and age > feed_max_age:
        out.append(f"/prices: AVAX/USD feed round is {age}s old at the build block (max {feed_max_age}s)")
    # Age alone is a label, not a refusal: an Oracle price older than the bound is published,
    # but only labelled so (GGP/USD multiplies it by a fresh feed, and would pass as fresh).
    age = now - prices["oracle"]["timestamp"]
    if oracle_max_age is not None and (age > oracle_max_age) != prices.get("stale"):
        out.append(f"/prices: the Oracle GGP price is {age}s old at the build block (bound {oracle_max_age}s) "
                   f"but is labelled stale: {prices.get('stale')}")
    if metrics and metrics.get("ggp_price_stale") != prices.get("stale"):
        out.append("/metrics: ggp_price_stale differs from /prices stale")
    return out


def _anomalies(b: dict) -> list[str]:
    """Rates outside [0, 100) %, and the vault holding more for staking than in all."""
    out = []
    for path, keys in (("/metrics", ("ggavax_apy",)), ("/metrics/apy", ("total_apy", "total_apy_after_fees"))):
        for k in keys:
            v = (b.get(path) or {}).get(k)
            if v is not None and not 0 <= v < 100:
                out.append(f"{path}: {k} = {v} is outside [0, 100): refusing to publish an anomaly")
    vault = b.get("/ggAvax")
    if vault and vault["amountAvailableForStaking"] > vault["totalAssets"]:
        out.append("/ggAvax: amountAvailableForStaking exceeds totalAssets")
    return out


def _staker_invariants(b: dict) -> list[str]:
    stakers, metrics = b.get("/stakers"), b.get("/metrics")
    if not stakers:
        return []
    out = []
    rows = stakers["stakers"]
    if stakers["count"] != len(rows):
        out.append("/stakers: count does not match the list")
    for r in rows:
        if r["effectiveGGPStaked"] > r["ggpStaked"] * (1 + REL):
            out.append(f"/stakers: {r['stakerAddr']} effective stake exceeds its stake")
    if metrics:
        total = sum(r["ggpStaked"] for r in rows)
        if not math.isclose(total, metrics["total_ggp_staked"], rel_tol=1e-6, abs_tol=1e-6):
            out.append(f"/stakers: sum of ggpStaked {total} != total_ggp_staked {metrics['total_ggp_staked']}")
        if metrics["staker_count"] != len(rows):
            out.append(f"/stakers: {len(rows)} stakers but staker_count is {metrics['staker_count']}")
    missing = [r["stakerAddr"] for r in rows if f"/stakers/{r['stakerAddr'].lower()}" not in b]
    if missing and any(p.startswith("/stakers/") for p in b):
        out.append(f"/stakers: {len(missing)} stakers have no /stakers/{{address}} file")
    return out


def _minipool_invariants(minipools: dict | None, metrics: dict | None) -> list[str]:
    if not minipools:
        return []
    out = []
    counts = minipools["countsByStatus"]
    if sum(counts.values()) != minipools["count"] or minipools["count"] != len(minipools["minipools"]):
        out.append("/minipools: status counts do not add up to the minipool count")
    if metrics and metrics["minipool_count"] != minipools["count"]:
        out.append("/minipools: count differs from /metrics minipool_count")
    return out


_REQUESTER_FILE = re.compile(r"^/withdrawals/0x[0-9a-f]{40}$")  # not /withdrawals/params, nor the pages


def _queue_invariants(b: dict) -> list[str]:
    queue, vault = b.get("/withdrawals"), b.get("/ggAvax")
    if not queue:
        return []
    out = []
    # One JSON file per requester (each has its page, /withdrawals/{address}.html, beside it).
    files = sum(1 for p in b if _REQUESTER_FILE.match(p))
    if queue["status"] != "ok":
        return _no_queue_invariants(files, vault)
    pending, funded, sched = queue["pending"], queue["funded"], queue["schedule"]
    if sched["coveredCount"] + sched["uncoveredCount"] != pending["count"] or len(sched["line"]) != pending["count"]:
        out.append("/withdrawals: the schedule's line does not hold every pending request")
    if funded["claimableCount"] > funded["count"] or funded["claimableAvax"] > funded["avax"] * (1 + REL):
        out.append("/withdrawals: more claimable than funded")
    # A file for every address with a request on record, open or closed (its receipts).
    ever = queue.get("requestersEver", queue["requesters"])
    if files and files != ever:
        out.append(f"/withdrawals: {ever} requesters on record but {files} requester files")
    if ever < queue["requesters"]:
        out.append(f"/withdrawals: {queue['requesters']} requesters with an open request but {ever} on record")
    counts = queue.get("receipts")
    if counts and counts["count"] != sum(counts[k] for k in ("open", "claimed", "cancelled", "reclaimed")):
        out.append("/withdrawals: the receipts' outcomes do not add up to their count")
    if vault and (vault.get("queuePendingCount"), vault.get("withdrawQueue")) != (pending["count"], queue["address"]):
        out.append("/ggAvax: queue totals differ from /withdrawals")
    return out


def _no_queue_invariants(files: int, vault: dict | None) -> list[str]:
    out = []
    if files:
        out.append(f"/withdrawals: no queue, but {files} requester files")
    if vault and vault.get("withdrawQueue") is not None:
        out.append("/withdrawals: no queue, but /ggAvax names one")
    return out


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


def compare_previous(old: Mapping[str, bytes], new: Mapping[str, bytes], *, max_price_move_pct: float,
                     max_staker_drop_pct: float) -> list[str]:
    """Change bounds against the previous run of the same network."""
    try:
        o, n = strict_loads(old["/status"]), strict_loads(new["/status"])
    except (KeyError, ValueError):
        return []
    if not isinstance(o, dict) or (o.get("network"), o.get("chainId")) != (n.get("network"), n.get("chainId")):
        return []
    out = []
    went_back = older_block(old["/status"], n["network"], n["chainId"], n["block"]["number"])
    if went_back:
        out.append(went_back)
    try:
        op, np_ = strict_loads(old["/prices"]), strict_loads(new["/prices"])
        for k in ("ggpInAvax", "avaxInUSD"):
            move = abs(np_[k] - op[k]) / op[k] * 100 if op[k] else 0
            if move > max_price_move_pct:
                out.append(f"{k} moved {move:.1f}% since the last run (bound {max_price_move_pct}%)")
        os_, ns = strict_loads(old["/metrics"])["staker_count"], strict_loads(new["/metrics"])["staker_count"]
        if os_ and (os_ - ns) / os_ * 100 > max_staker_drop_pct:
            out.append(f"staker count dropped from {os_} to {ns} (bound {max_staker_drop_pct}%)")
    except (KeyError, ValueError, TypeError, ZeroDivisionError):
        pass  # a previous run we cannot read bounds nothing
    return out + _queue_gone(old, new) + compare_accumulated(old, new)


def _queue_gone(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[str]:
    """A queue the last run published that this run would publish as noQueue (its requesters'
    files deleted): like a staker count that drops, refused unless forced."""
    try:
        was, now = strict_loads(old["/withdrawals"]), strict_loads(new["/withdrawals"])
        if was["status"] == "ok" and now["status"] != "ok":
            return [f"the withdrawal queue {was['address']} of the last run is gone: /withdrawals would be "
                    f"{now['status']} ({now['reason']})"]
    except (KeyError, ValueError, TypeError):
        pass  # a previous run we cannot read bounds nothing
    return []


# Files that accumulate across runs: path -> (list field, key field of an entry). A run may add
# entries and advance the newest one (today's point, a later block); an older entry may gain what
# it lacked (a field it did not have, a null filled: a day's share price rebuilt once), never
# lose or change a value it had.
ACCUMULATED = {"/prices/history": ("points", "date")}
# The way out of a history refusal: the last run there is another chain's (a devnet of another
# scenario, a rehearsal) or is meant to be replaced.
KEEP_OR_FORCE = ": keep that history by writing this run elsewhere (build --out DIR, publish --prefix P), or replace it with --force"


def compare_accumulated(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[str]:
    out = []
    for path, (field, key) in ACCUMULATED.items():
        if path not in old:
            continue
        try:
            before = strict_loads(old[path])[field]
            if not isinstance(before, list) or not all(isinstance(e, dict) and key in e for e in before):
                continue
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


def _history_problems(body: dict) -> list[str]:
    """A daily share price is of a block at or before the file's and no later than its day's end,
    and the days' blocks follow each other."""
    out, last = [], -1
    top = body["meta"]["block"]["number"]
    for p in body["points"]:
        block = p.get("ggavaxBlock")
        if block is None:
            continue
        day_end = int(datetime.strptime(p["date"], "%Y-%m-%d").replace(tzinfo=UTC).timestamp()) + 86_399
        if p.get("ggavaxExchangeRate") is None or not p["ggavaxExchangeRate"] > 0:
            out.append(f"/prices/history: {p['date']} has a share-price block but no positive share price")
        elif block > top or block < last or p["ggavaxTime"] > day_end:
            out.append(f"/prices/history: the share price of {p['date']} is of block {block}, outside its day "
                       f"(or after the file's block {top}, or before the previous day's)")
        last = block
    return out


def network_profile(files: dict[str, bytes], directory) -> Profile:
    """The profile of the network a built directory's /status names: its bounds judge the files."""
    from .config import NETWORKS, load_profile

    try:
        network = strict_loads(files["/status"]).get("network")
    except (KeyError, ValueError, AttributeError):
        raise PublisherError(f"{directory} is not a built directory (no readable status.json)") from None
    if network not in NETWORKS:
        raise PublisherError(f"{directory}: status.json names no known network ({network!r})")
    return load_profile(network)
