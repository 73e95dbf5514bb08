"""The HTTP clients for the third-party APIs a profile configures (None where it configures none)."""
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
