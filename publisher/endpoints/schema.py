"""Small builders for the JSON Schemas (2020-12) the registry declares."""
from __future__ import annotations

NUMBER = {"type": "number"}
NON_NEGATIVE = {"type": "number", "minimum": 0}
INTEGER = {"type": "integer"}
TIMESTAMP = {"type": "integer", "minimum": 0, "description": "unix seconds"}
STRING = {"type": "string"}
BOOLEAN = {"type": "boolean"}
ADDRESS = {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$", "description": "EIP-55 checksummed address"}
NODE_ID = {"type": "string", "pattern": "^NodeID-[1-9A-HJ-NP-Za-km-z]+$"}
HEX = {"type": "string", "pattern": "^0x([0-9a-f]{2})*$"}
WEI = {"type": "string", "pattern": "^[0-9]+$", "description": "exact integer (wei) as a decimal string"}
PERCENT = {"type": "number", "description": "percent (7.2 = 7.2 %)"}


def nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: dict) -> dict:
    return {"type": "array", "items": items}


def obj(properties: dict, optional: dict | None = None, *, closed: bool = True, description: str = "") -> dict:
    schema: dict = {
        "type": "object",
        "properties": {**properties, **(optional or {})},
        "required": sorted(properties),
    }
    if closed:
        schema["additionalProperties"] = False
    if description:
        schema["description"] = description
    return schema


def described(schema: dict, text: str) -> dict:
    return {**schema, "description": text}


BLOCK = obj({
    "number": described(INTEGER, "block number (height) on the C-Chain"),
    "hash": {"type": "string", "pattern": "^0x[0-9a-f]{64}$", "description": "block hash, 0x-prefixed hex"},
    "timestamp": described(TIMESTAMP, "block time, unix seconds"),
}, description="the block this content was read at")
META = obj({
    "network": described(STRING, "network name: mainnet, fuji or devnet"),
    "chainId": described(INTEGER, "EVM chain id (43114 mainnet, 43113 Fuji)"),
    "block": BLOCK,
}, description="where the values come from: the block at which this content was last read. Every "
                "chain value of a run is read at one block; a file whose content is unchanged since an "
                "earlier run keeps that run's bytes, this stamp included (the content still holds at "
                "/status's block, the freshness authority)")
