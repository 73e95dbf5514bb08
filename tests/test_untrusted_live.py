"""What a run reads back from the world it publishes to (the bucket's manifest and /status, the live
price history) and the node's logs is untrusted input: a value JSON allows but no integer can hold
(1e999 loads as an infinite float), or a log with a malformed block number, is a clear refusal or an
unusable prior, never an unexpected exception."""
from __future__ import annotations

import json

import pytest
from support.jsonrpc import JsonRpcServer

from publisher.chain.rpc import RpcClient
from publisher.config import load_profile
from publisher.errors import PublisherError
from publisher.publish import _block
from publisher.publish.plan import MANIFEST_FORMAT, parse_root
from publisher.snapshot import BlockRef
from publisher.sources.history_file import load_published
from publisher.watch import Examined, Follower

ROOT = {"format": MANIFEST_FORMAT, "shards": {}, "status": None, "run": 3, "reconciledAt": 1_800_000_000}


@pytest.mark.parametrize("field", ["run", "reconciledAt"])
def test_a_manifest_root_with_an_infinite_number_is_unreadable(field):
    assert parse_root(json.dumps(ROOT).encode()) is not None
    assert parse_root(json.dumps(ROOT).replace(f'"{field}": ', f'"{field}": 1e999, "x": ').encode()) is None
    assert parse_root(b"[1, 2]") is None and parse_root(b"[" * 100_000) is None


def test_a_live_status_with_an_infinite_block_number_has_no_block():
    assert _block(b'{"block": {"number": 12}}') == 12
    assert _block(b'{"block": {"number": 1e400}}') is None


def test_a_published_history_with_an_infinite_number_is_no_prior(tmp_path):
    point = {"date": "2026-12-01", "ggpInAvaxWei": "1e400", "avaxUsdAnswer": "1", "block": 1, "timestamp": 1}
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"points": [point]}).replace('"1e400"', "1e400"))
    assert load_published(path) is None


def test_a_log_with_a_malformed_block_number_is_a_one_line_refusal():
    seen = BlockRef(100, "0x" + "aa" * 32, 1_800_000_000)

    def header(number: int, hash_: str) -> dict:
        return {"number": hex(number), "hash": hash_, "timestamp": hex(1_800_000_000 + number)}

    def answer(item: dict) -> dict:
        if item["method"] == "eth_getBlockByNumber":
            tag = item["params"][0]
            result = header(101, "0x" + "bb" * 32) if tag == "latest" else header(100, seen.hash)
        else:  # eth_getLogs: a number where the hex string belongs
            result = [{"blockNumber": 101}]
        return {"jsonrpc": "2.0", "id": item["id"], "result": result}

    with JsonRpcServer(answer) as server:
        follower = Follower(RpcClient([server.url]), load_profile("devnet"))
        follower.examined = Examined(seen, ("0x" + "11" * 20,), "0x" + "22" * 20, "digest")
        with pytest.raises(PublisherError, match=r"eth_getLogs .* malformed value"):
            follower.look()
