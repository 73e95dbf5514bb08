"""Function descriptors from human-readable signatures.

Signatures are written once (``abis.py``) and work for the devnet and mainnet alike, which is
what keeps the two byte-compatible: the devnet artifacts are checked against them in tests.
Encoding and decoding go through ``codec`` (same results as eth_abi, much faster; it hands the
few types it leaves out to eth_abi).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import codec
from .codec import InsufficientDataBytes, keccak, split_types


@dataclass(frozen=True)
class Fn:
    """A contract function: ``Fn("getStakers(uint256,uint256)", "(address,uint256)[]")``."""

    signature: str
    returns: str = ""
    inputs: tuple[str, ...] = field(init=False)
    outputs: tuple[str, ...] = field(init=False)
    selector: bytes = field(init=False)
    _in: codec.Node | None = field(init=False, repr=False, compare=False)
    _out: codec.Node | None = field(init=False, repr=False, compare=False)
    # For a function of one one-word output: the value of its 32-byte answer (what ``decode``
    # returns for it), for callers that decode many answers at once.
    word: codec.Word | None = field(init=False, repr=False, compare=False)
    # For a function of one static input: its encoding, which is the whole argument block.
    one_input: codec.Encoder | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _name, _, rest = self.signature.partition("(")
        object.__setattr__(self, "inputs", tuple(split_types(rest[:-1])))
        object.__setattr__(self, "outputs", tuple(split_types(self.returns)))
        object.__setattr__(self, "selector", keccak(self.signature.encode())[:4])
        object.__setattr__(self, "_in", _compiled(self.inputs))
        object.__setattr__(self, "_out", _compiled(self.outputs))
        # Most views return one word (a uint256, a bool): decode it without building a tuple.
        one = codec.compile_type(self.outputs[0]) if len(self.outputs) == 1 and self._out is not None else None
        object.__setattr__(self, "word", one.word if one is not None else None)
        # Likewise one static input (an address, an index): its encoding is the whole argument block.
        one = codec.compile_type(self.inputs[0]) if len(self.inputs) == 1 and self._in is not None else None
        object.__setattr__(self, "one_input", one.encode if one is not None and not one.dynamic else None)

    @property
    def name(self) -> str:
        return self.signature.split("(", 1)[0]

    def encode(self, *args) -> bytes:
        if self.one_input is not None and len(args) == 1:
            return self.selector + self.one_input(args[0])
        if self._in is None:
            return self.selector + codec.encode(self.inputs, args)
        return self.selector + self._in.encode(args)

    def decode(self, data: bytes):
        """Decode return data; a single output comes back unwrapped."""
        if self.word is not None:
            if len(data) < 32:
                raise InsufficientDataBytes(f"{self.name} returned {len(data)} bytes, need 32")
            return self.word(bytes(data[:32]))
        if self._out is None:
            values = codec.decode(self.outputs, data)
        else:
            values = self._out.decode(bytes(data), 0)
        return values[0] if len(values) == 1 else values

    def describe(self, args: tuple) -> str:
        shown = ", ".join(_short(a) for a in args)
        return f"{self.name}({shown})"


def _compiled(types: tuple[str, ...]) -> codec.Node | None:
    try:
        return codec.tuple_of(types)
    except codec.Unsupported:
        return None


def _short(value) -> str:
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return f"[{len(value)} items]"
    return str(value)


def event_topic(signature: str) -> str:
    return "0x" + keccak(signature.encode()).hex()
