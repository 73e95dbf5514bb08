"""Validator records for the protocol's active minipools: Avalanche's Glacier REST API first, the
P-Chain ``platform.getCurrentValidators`` JSON-RPC as the fallback.

Both answer in their own documented shapes; parsing is strict (nAVAX strings become exact ints,
anything else is a malformed body, reported in one line). A source that is down lets the next one
try; a source that answers garbage or pages forever stops the run, because working around it would
hide a changed API.
"""
from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeVar

from ..compute.nodeid import node_id
from ..errors import PublisherError
from ..protocol import ACTIVE_STATUSES
from ..snapshot import LAST_TIME, Minipool, Validator
from .http import HttpClient, SourceUnavailable, one_line

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")

GROUP = 25  # node IDs per request: keeps URLs around 1 KB
WORKERS = 4  # groups in flight at once: a few seconds fewer per run without hammering the provider
PAGE_SIZE = 100  # Glacier's maximum
MAX_PAGES = 20  # per group; 25 nodes fit one page, so more means the provider is looping
_NAVAX = re.compile(r"^[0-9]{1,30}$")
_PERCENT = re.compile(r"^[0-9]{1,3}(\.[0-9]{1,18})?$")


@dataclass(frozen=True)
class ValidatorData:
    validators: tuple[Validator, ...]
    missing: tuple[str, ...]  # asked for, not listed
    source: str | None
    where: str = ""  # the source, as its warnings name it


def report_missing(data: ValidatorData, ended: frozenset[str], warnings: list[str]) -> tuple[str, ...]:
    """The nodes the provider should list and does not, warned about: those ``missing`` but for the
    ones whose validation period has ended (``ended``), which no provider lists any more."""
    missing = tuple(n for n in data.missing if n not in ended)
    if missing:
        shown = ", ".join(missing[:10]) + (", …" if len(missing) > 10 else "")
        warnings.append(f"{data.where} has no record of {len(missing)} active minipool(s): {shown}")
        log.warning(warnings[-1])
    return missing


def active_node_ids(minipools: tuple[Minipool, ...]) -> list[str]:
    return sorted({node_id(m.node_id) for m in minipools if m.status in ACTIVE_STATUSES})


def fetch(node_ids: list[str], glacier: Glacier | None, pchain: PChain | None, warnings: list[str]) -> ValidatorData:
    """Records for ``node_ids`` from the first source that is up, and the nodes it lacks
    (``report_missing`` tells which of them it should list)."""
    sources = [s for s in (glacier, pchain) if s is not None]
    if not sources:
        warnings.append("no validator API or P-Chain RPC configured: validator data unavailable")
        return ValidatorData((), (), None)
    failures = []
    for src in sources:
        try:
            found = src.fetch(node_ids)
        except SourceUnavailable as exc:
            failures.append(str(exc))
            continue
        for f in failures:
            warnings.append(f"{f}: using {src.http.where()} instead")
            log.warning(warnings[-1])
        missing = tuple(n for n in node_ids if n not in found)
        return ValidatorData(tuple(found[n] for n in sorted(found)), missing, src.name, src.http.where())
    raise PublisherError("validator data unavailable: " + "; ".join(failures))


# -- Glacier ----------------------------------------------------------------------------------------


def _by_node(node_ids: list[str], query) -> dict[str, Validator]:
    """Records of the wanted nodes, queried in groups (short URLs and bodies); when a provider
    lists a node twice, the validation that started last is the current one.

    The first group goes alone: a source that is down or refusing fails there, after one
    request's retries, as it would sequentially. The others then go WORKERS at a time."""
    groups = [node_ids[i : i + GROUP] for i in range(0, len(node_ids), GROUP)]
    answers = [query(groups[0]), *_pooled(query, groups[1:])] if groups else []
    wanted = set(node_ids)
    found: dict[str, Validator] = {}
    for answer in answers:
        for v in answer:
            if v.node_id in wanted and (v.node_id not in found or v.start_timestamp > found[v.node_id].start_timestamp):
                found[v.node_id] = v
    return found


