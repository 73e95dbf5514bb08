"""The embedded devnet: anvil running our contracts, seeded with a deterministic scenario."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from ..chain.rpc import RpcClient
from .anvil import CHAIN_ID, GENESIS_TIME, Anvil
from .scenarios import Scenario, build


@dataclass
class Devnet:
    url: str
    chain_id: int
    scenario: Scenario
    addresses: dict[str, str]
    seconds: float  # time taken to deploy and seed


@contextmanager
def running(scenario: str = "demo", port: int | None = None) -> Iterator[Devnet]:
    """Start anvil, deploy, seed ``scenario``; stop everything on exit."""
    from .seed import deploy, seed

    sc = build(scenario)
    with Anvil(port) as node:
        t0 = time.monotonic()
        client = RpcClient([node.url], max_attempts=2)
        addresses = deploy(client, GENESIS_TIME + 60)
        seed(client, addresses, sc)
        yield Devnet(node.url, CHAIN_ID, sc, addresses, time.monotonic() - t0)
