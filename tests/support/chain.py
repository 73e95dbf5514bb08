"""Small helpers for tests that talk to a devnet directly: single eth_calls, batches of them at
one block, moving the chain forward inside evm_snapshot / evm_revert, and deployer transactions."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from ggp_devnet.seed import ARTIFACTS, DEPLOYER

from publisher.chain.abi import Fn
from publisher.chain.rpc import RpcClient

WAD = 10**18
DAY = 86_400
MAX_UINT = 2**256 - 1


@lru_cache(maxsize=1)
def artifacts() -> dict:
    return json.loads(ARTIFACTS.read_text())["contracts"]


def block_tag(block) -> str:
    return block if isinstance(block, str) else hex(block)


def eth_call(client: RpcClient, to: str, fn: Fn, *args, block="latest"):
    data = client.request("eth_call", [{"to": to, "data": "0x" + fn.encode(*args).hex()}, block_tag(block)])
    return fn.decode(bytes.fromhex(data[2:]))


def eth_calls(client: RpcClient, items: list[tuple[str, Fn, tuple]], block="latest") -> list:
    """Many individual eth_calls at one block, sent as one JSON-RPC batch (no Multicall3)."""
    tag = block_tag(block)
    raw = client.batch([("eth_call", [{"to": to, "data": "0x" + fn.encode(*args).hex()}, tag]) for to, fn, args in items])
    return [fn.decode(bytes.fromhex(r[2:])) for (_, fn, _), r in zip(items, raw, strict=True)]


def header(client: RpcClient, block="latest") -> dict:
    return client.request("eth_getBlockByNumber", [block_tag(block), False])


def head(client: RpcClient) -> tuple[int, int]:
    h = header(client)
    return int(h["number"], 16), int(h["timestamp"], 16)


@contextmanager
def checkpoint(client: RpcClient) -> Iterator[None]:
    """Let the body mine blocks; afterwards the chain is exactly as before (same head hash)."""
    before = header(client)
    snap_id = client.request("evm_snapshot", [])
    try:
        yield
    finally:
        reverted = client.request("evm_revert", [snap_id])
        after = header(client)
    assert reverted is True
    assert (after["number"], after["hash"]) == (before["number"], before["hash"]), "evm_revert did not restore the head"


def mine_at(client: RpcClient, timestamp: int) -> int:
    """Mine an empty block at ``timestamp``; returns its number."""
    client.request("evm_setNextBlockTimestamp", [hex(timestamp)])
    client.request("evm_mine", [])
    number, ts = head(client)
    assert ts == timestamp
    return number


def send(client: RpcClient, to: str, data: bytes, gas: int = 5_000_000) -> dict:
    """A deployer transaction, mined by automine; returns its (successful) receipt."""
    tx_hash = client.request("eth_sendTransaction", [{"from": DEPLOYER, "to": to, "data": "0x" + data.hex(), "gas": hex(gas)}])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        receipt = client.request("eth_getTransactionReceipt", [tx_hash])
        if receipt:
            assert receipt["status"] == "0x1", f"transaction to {to} reverted"
            return receipt
        time.sleep(0.02)
    raise AssertionError(f"transaction {tx_hash} was not mined")


def mul_wad(x: int, y: int) -> int:
    return x * y // WAD


def div_wad(x: int, y: int) -> int:
    return x * WAD // y
