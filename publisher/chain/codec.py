"""ABI encoding and decoding for the types the reader uses, with eth_abi's results and strictness.

eth_abi is exact but spends tens of microseconds per value in pure Python; a scale read (10 000
stakers, 40 000 per-staker views, 3 000 minipools) holds several hundred thousand values, which
made ABI work most of a snapshot's time. This module compiles each type string once into
plain functions over ``bytes``. It covers ``uintN``, ``intN``, ``address``, ``bool``, ``bytesN``,
``bytes``, ``string``, tuples and dynamic arrays ``T[]``; any other type (fixed-size arrays,
fixed-point numbers, arrays of empty tuples) raises ``Unsupported``; ``decode`` and ``encode`` hand
those to eth_abi.

Most values are one 32-byte word. Their types compile to a ``word`` function of an already
bounds-checked 32-byte slice, so a struct or an array checks its bounds once and then converts
each word with one slice and one call: no per-word bounds checks or position arithmetic.

Decoding is at least as strict as eth_abi's default: values within their bit size, zero padding,
booleans 0 or 1, offsets inside the data and past the whole head that holds them, UTF-8 strings. Addresses come
back lower-case with 0x, as eth_abi returns them.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache, partial
from typing import Any

try:  # pycryptodome directly: half the cost of going through eth_hash, which wraps it
    from Crypto.Hash import keccak as _keccak_mod

    def keccak(data: bytes) -> bytes:
        return _keccak_mod.new(digest_bits=256, data=data).digest()
except ImportError:  # pragma: no cover - eth_hash picks whatever backend is installed
    from eth_hash.auto import keccak  # type: ignore[assignment]


# The errors, named and nested as eth_abi's are, but ours: importing eth_abi costs a third of a
# second (it loads pydantic and a grammar), which a command that never meets an unusual type should
# not pay. ``decode`` and ``encode`` raise these for eth_abi's too.
class DecodingError(Exception):
    """Data that is not a valid encoding of the types asked."""


class InsufficientDataBytes(DecodingError):
    pass


class NonEmptyPaddingBytes(DecodingError):
    pass


class InvalidPointer(DecodingError):
    pass


class EncodingError(Exception):
    """A value that cannot be encoded as the type asked."""


class EncodingTypeError(EncodingError):
    pass


class ValueOutOfBounds(EncodingError):
    pass


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
Word = Callable[[bytes], Any]
ZERO = bytes(32)
_TOPIC = re.compile(r"0x[0-9a-fA-F]{64}")


def topic_bytes(text) -> bytes:
    """A log topic: 32 bytes written as 0x and 64 hex digits; ValueError for anything else (a
    node's answer is untrusted, and int(text, 16) would take "-0x1")."""
    if type(text) is not str or _TOPIC.fullmatch(text) is None:
        raise ValueError("a log topic is not 32 bytes of hex")
    return bytes.fromhex(text[2:])

ONE = (1).to_bytes(32, "big")
_from_word = partial(int.from_bytes, byteorder="big")


class Node:
    """A compiled type: whether it is dynamic, its head size, its two functions, and for one-word
    types ``word``: the value of a 32-byte slice whose bounds the caller has checked."""

    __slots__ = ("decode", "dynamic", "encode", "size", "word")

    def __init__(self, dynamic: bool, size: int, decode: Decoder, encode: Encoder, word: Word | None = None):
        self.dynamic, self.size, self.decode, self.encode, self.word = dynamic, size, decode, encode, word


def _word_node(word: Word, encode: Encoder) -> Node:
    def decode(data: bytes, pos: int):
        if pos < 0 or pos + 32 > len(data):
            raise InsufficientDataBytes(f"need 32 bytes at {pos}, data has {len(data)}")
        return word(data[pos : pos + 32])

    return Node(False, 32, decode, encode, word)


def _offset(data: bytes, pos: int) -> int:
    """A length or an offset word, bounds-checked (the one word read outside a checked head)."""
    if pos + 32 > len(data):
        raise InsufficientDataBytes(f"need 32 bytes at {pos}, data has {len(data)}")
    return int.from_bytes(data[pos : pos + 32], "big")


def _uint(bits: int) -> Node:
    limit = 1 << bits

    def word(w: bytes) -> int:
        value = int.from_bytes(w, "big")
        if value >= limit:
            raise NonEmptyPaddingBytes(f"uint{bits} value out of range")
        return value

    def encode(value) -> bytes:
        if not isinstance(value, int) or isinstance(value, bool):
            raise EncodingTypeError(f"uint{bits} needs an int, got {type(value).__name__}")
        if value < 0 or value >= limit:
            raise ValueOutOfBounds(f"{value} does not fit uint{bits}")
        return value.to_bytes(32, "big")

    # Every word is a valid uint256: no range check at all.
    return _word_node(_from_word if bits == 256 else word, encode)


def _int(bits: int) -> Node:
    low, high = -(1 << (bits - 1)), 1 << (bits - 1)

    def word(w: bytes) -> int:
        value = int.from_bytes(w, "big", signed=True)
        if not low <= value < high:
            raise NonEmptyPaddingBytes(f"int{bits} value out of range")
        return value

    def encode(value) -> bytes:
        if not isinstance(value, int) or isinstance(value, bool):
            raise EncodingTypeError(f"int{bits} needs an int, got {type(value).__name__}")
        if not low <= value < high:
            raise ValueOutOfBounds(f"{value} does not fit int{bits}")
        return value.to_bytes(32, "big", signed=True)

    return _word_node(word, encode)


_PAD12 = bytes(12)


def _address_word(w: bytes) -> str:
    if w[:12] != _PAD12:
        raise NonEmptyPaddingBytes("address padding not empty")
    return "0x" + w[12:].hex()


def _encode_address(value) -> bytes:
    if isinstance(value, str):
        return _address_text(value)
    if isinstance(value, (bytes, bytearray)):
        if len(value) != 20:
            raise EncodingTypeError(f"address needs 20 bytes, got {len(value)}")
        return _PAD12 + bytes(value)
    raise EncodingTypeError(f"address needs str or bytes, got {type(value).__name__}")


@lru_cache(maxsize=1 << 16)
def _address_text(value: str) -> bytes:
    # Cached: a read passes each staker's address to four views, and every call names its target.
    text = value[2:] if value[:2] in ("0x", "0X") else value
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise EncodingTypeError(f"not a hex address: {value!r}") from None
    if len(raw) != 20 or len(text) != 40:
        raise EncodingTypeError(f"not a 20-byte address: {value!r}")
    # Like eth_abi (eth_utils 5+), letter case is not checked against EIP-55 here.
    return _PAD12 + raw


_BOOLS = {ZERO: False, ONE: True}


def _bool_word(w: bytes) -> bool:
    value = _BOOLS.get(w)
    if value is None:
        raise NonEmptyPaddingBytes("bool must be 0 or 1")
    return value


def _encode_bool(value) -> bytes:
    if not isinstance(value, bool):
        raise EncodingTypeError(f"bool needs a bool, got {type(value).__name__}")
    return ONE if value else ZERO


def _fixed_bytes(n: int) -> Node:
    pad = bytes(32 - n)

    def word(w: bytes) -> bytes:
        if w[n:] != pad:
            raise NonEmptyPaddingBytes(f"bytes{n} padding not empty")
        return w[:n]

    def encode(value) -> bytes:
        if not isinstance(value, (bytes, bytearray)):
            raise EncodingTypeError(f"bytes{n} needs bytes, got {type(value).__name__}")
        if len(value) > n:
            raise ValueOutOfBounds(f"{len(value)} bytes exceed bytes{n}")
        return bytes(value).ljust(32, b"\0")

    return _word_node(word, encode)


def _decode_bytes(data: bytes, pos: int) -> bytes:
    length = _offset(data, pos)
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


def _check_sequence(values) -> None:
    if not isinstance(values, (list, tuple)):
        raise EncodingTypeError(f"expected a list or tuple, got {type(values).__name__}")


def _join_dynamic(encoded: list[bytes], parts: list[Node] | None, head: int) -> bytes:
    """Heads then tails: a dynamic part's head is the offset of its tail (``parts`` None: all are)."""
    heads, tails, offset = [], [], head
    for i, blob in enumerate(encoded):
        if parts is None or parts[i].dynamic:
            heads.append(offset.to_bytes(32, "big"))
            tails.append(blob)
            offset += len(blob)
        else:
            heads.append(blob)
    return b"".join(heads) + b"".join(tails)


def _pointer(row: bytes, at: int, pos: int, end: int, size: int) -> int:
    """Where a dynamic part's tail starts: inside the data and past the whole head."""
    target = pos + int.from_bytes(row[at : at + 32], "big")
    if target < end or target >= size:
        raise InvalidPointer(f"invalid offset at {pos + at}")
    return target


def _tuple_decoder(parts: list[Node], head: int) -> Decoder:
    """A decoder generated for this exact layout: the head is bounds-checked and sliced once, and
    each part is one expression with constant offsets (a uint256 is a bare ``int.from_bytes``), so
    a struct costs a few calls instead of a loop with position arithmetic per field."""
    env: dict[str, Any] = {"fb": int.from_bytes, "pointer": _pointer, "Short": InsufficientDataBytes}
    fields, at = [], 0
    for k, p in enumerate(parts):
        if p.dynamic:
            env[f"d{k}"] = p.decode
            fields.append(f"d{k}(data, pointer(row, {at}, pos, end, size))")
        elif p.word is _from_word:
            fields.append(f"fb(row[{at}:{at + 32}], 'big')")
        elif p.word is not None:
            env[f"w{k}"] = p.word
            fields.append(f"w{k}(row[{at}:{at + 32}])")
        else:  # a static tuple inside this one
            env[f"d{k}"] = p.decode
            fields.append(f"d{k}(data, pos + {at})")
        at += p.size
    source = (
        "def decode(data, pos):\n"
        f"    end = pos + {head}\n"
        "    size = len(data)\n"
        "    if pos < 0 or end > size:\n"
        f"        raise Short(f'head of {len(parts)} values at {{pos}} runs past the data')\n"
        "    row = data[pos:end]\n"
        f"    return ({', '.join(fields)}{',' if len(fields) == 1 else ''})\n"
    )
    # The text is built from parsed type names only: no outside input reaches it.
    exec(compile(source, f"<abi decoder {len(parts)} parts>", "exec"), env)
    return env["decode"]


def _tuple(parts: list[Node]) -> Node:
    head = sum(p.size for p in parts)
    dynamic = any(p.dynamic for p in parts)
    decode = _tuple_decoder(parts, head)

    def encode(values) -> bytes:
        _check_sequence(values)
        if len(values) != len(parts):
            raise ValueOutOfBounds(f"expected {len(parts)} values, got {len(values)}")
        encoded = [p.encode(v) for p, v in zip(parts, values, strict=True)]
        return _join_dynamic(encoded, parts, head) if dynamic else b"".join(encoded)

    return Node(dynamic, 32 if dynamic else head, decode, encode)


def _array(elem: Node) -> Node:
    size, word, decode_elem, encode_elem = elem.size, elem.word, elem.decode, elem.encode
    if size == 0:
        raise Unsupported("array of empty tuples")

    def decode(data: bytes, pos: int) -> tuple:
        count = _offset(data, pos)
        start = pos + 32
        if count * size > len(data) - start:
            raise InsufficientDataBytes(f"array of {count} at {pos} runs past the data")
        end = start + count * size
        if word is not None:  # uint256[], address[]: a slice per item
            return tuple([word(data[at : at + 32]) for at in range(start, end, 32)])
        if not elem.dynamic:  # arrays of structs: each item at a fixed place
            return tuple([decode_elem(data, at) for at in range(start, end, size)])
        out = []
        for at in range(start, end, 32):
            target = start + int.from_bytes(data[at : at + 32], "big")
            if target < end or target >= len(data):
                raise InvalidPointer(f"invalid offset at {at}")
            out.append(decode_elem(data, target))
        return tuple(out)

    def encode(values) -> bytes:
        _check_sequence(values)
        encoded = [encode_elem(v) for v in values]
        body = _join_dynamic(encoded, None, 32 * len(encoded)) if elem.dynamic else b"".join(encoded)
        return len(encoded).to_bytes(32, "big") + body

    return Node(True, 32, decode, encode)


_NAMED: dict[str, Callable[[], Node]] = {
    "address": lambda: _word_node(_address_word, _encode_address),
    "bool": lambda: _word_node(_bool_word, _encode_bool),
    "bytes": lambda: Node(True, 32, _decode_bytes, _encode_bytes),
    "string": lambda: Node(True, 32, _decode_string, _encode_string),
}
# prefix, maker, smallest and largest size, size step; a bare "uint" or "int" is 256 bits.
_SIZED = (("uint", _uint, 8, 256, 8), ("int", _int, 8, 256, 8), ("bytes", _fixed_bytes, 1, 32, 1))


@cache
def compile_type(text: str) -> Node:
    text = text.strip()
    if text.endswith("[]"):
        return _array(compile_type(text[:-2]))
    if text.endswith("]"):
        raise Unsupported(f"fixed-size array {text}")
    if text.startswith("("):
        if not text.endswith(")"):
            raise Unsupported(text)
        return _tuple([compile_type(t) for t in split_types(text[1:-1])])
    named = _NAMED.get(text)
    return named() if named is not None else _sized(text)


def _sized(text: str) -> Node:
    """``uint<N>``, ``int<N>`` or ``bytes<N>``, N within its bounds and written without a leading 0."""
    for prefix, make, low, high, step in _SIZED:
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
    """``types`` decoded from ``data``; eth_abi decodes the types this module leaves out."""
    try:
        node = tuple_of(tuple(types))
    except Unsupported:
        return _eth_abi("decode", types, bytes(data))
    return node.decode(bytes(data), 0)


def encode(types, values) -> bytes:
    """``values`` encoded as ``types``; eth_abi encodes the types this module leaves out."""
    try:
        node = tuple_of(tuple(types))
    except Unsupported:
        return _eth_abi("encode", types, list(values))
    return node.encode(values)


def _eth_abi(how: str, types, arg):
    """eth_abi's ``decode`` or ``encode``, imported only now, its errors raised as this module's
    class of the same name (else the general one)."""
    import eth_abi
    from eth_abi import exceptions

    general = DecodingError if how == "decode" else EncodingError
    try:
        return getattr(eth_abi, how)(list(types), arg)
    except (exceptions.DecodingError, exceptions.EncodingError) as exc:
        named = {c.__name__: c for c in (InsufficientDataBytes, NonEmptyPaddingBytes, InvalidPointer, EncodingTypeError, ValueOutOfBounds)}
        raise named.get(type(exc).__name__, general)(str(exc)) from None


# EIP-55 without a loop over characters: a letter's ASCII case bit (0x20) flips where the hash's
# nibble at the same place is 8 or more.
_LETTER_BIT = bytes.maketrans(b"0123456789abcdef", bytes(10) + b"\x20" * 6)
_HIGH_NIBBLE_BIT = bytes.maketrans(b"0123456789abcdef", bytes(8) + b"\x20" * 8)


@lru_cache(maxsize=1 << 16)
def checksum(address: str) -> str:
    """EIP-55 form of a hex address (with or without 0x), without eth_utils' validation layers.
    Cached: minipool owners are stakers, and a run checksums each address several times."""
    text = address[2:].lower() if address[:2] in ("0x", "0X") else address.lower()
    raw = text.encode("utf-8")
    if len(raw) != 40 or raw.translate(None, b"0123456789abcdef"):
        raise ValueError(f"not a 20-byte hex address: {address!r}")
    nibbles = keccak(raw).hex().encode("ascii")[:40]
    flip = int.from_bytes(raw.translate(_LETTER_BIT), "big") & int.from_bytes(nibbles.translate(_HIGH_NIBBLE_BIT), "big")
    return "0x" + (int.from_bytes(raw, "big") ^ flip).to_bytes(40, "big").decode("ascii")
