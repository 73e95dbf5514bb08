"""Small changes to a running devnet between two builds, through the devnet-only setters: the
incremental-build tests and the benchmarks change a few stakers, then mine one block."""
from __future__ import annotations

import re
import time
from collections.abc import Sequence

from publisher.chain import abis
from publisher.chain.rpc import RpcClient
from publisher.snapshot import Staker

from .net import Devnet
from .seed import DEPLOYER, TX_GAS, set_stakers

FIELDS = [(name, re.sub(r"([A-Z])", r"_\1", name).lower()) for name, _ in abis.STAKER_FIELDS]


def write_stakers(url: str, staking: str, stakers: Sequence[Staker], *, seconds: int = 12) -> int:
    """Store these stakers (new or changed; the contract keeps getTotalGGPStake in step) in one
    block ``seconds`` after the head; with no stakers, mine an empty block. Returns that block."""
    client = RpcClient([url])
    head = client.request("eth_getBlockByNumber", ["latest", False])
    client.request("evm_setNextBlockTimestamp", [hex(int(head["timestamp"], 16) + seconds)])
    if not stakers:
        client.request("evm_mine", [])
        return int(head["number"], 16) + 1
    rows = [tuple(getattr(st, attr) for _, attr in FIELDS) for st in stakers]
    tx = {"from": DEPLOYER, "to": staking, "data": "0x" + set_stakers.encode(rows).hex(), "gas": hex(TX_GAS)}
    tx_hash = client.request("eth_sendTransaction", [tx])
    receipt = client.request("eth_getTransactionReceipt", [tx_hash])
    if receipt is None and not client.request("anvil_getAutomine", []):
        client.request("evm_mine", [])  # the node mines on request (the seed leaves automine to the scenario)
    until = time.monotonic() + 30
    while receipt is None and time.monotonic() < until:  # automine on a large state takes a moment
        time.sleep(0.01)
        receipt = client.request("eth_getTransactionReceipt", [tx_hash])
    if not receipt or int(receipt["status"], 16) != 1:
        raise RuntimeError("setStakers failed on the devnet")
    return int(receipt["blockNumber"], 16)


def ordinary_head(net: Devnet, *, seconds: int = 12) -> int:
    """Mine one empty block after the seeded head and return it: what the benchmarks read, as a
    publisher reads any block of a moving chain. Anvil answers reads pinned (by hash) to the block
    that sealed a large seeding far slower than any later one (26 ms a call at `scale` against
    0.4 ms), which would measure the node's slow path instead of the product."""
    return write_stakers(net.url, net.addresses["Staking"], [], seconds=seconds)
