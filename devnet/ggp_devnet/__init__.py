"""The devnet: anvil running our contracts, seeded with a deterministic scenario, and local
stand-ins for the third-party APIs (validators, P-Chain, prices) fed from the same scenario.

A distribution of its own (ggp-devnet, beside the publisher): the runtime package and its image
never carry it. ``publisher build --scenario`` and ``publisher devnet`` start it when installed."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from publisher.chain.rpc import RpcClient
from publisher.config import Profile, load_profile

from . import images
from .anvil import CHAIN_ID, GENESIS_TIME, Anvil
from .net import Devnet
from .scenarios import build, resolve
from .standins import NETWORK, Standins

if TYPE_CHECKING:
    from .live import Live


def devnet_profile(profile: Profile, net: Devnet) -> Profile:
    """``profile`` reading ``net``: its node, the contracts where it deployed them, its stand-ins."""
    a, svc = net.addresses, net.services
    return profile.with_overrides(
        rpc_urls=(net.url,), storage=a["Storage"], avax_usd_feed=a["PriceFeed"], dex_pair=a["DexPair"],
        withdraw_queue=a.get("WithdrawQueue"), pst_avax=a.get("TokenpstAVAX"),
        addresses={k: a[k] for k in ("TokenGGP", "TokenggAVAX", "Staking", "MinipoolManager", "RewardsPool", "ClaimNodeOp", "ProtocolDAO", "Oracle")},
        validator_api_url=svc.get("validator_api"), pchain_rpc_url=svc.get("pchain_rpc"), price_api_url=svc.get("price_api"),
    )


@contextmanager
def running(scenario: str = "demo", port: int | None = None, *, as_network: str | None = None,
            stakers: int | None = None, minipools: int | None = None, keep_states: int | None = None,
            ggp_quote: str = "oracle", fresh: bool = False) -> Iterator[Devnet]:
    """Start anvil, deploy, seed ``scenario`` (resized to ``stakers``/``minipools`` when given, see
    scenarios.resolve), start the stand-ins; stop everything on exit.

    ``as_network`` ("mainnet", "fuji") rehearses that network: its chain id, the contracts at its
    shipped profile's addresses, the stand-ins answering at its request paths (rehearsal.py).
    ``keep_states``: a node that keeps the state of only that many latest blocks, as a pruned
    (non-archive) node does; the chain is the same. ``ggp_quote``: what the price stand-in quotes
    for GGP, the Oracle's price or the market's (standins.Standins.ggp_quote).

    A wound-down scenario (``scenario.wind_down``) is seeded up to the end of its operations, then
    played through its wind-down by the live operator (live.play_wind_down).

    With ``GGP_DEVNET_IMAGES`` set (images.py), the node starts from the chain seeded once there;
    ``fresh`` seeds it all the same (as for a pruned node, or a chain too large for an image)."""
    name, _, shape = resolve(scenario, stakers, minipools)
    where = None if fresh or keep_states is not None or shape.stakers > images.MOST_STAKERS else images.directory()
    if where is None:
        with _seeded(scenario, port, as_network, stakers, minipools, keep_states, ggp_quote) as net:
            yield net
        return
    t0 = time.monotonic()

    def seed(state: Path) -> images.Image:
        with _seeded(scenario, None, as_network, stakers, minipools, None, ggp_quote, dump_to=state) as net:
            assert net.standins is not None
            return images.Image(state, net.scenario, net.addresses, net.chain_id, net.standins.network)

    image = images.kept(where, f"{name}-{as_network or 'devnet'}", seed)
    with Anvil(port, chain_id=image.chain_id, load_from=image.state) as node, \
            Standins(image.scenario, network=image.network, ggp_quote=ggp_quote) as standins:
        images.wake(RpcClient([node.url], max_attempts=2))
        yield Devnet(node.url, image.chain_id, image.scenario, image.addresses, time.monotonic() - t0,
                     standins.services, standins, as_network or "devnet")


@contextmanager
def _seeded(scenario: str, port: int | None, as_network: str | None, stakers: int | None, minipools: int | None,
            keep_states: int | None, ggp_quote: str, dump_to: Path | None = None) -> Iterator[Devnet]:
    from .seed import deploy, seed

    t0 = time.monotonic()
    sc = build(scenario, stakers, minipools)
    profile = None
    if as_network:
        profile = load_profile(as_network)
    chain_id = profile.chain_id if profile else CHAIN_ID
    network = profile.validator_network if profile else NETWORK
    with Anvil(port, chain_id=chain_id, keep_states=keep_states, dump_to=dump_to) as node, \
            Standins(sc, network=network, ggp_quote=ggp_quote) as standins:
        client = RpcClient([node.url], max_attempts=2)
        if profile:
            from . import rehearsal

            addresses = rehearsal.install(client, profile, GENESIS_TIME + 60)
        else:
            addresses = deploy(client, GENESIS_TIME + 60)
        seed(client, addresses, sc)
        net = Devnet(node.url, chain_id, sc, addresses, 0.0, standins.services, standins, as_network or "devnet")
        if sc.wind_down:
            from .live import play_wind_down

            play_wind_down(net)
        if profile:
            rehearsal.fresh_feed(client, addresses, sc)
        net.seconds = time.monotonic() - t0
        yield net


@contextmanager
def running_live(seed: int = 1, *, wind_down_at: int | None = None,
                 zero_reward_odds: float | None = None) -> Iterator[tuple[Devnet, Live]]:
    """The demo devnet with a ``live.Live`` driver for it (ending operations at ``wind_down_at``;
    ``zero_reward_odds``: the odds that a validation ends unrewarded, the driver's own by default)."""
    from .live import ZERO_REWARD_ODDS, Live

    with running("demo") as net:
        odds = ZERO_REWARD_ODDS if zero_reward_odds is None else zero_reward_odds
        yield net, Live(net, seed=seed, wind_down_at=wind_down_at, zero_reward_odds=odds)

