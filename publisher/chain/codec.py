"""ABI encoding and decoding for the types the reader uses, with eth_abi's results and strictness.

eth_abi is exact but spends tens of microseconds per value in pure Python; a scale read (10 000
stakers, 40 000 per-staker views, 3 000 minipools) holds several hundred thousand values, which
made ABI work most of a snapshot's time. This module compiles each type string once into
plain functions over ``bytes``. It covers ``uintN``, ``intN``, ``address``, ``bool``, ``bytesN``,
``bytes``, ``string``, tuples and dynamic arrays ``T[]``; any other type (fixed-size arrays,
fixed-point numbers) raises ``Unsupported`` and callers fall back to eth_abi.

Decoding is at least as strict as eth_abi's default: values within their bit size, zero padding,
booleans 0 or 1, offsets inside the data and past the whole head that holds them, UTF-8 strings. Addresses come
back lower-case with 0x, as eth_abi returns them.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from eth_abi.exceptions import (
    EncodingTypeError,
    InsufficientDataBytes,
    InvalidPointer,
    NonEmptyPaddingBytes,
    ValueOutOfBounds,
)

try:  # pycryptodome directly: half the cost of going through eth_hash, which wraps it
    from Crypto.Hash import keccak as _keccak_mod

    def _keccak(data: bytes) -> bytes:
        return _keccak_mod.new(digest_bits=256, data=data).digest()
except ImportError:  # pragma: no cover - eth_hash picks whatever backend is installed
    from eth_hash.auto import keccak as _keccak  # type: ignore[assignment]


def split_types(text: str) -> list[str]:
    """Split ``"uint256,(address,bytes)[],bool"`` at its top-level commas."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    if text[start:]:
        out.append(text[start:])
    return out


class Unsupported(ValueError):
    """A type this codec does not handle; use eth_abi for it."""


Decoder = Callable[[bytes, int], Any]
Encoder = Callable[[Any], bytes]
ZERO = bytes(32)


class Node:
    """A compiled type: whether it is dynamic, its head size, and its two functions."""

    __slots__ = ("decode", "dynamic", "encode", "size")

    def __init__(self, dynamic: bool, size: int, decode: Decoder, encode: Encoder):
        self.dynamic, self.size, self.decode, self.encode = dynamic, size, decode, encode


def _word(data: bytes, pos: int) -> int:
    end = pos + 32
    if pos < 0 or end > len(data):
        raise InsufficientDataBytes(f"need 32 bytes at {pos}, data has {len(data)}")
    return int.from_bytes(data[pos:end], "big")


def _uint(bits: int) -> Node:
    limit = 1 << bits

    def decode(data: bytes, pos: int) -> int:
        value = _word(data, pos)
        if value >= limit:
            raise NonEmptyPaddingBytes(f"uint{bits} value out of range at {pos}")
        return value

    def encode(value) -> bytes:
        if not isinstance(value, int) or isinstance(value, bool):
            raise EncodingTypeError(f"uint{bits} needs an int, got {type(value).__name__}")
        if value < 0 or value >= limit:
            raise ValueOutOfBounds(f"{value} does not fit uint{bits}")
        return value.to_bytes(32, "big")

    return Node(False, 32, decode, encode)


def _int(bits: int) -> Node:
    low, high = -(1 << (bits - 1)), 1 << (bits - 1)

    def decode(data: bytes, pos: int) -> int:
        if pos < 0 or pos + 32 > len(data):
            raise InsufficientDataBytes(f"need 32 bytes at {pos}, data has {len(data)}")
        value = int.from_bytes(data[pos : pos + 32], "big", signed=True)
        if not low <= value < high:
            raise NonEmptyPaddingBytes(f"int{bits} value out of range at {pos}")
        return value

    def encode(value) -> bytes:
        if not isinstance(value, int) or isinstance(value, bool):
            raise EncodingTypeError(f"int{bits} needs an int, got {type(value).__name__}")
        if not low <= value < high:
            raise ValueOutOfBounds(f"{value} does not fit int{bits}")
        return value.to_bytes(32, "big", signed=True)

    return Node(False, 32, decode, encode)


