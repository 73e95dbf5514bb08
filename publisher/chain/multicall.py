"""Multicall3 ``aggregate3`` at a pinned block: chunked by estimated gas and calldata size,
several chunks per JSON-RPC batch, chunks halved and retried when a node refuses them as too
heavy, and every failed sub-call reported by contract, function and arguments."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from eth_abi import decode
from eth_abi.exceptions import DecodingError, InsufficientDataBytes, InvalidPointer, NonEmptyPaddingBytes

from ..errors import PublisherError
from . import abis, codec
from .abi import Fn
from .rpc import RpcClient, RpcError, RpcUnavailable

# Avalanche's public nodes cap eth_call at 50M gas; stay under it with room for the wrapper.
CHUNK_GAS = 40_000_000
CHUNK_BYTES = 120_000
CALL_OVERHEAD_GAS = 8_000
HEAVY_HINTS = ("out of gas", "gas limit", "gas required exceeds", "too large", "timeout", "timed out", "exceeds", "limit exceeded")


@dataclass(frozen=True)
class Call:
    target: str
    fn: Fn
    args: tuple = ()
    gas: int = 30_000  # estimated cost, used only to size chunks
    contract: str = ""  # name for error messages
    optional: bool = False  # a revert or an undecodable answer yields None instead of failing the run

    def describe(self) -> str:
        return f"{self.contract or self.target}.{self.fn.describe(self.args)}"


class CallFailed(PublisherError):
    pass


def revert_reason(data: bytes) -> str:
    if not data:
        return "reverted without a reason"
    if data[:4] == bytes.fromhex("08c379a0"):
        try:
            return f"reverted: {decode(['string'], data[4:])[0]}"
        except Exception:
            pass
    if data[:4] == bytes.fromhex("4e487b71"):
        try:
            return f"panicked (code {decode(['uint256'], data[4:])[0]:#x})"
        except Exception:
            pass
    named = abis.custom_error(data)
    if named:
        return f"reverted with {named}"
    return f"reverted with unknown error 0x{data[:4].hex()}"


class Multicall:
    def __init__(self, client: RpcClient, address: str, block: str | dict, *, batch_size: int = 10,
                 chunk_gas: int = CHUNK_GAS, chunk_bytes: int = CHUNK_BYTES,
                 on_chunk: Callable[[int], None] | None = None, label: str = ""):
        # ``block``: a tag or hex number, or an EIP-1898 {"blockHash": …, "requireCanonical": True};
        # ``label`` names it in messages (e.g. the block number when addressed by hash).
        self.label = label
        self.client = client
        self.address = address
        self.block = block
        self.batch_size = batch_size
        self.chunk_gas = chunk_gas
        self.chunk_bytes = chunk_bytes
        self.on_chunk = on_chunk

    def run(self, calls: list[Call]) -> list:
        """Decoded results in call order; optional calls that revert give None."""
        encoded = [c.fn.encode(*c.args) for c in calls]
        chunks = self._chunks(calls, encoded)
        # Each Call3 is encoded once, however the calls are later chunked or split.
        elements = [call3(c.target, data) for c, data in zip(calls, encoded, strict=True)]
        raw: dict[int, tuple[bool, bytes]] = {}
        self._shared: dict[int, bool] = {}
        self._execute(chunks, calls, elements, raw)
        # A sub-call that ran out of gas inside a shared chunk fails with no data, just like a
        # revert without a reason: run those alone once before calling them failures.
        again = [i for i, (ok, data) in raw.items() if not ok and not data and self._shared[i]]
        if again:
            self._execute([[i] for i in again], calls, elements, raw)
        out: list = []
        failures: list = []
        for i, call in enumerate(calls):
            ok, data = raw[i]
            if not ok:
                if call.optional:
                    out.append(None)
                    continue
                failures.append(f"{call.describe()} {revert_reason(data)}")
                out.append(None)
                continue
            try:
                out.append(call.fn.decode(data))
            except Exception:
                out.append(None)
                if not call.optional:
                    failures.append(f"{call.describe()} returned undecodable data ({len(data)} bytes)")
        if failures:
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            raise CallFailed(f"call failed at block {self._where()}: {failures[0]}{more}")
        return out

    def _where(self) -> str:
        b = self.block
        if isinstance(b, dict):  # EIP-1898 block hash
            return self.label or str(b.get("blockHash", "?"))[:18]
        return str(int(b, 16)) if b.startswith("0x") else b

    def _chunks(self, calls: list[Call], encoded: list[bytes]) -> list[list[int]]:
        chunks: list[list[int]] = []
        current: list[int] = []
        gas = size = 0
        for i, (call, data) in enumerate(zip(calls, encoded, strict=True)):
            cost, length = call.gas + CALL_OVERHEAD_GAS, len(data) + 128
            if current and (gas + cost > self.chunk_gas or size + length > self.chunk_bytes):
                chunks.append(current)
                current, gas, size = [], 0, 0
            current.append(i)
            gas += cost
            size += length
        if current:
            chunks.append(current)
        return chunks

    def _execute(self, chunks, calls, elements, raw) -> None:
        queue = list(chunks)
        while queue:
            group, queue = queue[: self.batch_size], queue[self.batch_size :]
            requests = [self._request(chunk, elements) for chunk in group]
            try:
                answers = self.client.batch(requests, raise_errors=False)
            except RpcUnavailable as exc:
                if not exc.heavy:
                    raise
                # Too big or too slow for this node: fewer chunks per request, then smaller chunks.
                if len(group) > 1:
                    self.batch_size = max(1, len(group) // 2)
                    queue = group + queue
                    continue
                if len(group[0]) > 1:
                    half = len(group[0]) // 2
                    queue = [group[0][:half], group[0][half:], *queue]
                    continue
                raise
            for chunk, answer in zip(group, answers, strict=True):
                if isinstance(answer, RpcError):
                    if _heavy(answer) and len(chunk) > 1:
                        half = len(chunk) // 2
                        queue = [chunk[:half], chunk[half:], *queue]
                        continue
                    first = calls[chunk[0]]
                    raise CallFailed(f"multicall of {len(chunk)} calls from {first.describe()} failed: {answer.rpc_message}")
                try:
                    results = decode_results(bytes.fromhex(answer[2:]))
                except (TypeError, ValueError, AttributeError, ArithmeticError, DecodingError) as exc:
                    first = calls[chunk[0]]
                    raise CallFailed(f"multicall of {len(chunk)} calls from {first.describe()} returned a malformed "
                                     f"result ({type(exc).__name__})") from None
                if len(results) != len(chunk):
                    raise CallFailed(f"multicall returned {len(results)} results for {len(chunk)} calls")
                for i, result in zip(chunk, results, strict=True):
                    raw[i] = result
                    self._shared[i] = len(chunk) > 1
                if self.on_chunk:
                    self.on_chunk(len(chunk))

    def _request(self, chunk, elements):
        payload = aggregate3_payload([elements[i] for i in chunk])
        return ("eth_call", [{"to": self.address, "data": "0x" + payload.hex()}, self.block])


# aggregate3 is the one wire format every read goes through (tens of thousands of calls per run),
# so its call list and result list have their own encoder and decoder here; they agree with the
# general codec, and with eth_abi, byte for byte (tests check both).

_WORD = codec.compile_type("address").encode
_CALL3_HEAD = codec.ONE + (96).to_bytes(32, "big")  # allowFailure true; callData right after the head
_PAYLOAD_HEAD = abis.aggregate3.selector + (32).to_bytes(32, "big")


def call3(target: str, data: bytes) -> bytes:
    """One encoded ``Call3(target, allowFailure=true, callData)`` struct."""
    return _WORD(target) + _CALL3_HEAD + len(data).to_bytes(32, "big") + data + bytes(-len(data) % 32)


def aggregate3_payload(elements: list[bytes]) -> bytes:
    """``aggregate3(Call3[])`` calldata from encoded Call3 structs."""
    offsets, at = [], 32 * len(elements)
    for element in elements:
        offsets.append(at.to_bytes(32, "big"))
        at += len(element)
    return _PAYLOAD_HEAD + len(elements).to_bytes(32, "big") + b"".join(offsets) + b"".join(elements)


def decode_results(data: bytes) -> list[tuple[bool, bytes]]:
    """aggregate3's ``(bool success, bytes returnData)[]``, with the codec's checks: every offset
    inside the data and past its head, booleans 0 or 1, zero padding."""
    size = len(data)
    if size < 32:
        raise InsufficientDataBytes("no head")
    array = int.from_bytes(data[:32], "big")
    if array < 32 or array + 32 > size:
        raise InvalidPointer("invalid offset of the result list")
    count = int.from_bytes(data[array : array + 32], "big")
    start = array + 32
    end = start + 32 * count
    if end > size:
        raise InsufficientDataBytes(f"{count} results run past the data")
    out = []
    for at in range(start, end, 32):
        item = start + int.from_bytes(data[at : at + 32], "big")
        if item < end or item + 64 > size:
            raise InvalidPointer(f"invalid offset at {at}")
        ok = data[item : item + 32]
        if ok != codec.ZERO and ok != codec.ONE:
            raise NonEmptyPaddingBytes(f"success flag is not 0 or 1 at {item}")
        blob = item + int.from_bytes(data[item + 32 : item + 64], "big")
        if blob < item + 64 or blob + 32 > size:
            raise InvalidPointer(f"invalid offset at {item + 32}")
        length = int.from_bytes(data[blob : blob + 32], "big")
        first = blob + 32
        padded = first + (length + 31) // 32 * 32
        if padded > size:
            raise InsufficientDataBytes(f"returnData of length {length} at {blob} runs past the data")
        if data[first + length : padded] != codec.ZERO[: padded - first - length]:
            raise NonEmptyPaddingBytes(f"returnData padding not empty at {blob}")
        out.append((ok == codec.ONE, data[first : first + length]))
    return out


def _heavy(err: RpcError) -> bool:
    text = err.rpc_message.lower()
    return any(h in text for h in HEAVY_HINTS)
