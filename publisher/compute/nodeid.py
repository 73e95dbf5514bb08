"""Avalanche CB58 encoding: base58 of the bytes followed by the last 4 bytes of their sha256.

Minipools store a NodeID as its raw 20 bytes (an ``address``) and a P-Chain txID as 32 bytes;
the API shows them the way Avalanche tools do (``NodeID-…`` and plain CB58)."""
from __future__ import annotations

import hashlib
from functools import lru_cache

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _b58encode(data: bytes) -> str:
    n = int.from_bytes(data, "big")
    out = []
    while n:
        n, r = divmod(n, 58)
        out.append(ALPHABET[r])
    pad = len(data) - len(data.lstrip(b"\0"))
    return "1" * pad + "".join(reversed(out))


@lru_cache(maxsize=1 << 16)  # a build encodes each minipool's IDs for several files
def cb58encode(data: bytes) -> str:
    return _b58encode(data + hashlib.sha256(data).digest()[-4:])


def node_id(raw: bytes | str) -> str:
    """``NodeID-…`` from the 20 stored bytes (bytes or 0x-hex)."""
    data = bytes.fromhex(raw[2:]) if isinstance(raw, str) else raw
    if len(data) != 20:
        raise ValueError("a NodeID is 20 bytes")
    return "NodeID-" + cb58encode(data)


def tx_id(raw: bytes | str) -> str | None:
    """CB58 of a 32-byte P-Chain txID; None for the all-zero (unset) value."""
    data = bytes.fromhex(raw[2:]) if isinstance(raw, str) else raw
    return None if not any(data) else cb58encode(data)
