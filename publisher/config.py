"""Network profiles and their overrides: CLI flag > PUBLISHER_* environment > profile file > default.

A profile file is checked against the `Profile` fields: an unknown key or a value of the wrong type
fails naming the key and the file. Secrets (RPC URLs with keys, the validator API key) are taken
from the environment or flags only and are never printed unmasked.
"""
from __future__ import annotations

import calendar
import json
import os
import re
import time
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import PublisherError

PROFILE_DIR = Path(__file__).with_name("profiles")
NETWORKS = ("devnet", "fuji", "mainnet")


def _min(value: float) -> dict:
    return {"min": value}


DAY = 86_400
# The dates a profile may announce, each with the moment of its day it stands for: "start" is 00:00
# UTC of the date, "end" is 24:00 UTC (00:00 UTC of the next day, the first second after it). The
# window's end is its day's start: the site shuts down that day at an hour not announced, and a
# holder told the earliest moment it may go loses nothing by acting in time.
ANNOUNCED = {"endOfOperations": "start", "withdrawalWindowEnd": "start"}
_ANNOUNCEMENT_FIELDS = ("date", "meaning", "source")


@dataclass(frozen=True)
class Announcement:
    """A date the protocol's operator announced, which no contract holds: its key (ANNOUNCED), the
    date (YYYY-MM-DD, UTC), what it means and where it was announced."""
    key: str
    date: str
    meaning: str
    source: str

    @property
    def time(self) -> int:
        """Unix seconds of the moment the date stands for (ANNOUNCED: its day's start or end)."""
        start = calendar.timegm(time.strptime(self.date, "%Y-%m-%d"))
        return start + (DAY if ANNOUNCED[self.key] == "end" else 0)


def _check_announcements(value: dict[str, dict[str, str]], where: str) -> None:
    """Every announcement a known key with a calendar date, a meaning and a source, or a
    PublisherError naming the key (``where`` names the file)."""
    for key, entry in value.items():
        at = f"{where}.{key}"
        if key not in ANNOUNCED:
            raise PublisherError(f"{at}: unknown announcement; choose one of {', '.join(ANNOUNCED)}")
        unknown = sorted(set(entry) - set(_ANNOUNCEMENT_FIELDS))
        if unknown:
            raise PublisherError(f"{at}: unknown key {unknown[0]!r}")
        for name in _ANNOUNCEMENT_FIELDS:
            if not entry.get(name, "").strip():
                raise PublisherError(f"{at}: missing {name!r}")
        date = entry["date"]
        try:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
                raise ValueError
            time.strptime(date, "%Y-%m-%d")
        except ValueError:
            raise PublisherError(f"{at}.date must be a calendar date YYYY-MM-DD (UTC), not {date!r}") from None