def _pooled(work: Callable[[T], R], items: list[T]) -> list[R]:
    """``work(item)`` for every item on up to WORKERS threads, results in item order. After a
    failure no further item starts; once the started ones have ended, the first failure in item
    order is raised, so the outcome does not depend on timing. Daemon threads: a run that ends
    at its deadline (raised here, in the main thread) does not wait for them."""
    results: list = [None] * len(items)
    failures: dict[int, BaseException] = {}
    queue = iter(range(len(items)))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                i = next(queue, None) if not failures else None
            if i is None:
                return
            try:
                results[i] = work(items[i])
            except BaseException as exc:  # handed to the caller below
                with lock:
                    failures[i] = exc

    threads = [threading.Thread(target=worker, name="validator-api", daemon=True) for _ in range(min(WORKERS, len(items)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[min(failures)]
    return results


@dataclass
class Glacier:
    http: HttpClient
    network: str
    name: str = "glacier"

    def fetch(self, node_ids: list[str]) -> dict[str, Validator]:
        return _by_node(node_ids, self._group)

    def _group(self, ids: list[str]) -> list[Validator]:
        path = f"/v1/networks/{self.network}/validators"
        params = {"validationStatus": "active", "nodeIds": ",".join(ids), "pageSize": str(PAGE_SIZE)}
        out: list[Validator] = []
        seen_tokens: set[str] = set()
        for _ in range(MAX_PAGES):
            body = self.http.get_json(path, params)
            if not isinstance(body, dict) or not isinstance(body.get("validators"), list):
                raise self.http.malformed(path, "expected an object with a 'validators' list")
            page = body["validators"]
            if len(page) > PAGE_SIZE:
                raise self.http.malformed(path, f"a page holds {len(page)} records, more than pageSize {PAGE_SIZE}")
            out += [self._parse(path, i, rec) for i, rec in enumerate(page)]
            token = body.get("nextPageToken")
            if token in (None, ""):
                return out
            if not isinstance(token, str) or len(token) > 4096:
                raise self.http.malformed(path, "nextPageToken is not a short string")
            if token in seen_tokens:
                raise PublisherError(f"{self.http.where(path)} repeats a nextPageToken: pagination loops")
            seen_tokens.add(token)
            params = {**params, "pageToken": token}
        raise PublisherError(f"{self.http.where(path)} still had a nextPageToken after {MAX_PAGES} pages for {len(ids)} node IDs: pagination does not end")

    def _parse(self, path: str, i: int, rec) -> Validator:
        p = _Fields(self.http, path, f"validators[{i}]", rec)
        rewards = _Fields(self.http, path, f"validators[{i}].potentialRewards", p.obj("potentialRewards"))
        return Validator(
            node_id=p.node_id("nodeId"),
            tx_hash=p.text("txHash"),
            start_timestamp=p.time(p.integer("startTimestamp"), "startTimestamp"),
            end_timestamp=p.time(p.integer("endTimestamp"), "endTimestamp"),
            amount_staked=p.navax("amountStaked"),
            amount_delegated=p.maybe_navax("amountDelegated") or 0,
            delegation_fee_pct=p.percent_text("delegationFee"),
            delegator_count=p.maybe_integer("delegatorCount") or 0,
            uptime_pct=p.percent_number("uptimePerformance"),
            validation_reward=rewards.navax("validationRewardAmount"),
            delegation_reward=rewards.maybe_navax("delegationRewardAmount") or 0,
            avalanchego_version=p.maybe_text("avalancheGoVersion"),
            source=self.name,
        )


# -- P-Chain ----------------------------------------------------------------------------------------


@dataclass
class PChain:
    """``platform.getCurrentValidators``. It reports no potential delegation-fee reward, so
    ``delegation_reward`` is 0 and ``avalanchego_version`` None in its records."""

    http: HttpClient
    name: str = "pchain"

    def fetch(self, node_ids: list[str]) -> dict[str, Validator]:
        return _by_node(node_ids, self._group)

    def _group(self, ids: list[str]) -> list[Validator]:
        body = self.http.post_json("", {"jsonrpc": "2.0", "id": 1, "method": "platform.getCurrentValidators", "params": {"nodeIDs": ids}})
        if isinstance(body, dict) and body.get("error") is not None:
            err = body["error"] if isinstance(body["error"], dict) else {}
            raise SourceUnavailable(f"{self.http.where()} failed: {one_line(err.get('message', 'JSON-RPC error'))}")
        result = body.get("result") if isinstance(body, dict) else None
        if not isinstance(result, dict) or not isinstance(result.get("validators"), list):
            raise self.http.malformed("", "expected result.validators to be a list")
        if len(result["validators"]) > len(ids):
            raise self.http.malformed("", f"{len(result['validators'])} records for {len(ids)} node IDs")
        return [self._parse(i, rec) for i, rec in enumerate(result["validators"])]

    def _parse(self, i: int, rec) -> Validator:
        p = _Fields(self.http, "", f"result.validators[{i}]", rec)
        stake = p.navax("weight") if isinstance(rec, dict) and "weight" in rec else p.navax("stakeAmount")
        uptime = p.maybe_percent_text("uptime")
        return Validator(
            node_id=p.node_id("nodeID"),
            tx_hash=p.text("txID"),
            start_timestamp=p.time(p.navax("startTime"), "startTime"),
            end_timestamp=p.time(p.navax("endTime"), "endTime"),
            amount_staked=stake,
            amount_delegated=p.maybe_navax("delegatorWeight") or 0,
            delegation_fee_pct=p.percent_text("delegationFee"),
            delegator_count=p.maybe_navax("delegatorCount") or 0,
            uptime_pct=uptime,
            validation_reward=p.navax("potentialReward"),
            delegation_reward=0,
            avalanchego_version=None,
            source=self.name,
        )


# -- strict field access ----------------------------------------------------------------------------


class _Fields:
    """Typed reads of one JSON object; any mismatch is a one-line malformed-body error."""

    def __init__(self, http: HttpClient, path: str, where: str, rec):
        self.http, self.path, self.where = http, path, where
        if not isinstance(rec, dict):
            raise self._bad("", "is not an object")
        self.rec = rec

    def _bad(self, key: str, what: str):
        return self.http.malformed(self.path, f"{self.where}{'.' + key if key else ''} {what}")

    def _get(self, key: str, optional: bool):
        value = self.rec.get(key)
        if value is None and not optional:
            raise self._bad(key, "is missing")
        return value

    def obj(self, key: str) -> dict:
        value = self._get(key, False)
        if not isinstance(value, dict):
            raise self._bad(key, "is not an object")
        return value

    def text(self, key: str) -> str:
        value = self.maybe_text(key, optional=False)
        assert value is not None  # a missing key raised above
        return value

    def maybe_text(self, key: str, optional: bool = True) -> str | None:
        value = self._get(key, optional)
        if value is None:
            return None
        if not isinstance(value, str) or not 0 < len(value) <= 200:
            raise self._bad(key, "is not a short string")
        return value

    def node_id(self, key: str) -> str:
        value = self.text(key)
        if not value.startswith("NodeID-"):
            raise self._bad(key, "is not a NodeID")
        return value

    def navax(self, key: str) -> int:
        value = self.maybe_navax(key, optional=False)
        assert value is not None  # a missing key raised above
        return value

    def maybe_navax(self, key: str, optional: bool = True) -> int | None:
        """A decimal string of an integer (nAVAX amounts, and the P-Chain's numbers)."""
        value = self._get(key, optional)
        if value is None:
            return None
        if not isinstance(value, str) or not _NAVAX.match(value):
            raise self._bad(key, "is not an integer string")
        return int(value)

    def time(self, value: int, key: str) -> int:
        """A unix time a date can show (through year 9999)."""
        if value > LAST_TIME:
            raise self._bad(key, "is past year 9999")
        return value

    def integer(self, key: str) -> int:
        value = self.maybe_integer(key, optional=False)
        assert value is not None  # a missing key raised above
        return value

    def maybe_integer(self, key: str, optional: bool = True) -> int | None:
        value = self._get(key, optional)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise self._bad(key, "is not a non-negative integer")
        return value

    def percent_text(self, key: str) -> str:
        value = self.maybe_percent_text(key, optional=False)
        assert value is not None  # a missing key raised above
        return value

    def maybe_percent_text(self, key: str, optional: bool = True) -> str | None:
        value = self._get(key, optional)
        if value is None:
            return None
        if not isinstance(value, str) or not _PERCENT.match(value) or Decimal(value) > 100:
            raise self._bad(key, "is not a percent string")
        return value

    def percent_number(self, key: str) -> str | None:
        value = self._get(key, True)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)) or not 0 <= value <= 100:
            raise self._bad(key, "is not a percent number")
        return str(value)
