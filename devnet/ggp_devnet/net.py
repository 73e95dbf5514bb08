"""A running devnet as its users see it: its node, scenario, contracts and stand-ins (a module of
its own so that the parts the devnet runs can name it without importing the devnet back)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .scenarios import Scenario
from .standins import Standins


@dataclass
class Devnet:
    url: str
    chain_id: int
    scenario: Scenario
    addresses: dict[str, str]
    seconds: float  # time taken to generate the scenario, deploy and seed
    # Base URLs of the stand-ins: "validator_api" (Glacier), "pchain_rpc", "price_api" (CoinGecko).
    services: dict[str, str] = field(default_factory=dict)
    standins: Standins | None = None  # their fault switches
    network: str = "devnet"  # the profile this chain rehearses ("devnet": the plain devnet)
