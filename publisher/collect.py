"""Stage one: sources -> Snapshot. Opens the network (a given RPC, the profile's RPCs, or a
throwaway devnet), reads the chain at one block and prints nothing itself."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from .chain.reader import Reader
from .chain.rpc import Counters, RpcClient
from .config import Profile, load_profile
from .errors import PublisherError
from .progress import Progress
from .snapshot import Snapshot


@dataclass
class Collected:
    snapshot: Snapshot
    counters: Counters
    seconds: float


@contextmanager
def open_network(network: str = "devnet", rpc_url: str | None = None, scenario: str = "demo") -> Iterator[Profile]:
    """The profile to read, with a throwaway devnet when asked for devnet without an RPC URL."""
    overrides = {"rpc_urls": tuple(u for u in (rpc_url or "").split(",") if u)}
    profile = load_profile(network, **overrides)
    if profile.rpc_urls:
        yield profile
        return
    if network != "devnet":
        raise PublisherError(f"no RPC URL for {network}: pass --rpc-url or set PUBLISHER_RPC_URL")
    from .devnet import running

    with running(scenario) as net:
        yield devnet_profile(profile, net)


def devnet_profile(profile: Profile, net) -> Profile:
    a = net.addresses
    return profile.with_overrides(
        rpc_urls=(net.url,), storage=a["Storage"], avax_usd_feed=a["PriceFeed"], dex_pair=a["DexPair"],
        addresses={k: a[k] for k in ("TokenGGP", "TokenggAVAX", "Staking", "MinipoolManager", "RewardsPool", "ClaimNodeOp", "ProtocolDAO", "Oracle")},
    )


def collect(profile: Profile, block: int | None = None, progress: Progress | None = None) -> Collected:
    client = RpcClient(list(profile.rpc_urls))
    t0 = time.monotonic()
    snap = Reader(client, profile, progress).read(block)
    return Collected(snap, client.counters, time.monotonic() - t0)