def _decode_address(data: bytes, pos: int) -> str:
    if pos < 0 or pos + 32 > len(data):
        raise InsufficientDataBytes(f"need 32 bytes at {pos}, data has {len(data)}")
    if data[pos : pos + 12] != ZERO[:12]:
        raise NonEmptyPaddingBytes(f"address padding not empty at {pos}")
    return "0x" + data[pos + 12 : pos + 32].hex()


def _encode_address(value) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        if len(value) != 20:
            raise EncodingTypeError(f"address needs 20 bytes, got {len(value)}")
        return ZERO[:12] + bytes(value)
    if not isinstance(value, str):
        raise EncodingTypeError(f"address needs str or bytes, got {type(value).__name__}")
    text = value[2:] if value[:2] in ("0x", "0X") else value
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise EncodingTypeError(f"not a hex address: {value!r}") from None
    if len(raw) != 20 or len(text) != 40:
        raise EncodingTypeError(f"not a 20-byte address: {value!r}")
    # Like eth_abi (eth_utils 5+), letter case is not checked against EIP-55 here.
    return ZERO[:12] + raw


def _decode_bool(data: bytes, pos: int) -> bool:
    value = _word(data, pos)
    if value > 1:
        raise NonEmptyPaddingBytes(f"bool must be 0 or 1 at {pos}")
    return value == 1


def _encode_bool(value) -> bytes:
    if not isinstance(value, bool):
        raise EncodingTypeError(f"bool needs a bool, got {type(value).__name__}")
    return (1 if value else 0).to_bytes(32, "big")


def _fixed_bytes(n: int) -> Node:
    pad = bytes(32 - n)

    def decode(data: bytes, pos: int) -> bytes:
        if pos < 0 or pos + 32 > len(data):
            raise InsufficientDataBytes(f"need 32 bytes at {pos}, data has {len(data)}")
        if data[pos + n : pos + 32] != pad:
            raise NonEmptyPaddingBytes(f"bytes{n} padding not empty at {pos}")
        return data[pos : pos + n]

    def encode(value) -> bytes:
        if not isinstance(value, (bytes, bytearray)):
            raise EncodingTypeError(f"bytes{n} needs bytes, got {type(value).__name__}")
        if len(value) > n:
            raise ValueOutOfBounds(f"{len(value)} bytes exceed bytes{n}")
        return bytes(value).ljust(32, b"\0")

    return Node(False, 32, decode, encode)


def _decode_bytes(data: bytes, pos: int) -> bytes:
    length = _word(data, pos)
    start = pos + 32
    padded = (length + 31) // 32 * 32
    if start + padded > len(data):
        raise InsufficientDataBytes(f"bytes of length {length} at {pos} run past the data")
    if data[start + length : start + padded] != ZERO[: padded - length]:
        raise NonEmptyPaddingBytes(f"bytes padding not empty at {pos}")
    return data[start : start + length]


def _encode_raw(raw: bytes) -> bytes:
    return len(raw).to_bytes(32, "big") + raw + ZERO[: -len(raw) % 32]


def _encode_bytes(value) -> bytes:
    if not isinstance(value, (bytes, bytearray)):
        raise EncodingTypeError(f"bytes needs bytes, got {type(value).__name__}")
    return _encode_raw(bytes(value))


def _decode_string(data: bytes, pos: int) -> str:
    return _decode_bytes(data, pos).decode("utf-8")


def _encode_string(value) -> bytes:
    if not isinstance(value, str):
        raise EncodingTypeError(f"string needs a str, got {type(value).__name__}")
    return _encode_raw(value.encode("utf-8"))


