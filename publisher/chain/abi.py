"""Function descriptors from human-readable signatures, encoded with eth_abi.

Signatures are written once (``abis.py``) and work for the devnet and mainnet alike, which is
what keeps the two byte-compatible: the devnet artifacts are checked against them in tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from eth_abi import decode, encode
from eth_utils import keccak


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


@dataclass(frozen=True)
class Fn:
    """A contract function: ``Fn("getStakers(uint256,uint256)", "(address,uint256)[]")``."""

    signature: str
    returns: str = ""
    inputs: tuple[str, ...] = field(init=False)
    outputs: tuple[str, ...] = field(init=False)
    selector: bytes = field(init=False)

    def __post_init__(self) -> None:
        name, _, rest = self.signature.partition("(")
        object.__setattr__(self, "inputs", tuple(split_types(rest[:-1])))
        object.__setattr__(self, "outputs", tuple(split_types(self.returns)))
        object.__setattr__(self, "selector", keccak(text=self.signature)[:4])

    @property
    def name(self) -> str:
        return self.signature.split("(", 1)[0]

    def encode(self, *args) -> bytes:
        return self.selector + encode(list(self.inputs), list(args))

    def decode(self, data: bytes):
        """Decode return data; a single output comes back unwrapped."""
        values = decode(list(self.outputs), data)
        return values[0] if len(values) == 1 else values

    def describe(self, args: tuple) -> str:
        shown = ", ".join(_short(a) for a in args)
        return f"{self.name}({shown})"


def _short(value) -> str:
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return f"[{len(value)} items]"
    return str(value)


def event_topic(signature: str) -> str:
    return "0x" + keccak(text=signature).hex()
