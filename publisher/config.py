"""Network profiles and their overrides: CLI flag > PUBLISHER_* environment > profile file > default.

Secrets (RPC URLs with keys, the validator API key) are taken from the environment or flags only
and are never printed unmasked.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from .errors import PublisherError

PROFILE_DIR = Path(__file__).with_name("profiles")
NETWORKS = ("devnet", "fuji", "mainnet")


@dataclass(frozen=True)
class Profile:
    name: str
    chain_id: int
    storage: str
    rpc_urls: tuple[str, ...] = ()
    multicall: str = "0xcA11bde05977b3631167028862bE2a173976CA11"
    avax_usd_feed: str | None = None
    dex_pair: str | None = None
    # Registry addresses we expect; a mismatch with the chain's Storage is reported as a warning.
    addresses: dict[str, str] = field(default_factory=dict)
    price_api_url: str | None = None
    price_divergence_pct: float = 5.0  # AVAX/USD: feed vs price API
    ggp_divergence_pct: float = 25.0  # GGP/USD: oracle TWAP x feed vs a spot quote
    oracle_max_age: int = 7 * 86_400  # a GGP/AVAX price older than this at the build block is refused
    validator_api_url: str | None = None
    validator_network: str = "mainnet"
    validator_api_key: str | None = None
    pchain_rpc_url: str | None = None
    feed_max_age: int = 86_400
    cadence_seconds: int = 300
    apy_window_days: int = 30
    history_from_block: int = 0
    history_days: int = 400  # how far back a history built from scratch reaches
    history_log_span: int = 2048  # blocks per eth_getLogs; halved when a node refuses a range
    source_timeout: float = 15.0  # seconds per request to a third-party HTTP API
    validator_default_rate_pct: float = 7.5
    # Change bounds against the previous run (publish refuses beyond them unless forced).
    max_price_move_pct: float = 50.0
    max_staker_drop_pct: float = 20.0
    flags: dict[str, bool] = field(default_factory=dict)
    # Where each address above comes from and when it was checked: {"storage": {"source": …, "checked": "YYYY-MM-DD"}}.
    sources: dict[str, dict[str, str]] = field(default_factory=dict)

    def with_overrides(self, **values) -> "Profile":
        known = {f.name for f in fields(self)}
        return replace(self, **{k: v for k, v in values.items() if k in known and v not in (None, ())})


_ENV = {
    "rpc_urls": ("PUBLISHER_RPC_URL", lambda v: tuple(u.strip() for u in v.split(",") if u.strip())),
    "storage": ("PUBLISHER_STORAGE", str),
    "price_api_url": ("PUBLISHER_PRICE_API_URL", str),
    "validator_api_url": ("PUBLISHER_VALIDATOR_API_URL", str),
    "validator_api_key": ("PUBLISHER_VALIDATOR_API_KEY", str),
    "pchain_rpc_url": ("PUBLISHER_PCHAIN_RPC_URL", str),
    "feed_max_age": ("PUBLISHER_FEED_MAX_AGE", int),
    "apy_window_days": ("PUBLISHER_APY_WINDOW_DAYS", int),
}


def load_profile(name: str, **cli) -> Profile:
    if name not in NETWORKS:
        raise PublisherError(f"unknown network {name!r}; choose one of {', '.join(NETWORKS)}")
    # PUBLISHER_PROFILE_DIR points at edited copies (rehearsals, tests); the shipped files stay untouched.
    data = json.loads((Path(os.environ.get("PUBLISHER_PROFILE_DIR") or PROFILE_DIR) / f"{name}.json").read_text())
    if data.get("validator_api_key"):
        raise PublisherError(f"profile {name} holds validator_api_key: secrets come only from PUBLISHER_VALIDATOR_API_KEY")
    data["rpc_urls"] = tuple(data.get("rpc_urls", ()))
    profile = Profile(name=name, **data)
    env = {}
    for key, (var, parse) in _ENV.items():
        if os.environ.get(var):
            try:
                env[key] = parse(os.environ[var])
            except ValueError:
                raise PublisherError(f"{var} is not valid") from None
    return profile.with_overrides(**env).with_overrides(**cli)