@dataclass(frozen=True)
class Profile:
    name: str
    chain_id: int = field(metadata=_min(1))
    storage: str
    rpc_urls: tuple[str, ...] = ()
    multicall: str = "0xcA11bde05977b3631167028862bE2a173976CA11"
    avax_usd_feed: str | None = None
    dex_pair: str | None = None
    # The ggAVAX (stAVAX) exit path: the WithdrawQueue proxy and the pstAVAX token proxy. Neither is
    # in the Storage registry (the queue is known to ggAVAX by role only), so the profile names them.
    withdraw_queue: str | None = None
    pst_avax: str | None = None
    # Registry addresses we expect; a mismatch with the chain's Storage is reported as a warning.
    addresses: dict[str, str] = field(default_factory=dict)
    price_api_url: str | None = None
    price_divergence_pct: float = field(default=5.0, metadata=_min(0))  # AVAX/USD: feed vs price API
    ggp_divergence_pct: float = field(default=25.0, metadata=_min(0))  # GGP/USD: oracle TWAP x feed vs a spot quote
    # An older Oracle GGP/AVAX price is still published, labelled stale (/prices stale, a /status
    # warning): it is the price the contracts use. Only the AVAX/USD feed's age (feed_max_age) refuses.
    oracle_max_age: int = field(default=7 * 86_400, metadata=_min(1))
    validator_api_url: str | None = None
    validator_network: str = "mainnet"
    validator_api_key: str | None = None
    pchain_rpc_url: str | None = None
    feed_max_age: int = field(default=86_400, metadata=_min(1))
    # The publish interval: /status.nextUpdateBy, the data max-age, the workflow's cron and the
    # stack's edge TTL all follow the mainnet profile's value (a test keeps them in step).
    cadence_seconds: int = field(default=300, metadata=_min(60))
    apy_window_days: int = field(default=30, metadata=_min(1))
    history_from_block: int = field(default=0, metadata=_min(0))
    history_days: int = field(default=400, metadata=_min(1))  # how far back a history built from scratch reaches
    history_log_span: int = field(default=2048, metadata=_min(1))  # blocks per eth_getLogs; halved when refused
    # The withdraw queue's logs (the depositor's calls, the line's front) are read from this block on
    # the first time; later runs resume from the previous /withdrawals. 0: from genesis (the queue's
    # deployment block is not recorded anywhere we could verify).
    queue_from_block: int = field(default=0, metadata=_min(0))
    # Requests waiting in line longer than this with no call of the depositor on record (a log of
    # depositFromStaking; counted from the later of its last call and the moment the line last
    # stopped being empty) label it stale on /withdrawals.
    depositor_max_age: int = field(default=2 * 86_400, metadata=_min(1))
    source_timeout: float = field(default=15.0, metadata=_min(0.1))  # seconds per request to a third-party API
    validator_default_rate_pct: float = field(default=7.5, metadata=_min(0))
    # Change bounds against the previous run (publish refuses beyond them unless forced).
    max_price_move_pct: float = field(default=50.0, metadata=_min(0))
    max_staker_drop_pct: float = field(default=20.0, metadata=_min(0))
    flags: dict[str, bool] = field(default_factory=dict)
    # Where each address above comes from and when it was checked: {"storage": {"source": …, "checked": "YYYY-MM-DD"}}.
    sources: dict[str, dict[str, str]] = field(default_factory=dict)
    # Dates the protocol's operator announced, which no contract holds; /status and the dashboard
    # publish them with the days left. {"endOfOperations" | "withdrawalWindowEnd": {"date":
    # "YYYY-MM-DD" (UTC), "meaning": one sentence, "source": where it was announced}}. Each date
    # stands for one moment (ANNOUNCED): endOfOperations the start of its day (00:00 UTC, when
    # operations had ended), withdrawalWindowEnd the start of its day too (00:00 UTC, the earliest
    # the site may shut down that day).
    announcements: dict[str, dict[str, str]] = field(default_factory=dict, metadata={"check": _check_announcements})

    def with_overrides(self, **values) -> Profile:
        known = {f.name for f in fields(self)}
        unknown = set(values) - known
        if unknown:
            raise TypeError(f"Profile has no field {sorted(unknown)[0]!r}")
        return replace(self, **{k: v for k, v in values.items() if v not in (None, ())})

    def announced(self) -> tuple[Announcement, ...]:
        """The announcements, in time order."""
        dates = (Announcement(key, e["date"], e["meaning"], e["source"]) for key, e in self.announcements.items())
        return tuple(sorted(dates, key=lambda a: (a.time, a.key)))


@dataclass(frozen=True)
class EnvVar:
    """One PUBLISHER_* variable: the Profile field it overrides (None for tool settings), whether it
    may carry a secret, and what it is for. docs/operating.md's table is generated from ENV_VARS."""
    name: str
    field: str | None
    help: str
    secret: bool = False


ENV_VARS = (
    EnvVar("PUBLISHER_RPC_URL", "rpc_urls", "C-Chain RPC URL(s), comma-separated fallbacks; `--rpc-url` wins", secret=True),
    EnvVar("PUBLISHER_STORAGE", "storage", "address of the protocol's Storage registry"),
    EnvVar("PUBLISHER_PRICE_API_URL", "price_api_url", "CoinGecko-style price API for the USD cross-check"),
    EnvVar("PUBLISHER_VALIDATOR_API_URL", "validator_api_url", "Glacier-style validator API"),
    EnvVar("PUBLISHER_VALIDATOR_API_KEY", "validator_api_key", "key sent to the validator API (never in a profile file)", secret=True),
    EnvVar("PUBLISHER_PCHAIN_RPC_URL", "pchain_rpc_url", "P-Chain JSON-RPC, the validator API's fallback", secret=True),
    EnvVar("PUBLISHER_FEED_MAX_AGE", "feed_max_age", "oldest AVAX/USD feed answer accepted, seconds"),
    EnvVar("PUBLISHER_APY_WINDOW_DAYS", "apy_window_days", "ggAVAX APY look-back window, days"),
    EnvVar("PUBLISHER_RUN_DEADLINE", None, "seconds a whole build, snapshot or publish may take (default 240; 0: none)"),
    EnvVar("PUBLISHER_PROFILE_DIR", None, "folder of profile files to use instead of the shipped `publisher/profiles/`"),
    EnvVar("PUBLISHER_ANVIL", None, "anvil binary for the devnet (default: the pinned one under node_modules)"),
)
_SECRET_FIELDS = {"validator_api_key"}  # never accepted from a profile file


