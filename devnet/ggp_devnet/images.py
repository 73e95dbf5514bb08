"""Seeded chains kept on disk: a scenario seeded once, any number of nodes started from it.

Seeding replays months of a scenario block by block (the wound-down one takes some ten seconds of
two cores). Anvil can write out the whole chain it holds (blocks, receipts and the state at every
block, so reads at past blocks answer as on the seeded node) and start from that file in a fraction
of that. When ``GGP_DEVNET_IMAGES`` names a directory, ``running`` keeps an image of each chain it
seeds there: the first process to ask for a chain seeds it on a node that writes the file as it
stops, and every process (others wait on a lock meanwhile) starts its node from the file. The node
started is the seeded chain block for block, to the head's hash; what a node is told rather than
holds (its clock, its impersonation setting) is set again as it starts.
"""
from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from publisher.chain.rpc import RpcClient
from publisher.errors import PublisherError

from .scenarios import Scenario

ENV = "GGP_DEVNET_IMAGES"
# An image holds the state at every block, which grows with the stakers times the blocks: at a
# thousand stakers 150 MB that load in 1.9 s against 7 s of seeding; `scale` would take gigabytes.
# Larger chains are seeded every time.
MOST_STAKERS = 500


def directory() -> Path | None:
    """Where images are kept, or None (then every devnet is seeded)."""
    value = os.environ.get(ENV, "")
    return Path(value) if value else None


@dataclass(frozen=True)
class Image:
    """A seeded chain: anvil's file of it, and what the seeding knew of it."""

    state: Path
    scenario: Scenario
    addresses: dict[str, str]
    chain_id: int
    network: str  # the stand-ins' network name in request paths


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def kept(where: Path, key: str, seed: Callable[[Path], Image]) -> Image:
    """The image ``key`` in ``where``, seeded by ``seed(state file)`` if it is not there yet.

    ``seed`` must leave the file complete when it returns (its node stopped). The description is
    written after it, in one rename, so an image that is described is whole."""
    where.mkdir(parents=True, exist_ok=True)
    about = where / f"{key}.pickle"
    with _locked(where / f"{key}.lock"):
        if not about.exists():
            state = where / f"{key}.state.json"
            image = seed(state)
            if not state.is_file():
                raise PublisherError(f"anvil did not write the seeded chain to {state}")
            partial = about.with_suffix(".partial")
            partial.write_bytes(pickle.dumps(image))
            partial.rename(about)
    image = pickle.loads(about.read_bytes())
    assert isinstance(image, Image)  # written by this module alone
    return image


def wake(client: RpcClient) -> None:
    """What a node started from an image needs beyond its chain: its clock at the head's time (a
    loaded node's clock starts at genesis, and blocks mined without a timestamp take the clock's
    time), and any account may send, as after seeding (seed.allow_any_sender)."""
    from .seed import allow_any_sender

    head = client.request("eth_getBlockByNumber", ["latest", False])
    client.request("evm_setTime", [head["timestamp"]])
    allow_any_sender(client)
