"""Avalanche CB58 encoding: base58 of the bytes followed by the last 4 bytes of their sha256.

Minipools store a NodeID as its raw 20 bytes (an ``address``) and a P-Chain txID as 32 bytes;
the API shows them the way Avalanche tools do (``NodeID-…`` and plain CB58)."""
from __future__ import annotations

import hashlib
from functools import lru_cache

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_INDEX = {c: i for i, c in enumerate(ALPHABET)}


def _b58encode(data: bytes) -> str:
    n = int.from_bytes(data, "big")
    out = []
    while n:
        n, r = divmod(n, 58)
        out.append(ALPHABET[r])
    pad = len(data) - len(data.lstrip(b"\0"))
    return "1" * pad + "".join(reversed(out))


def _b58decode(text: str) -> bytes:
    n = 0
    for c in text:
        if c not in _INDEX:
            raise ValueError(f"invalid base58 character {c!r}")
        n = n * 58 + _INDEX[c]
    pad = len(text) - len(text.lstrip("1"))
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return b"\0" * pad + body


@lru_cache(maxsize=1 << 16)  # a build encodes each minipool's IDs for several files
def cb58encode(data: bytes) -> str:
    return _b58encode(data + hashlib.sha256(data).digest()[-4:])


def cb58decode(text: str) -> bytes:
    raw = _b58decode(text)
    if len(raw) < 4:
        raise ValueError("CB58 string too short")
    data, check = raw[:-4], raw[-4:]
    if hashlib.sha256(data).digest()[-4:] != check:
        raise ValueError("CB58 checksum mismatch")
    return data


def node_id(raw: bytes | str) -> str:
    """``NodeID-…`` from the 20 stored bytes (bytes or 0x-hex)."""
    data = bytes.fromhex(raw[2:]) if isinstance(raw, str) else raw
    if len(data) != 20:
        raise ValueError("a NodeID is 20 bytes")
    return "NodeID-" + cb58encode(data)


def node_id_bytes(text: str) -> bytes:
    if not text.startswith("NodeID-"):
        raise ValueError("a NodeID starts with 'NodeID-'")
    data = cb58decode(text[len("NodeID-"):])
    if len(data) != 20:
        raise ValueError("a NodeID is 20 bytes")
    return data


def tx_id(raw: bytes | str) -> str | None:
    """CB58 of a 32-byte P-Chain txID; None for the all-zero (unset) value."""
    data = bytes.fromhex(raw[2:]) if isinstance(raw, str) else raw
    return None if not any(data) else cb58encode(data)