def _sequence(nodes: list[Node] | None, item: Node | None = None):
    """Decoder and encoder of a head/tail sequence: a tuple (``nodes``) or ``n`` items."""

    def decode_items(data: bytes, start: int, parts: list[Node]) -> tuple:
        head_end = start + sum(p.size for p in parts)
        if head_end > len(data):
            raise InsufficientDataBytes(f"head of {len(parts)} values at {start} runs past the data")
        out, pos = [], start
        for part in parts:
            if part.dynamic:
                target = start + _word(data, pos)
                if target < head_end or target >= len(data):
                    raise InvalidPointer(f"invalid offset at {pos}")
                out.append(part.decode(data, target))
            else:
                out.append(part.decode(data, pos))
            pos += part.size
        return tuple(out)

    def encode_items(values, parts: list[Node]) -> bytes:
        if not isinstance(values, (list, tuple)):
            raise EncodingTypeError(f"expected a list or tuple, got {type(values).__name__}")
        if len(values) != len(parts):
            raise ValueOutOfBounds(f"expected {len(parts)} values, got {len(values)}")
        head_size = sum(p.size for p in parts)
        heads, tails, offset = [], [], head_size
        for part, value in zip(parts, values, strict=True):
            encoded = part.encode(value)
            if part.dynamic:
                heads.append(offset.to_bytes(32, "big"))
                tails.append(encoded)
                offset += len(encoded)
            else:
                heads.append(encoded)
        return b"".join(heads) + b"".join(tails)

    if nodes is not None:
        return (lambda data, pos: decode_items(data, pos, nodes)), (lambda values: encode_items(values, nodes))

    assert item is not None  # an array's element type
    elem: Node = item

    def decode_array(data: bytes, pos: int) -> tuple:
        count = _word(data, pos)
        start = pos + 32
        if count * elem.size > len(data) - start:
            raise InsufficientDataBytes(f"array of {count} at {pos} runs past the data")
        if not elem.dynamic and elem.size == 32:
            # Flat arrays of words (uint256[], address[]): no head/tail bookkeeping.
            return tuple(elem.decode(data, start + 32 * i) for i in range(count))
        return decode_items(data, start, [elem] * count)

    def encode_array(values) -> bytes:
        if not isinstance(values, (list, tuple)):
            raise EncodingTypeError(f"expected a list or tuple, got {type(values).__name__}")
        return len(values).to_bytes(32, "big") + encode_items(values, [elem] * len(values))

    return decode_array, encode_array


@cache
def compile_type(text: str) -> Node:
    text = text.strip()
    if text.endswith("[]"):
        item = compile_type(text[:-2])
        decode, encode = _sequence(None, item)
        return Node(True, 32, decode, encode)
    if text.endswith("]"):
        raise Unsupported(f"fixed-size array {text}")
    if text.startswith("("):
        if not text.endswith(")"):
            raise Unsupported(text)
        parts = [compile_type(t) for t in split_types(text[1:-1])]
        decode, encode = _sequence(parts)
        dynamic = any(p.dynamic for p in parts)
        return Node(dynamic, 32 if dynamic else sum(p.size for p in parts), decode, encode)
    if text == "address":
        return Node(False, 32, _decode_address, _encode_address)
    if text == "bool":
        return Node(False, 32, _decode_bool, _encode_bool)
    if text == "bytes":
        return Node(True, 32, _decode_bytes, _encode_bytes)
    if text == "string":
        return Node(True, 32, _decode_string, _encode_string)
    for prefix, make, low, high, step in (("uint", _uint, 8, 256, 8), ("int", _int, 8, 256, 8), ("bytes", _fixed_bytes, 1, 32, 1)):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            n = int(text[len(prefix):])
            if low <= n <= high and n % step == 0 and text[len(prefix)] != "0":
                return make(n)
            raise Unsupported(text)
        if text == prefix and prefix != "bytes":
            return make(256)
    raise Unsupported(text)


def tuple_of(types: tuple[str, ...] | list[str]) -> Node:
    """The compiled top-level sequence of ``types`` (a function's inputs or outputs)."""
    return compile_type("(" + ",".join(types) + ")")


def decode(types, data: bytes) -> tuple:
    data = bytes(data)
    return tuple_of(tuple(types)).decode(data, 0)


def encode(types, values) -> bytes:
    return tuple_of(tuple(types)).encode(values)


def checksum(address: str) -> str:
    """EIP-55 form of a hex address (with or without 0x), without eth_utils' validation layers."""
    text = address[2:].lower() if address[:2] in ("0x", "0X") else address.lower()
    if len(text) != 40:
        raise ValueError(f"not a 20-byte hex address: {address!r}")
    digest = _keccak(text.encode("ascii")).hex()
    return "0x" + "".join(c.upper() if c > "9" and digest[i] >= "8" else c for i, c in enumerate(text))
