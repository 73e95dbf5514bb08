"""Off-chain and event-derived data added to the chain snapshot: USD and DEX prices (prices.py),
validator records (validators.py), daily price history (history.py; the exact fields of its
published file, which a run resumes from, in history_file.py), over one HTTP helper (http.py).
"""
from __future__ import annotations

from ..config import Profile
from .http import HttpClient, HttpCounters
from .validators import Glacier, PChain


def price_api(profile: Profile, counters: HttpCounters) -> HttpClient | None:
    if not profile.price_api_url:
        return None
    return HttpClient("price API", profile.price_api_url, timeout=profile.source_timeout, counters=counters)


def glacier(profile: Profile, counters: HttpCounters) -> Glacier | None:
    if not profile.validator_api_url:
        return None
    headers = {"x-glacier-api-key": profile.validator_api_key} if profile.validator_api_key else {}
    http = HttpClient("validator API", profile.validator_api_url, headers=headers, timeout=profile.source_timeout, counters=counters)
    return Glacier(http, profile.validator_network)


def pchain(profile: Profile, counters: HttpCounters) -> PChain | None:
    if not profile.pchain_rpc_url:
        return None
    return PChain(HttpClient("P-Chain RPC", profile.pchain_rpc_url, timeout=profile.source_timeout, counters=counters))