def env_table() -> str:
    """The Markdown table of ENV_VARS that docs/operating.md carries (tests fail when it drifts)."""
    rows = ["| variable | overrides | secret | what it is |", "|---|---|---|---|"]
    for var in ENV_VARS:
        target = f"`{var.field}`" if var.field else "—"
        rows.append(f"| `{var.name}` | {target} | {'yes' if var.secret else 'no'} | {var.help} |")
    return "\n".join(rows) + "\n"


def _type_hints() -> dict[str, Any]:
    return typing.get_type_hints(Profile)


def _conform(value: Any, hint: Any, where: str) -> Any:
    """``value`` as the type ``hint`` (JSON lists become tuples), or a PublisherError naming ``where``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return _conform(value, option, where)
            except PublisherError:
                continue
    else:
        got = _fit(value, hint, origin, args, where)
        if got is not _MISFIT:
            return got
    raise PublisherError(f"{where} must be {_name(hint)}, not {_json_type(value)}")


_MISFIT = object()  # what _fit returns for a value that is not of the type


def _fit(value: Any, hint: Any, origin: Any, args: tuple, where: str) -> Any:
    """``value`` as the type ``hint`` (no union), or ``_MISFIT``."""
    if hint is type(None):
        return None if value is None else _MISFIT
    if origin is tuple:
        return tuple(_conform(v, args[0], f"{where}[{i}]") for i, v in enumerate(value)) if isinstance(value, (list, tuple)) else _MISFIT
    if origin is dict:
        return {_conform(k, args[0], where): _conform(v, args[1], f"{where}.{k}") for k, v in value.items()} if isinstance(value, dict) else _MISFIT
    if hint is Any:
        return value
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is float:
        return float(value) if number else _MISFIT
    if hint is int:
        return value if number and isinstance(value, int) else _MISFIT
    return value if isinstance(value, hint) else _MISFIT


def _name(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_name(a) for a in args)
    if origin is tuple:
        return f"a list of {_name(args[0])}"
    if origin is dict:
        return f"an object of {_name(args[1])}"
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false",
            type(None): "null"}.get(hint, getattr(hint, "__name__", str(hint)))


def _json_type(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def profile_from(data: Any, name: str, source: str) -> Profile:
    """A Profile from a parsed profile file, every key known and every value of its field's type."""
    if not isinstance(data, dict):
        raise PublisherError(f"profile {source} must hold a JSON object")
    hints = _type_hints()
    meta = {f.name: f.metadata for f in fields(Profile)}
    values = {}
    for key, value in data.items():
        if key == "name" or key not in hints:
            raise PublisherError(f"profile {source}: unknown key {key!r}")
        if key in _SECRET_FIELDS and value:
            var = next(v.name for v in ENV_VARS if v.field == key)
            raise PublisherError(f"profile {source} holds {key}: secrets come only from {var}")
        values[key] = _conform(value, hints[key], f"profile {source}: {key}")
        low = meta[key].get("min")
        if low is not None and values[key] < low:
            raise PublisherError(f"profile {source}: {key} must be at least {low}")
        check = meta[key].get("check")
        if check is not None:
            check(values[key], f"profile {source}: {key}")
    missing = [f.name for f in fields(Profile) if f.name != "name" and f.name not in values
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise PublisherError(f"profile {source}: missing key {missing[0]!r}")
    return Profile(name=name, **values)


def _from_env(environ: typing.Mapping[str, str]) -> dict[str, Any]:
    hints = _type_hints()
    values: dict[str, Any] = {}
    for var in ENV_VARS:
        raw = environ.get(var.name)
        if var.field is None or not raw:
            continue
        hint = hints[var.field]
        parse: Callable[[str], Any]
        if typing.get_origin(hint) is tuple:
            parse = lambda v: tuple(u.strip() for u in v.split(",") if u.strip())  # noqa: E731
        elif hint is int:
            parse = int
        elif hint is float:
            parse = float
        else:
            parse = str
        try:
            values[var.field] = parse(raw)
        except ValueError:
            raise PublisherError(f"{var.name} must be {_name(hint)}") from None
    return values


def load_profile(name: str, **cli) -> Profile:
    if name not in NETWORKS:
        raise PublisherError(f"unknown network {name!r}; choose one of {', '.join(NETWORKS)}")
    # PUBLISHER_PROFILE_DIR points at edited copies (rehearsals, tests); the shipped files stay untouched.
    path = Path(os.environ.get("PUBLISHER_PROFILE_DIR") or PROFILE_DIR) / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PublisherError(f"cannot read profile {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise PublisherError(f"profile {path} is not valid JSON: {exc}") from None
    profile = profile_from(data, name, str(path))
    return profile.with_overrides(**_from_env(os.environ)).with_overrides(**cli)
