"""The embedded devnet: anvil running our contracts, seeded with a deterministic scenario, and
local stand-ins for the third-party APIs (validators, P-Chain, prices) fed from the same scenario."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from ..chain.rpc import RpcClient
from .anvil import CHAIN_ID, GENESIS_TIME, Anvil
from .scenarios import Scenario, build
from .standins import Standins


@dataclass
class Devnet:
    url: str
    chain_id: int
    scenario: Scenario
    addresses: dict[str, str]
    seconds: float  # time taken to deploy and seed
    # Base URLs of the stand-ins: "validator_api" (Glacier), "pchain_rpc", "price_api" (CoinGecko).
    services: dict[str, str] = field(default_factory=dict)
    standins: Standins | None = None  # their fault switches


@contextmanager
def running(scenario: str = "demo", port: int | None = None) -> Iterator[Devnet]:
    """Start anvil, deploy, seed ``scenario``, start the stand-ins; stop everything on exit."""
    from .seed import deploy, seed

    sc = build(scenario)
    with Anvil(port) as node, Standins(sc) as standins:
        t0 = time.monotonic()
        client = RpcClient([node.url], max_attempts=2)
        addresses = deploy(client, GENESIS_TIME + 60)
        seed(client, addresses, sc)
        yield Devnet(node.url, CHAIN_ID, sc, addresses, time.monotonic() - t0, standins.services, standins)
