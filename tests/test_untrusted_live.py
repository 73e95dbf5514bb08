"""What a run reads from the node and the APIs, and back from the world it publishes to (the
bucket's manifest and /status, the live price history, the queue's files), is untrusted input: a
value JSON allows but no integer can hold (1e999 loads as an infinite float), a malformed id, topic
or block number, a time past year 9999, is a clear refusal, a warning of a secondary source or an
unusable prior, never an unexpected exception nor a wrong value."""
from __future__ import annotations

import dataclasses
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from botocore.response import StreamingBody
from support import factory as F
from support.jsonrpc import JsonRpcServer

from publisher.chain.rpc import RpcClient
from publisher.collect import _history
from publisher.config import load_profile
from publisher.errors import PublisherError
from publisher.publish import _block
from publisher.publish.plan import MANIFEST_FORMAT, parse_root
from publisher.snapshot import LAST_TIME, BlockRef, check
from publisher.sources import history, prices, queuelog, shareprice
from publisher.sources.history_file import load_published
from publisher.sources.http import HttpClient
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


@pytest.mark.parametrize("ident", [[1], {"n": 1}, True], ids=["a list", "an object", "true"])
def test_an_answer_whose_id_is_not_an_integer_is_no_answer(ident):
    with (JsonRpcServer(lambda item: {"jsonrpc": "2.0", "id": ident, "result": "0xdead"}) as server,
          pytest.raises(PublisherError, match="no answer for eth_chainId")):
        RpcClient([server.url], max_attempts=1).request("eth_chainId")


def test_an_error_whose_code_is_not_an_integer_is_reported():
    with (JsonRpcServer(lambda item: {"jsonrpc": "2.0", "id": item["id"], "error": {"code": [1], "message": "boom"}}) as server,
          pytest.raises(PublisherError, match="boom")):
        RpcClient([server.url], max_attempts=2).request("eth_chainId")


def test_a_feed_that_answers_a_call_with_no_data_is_named():
    with (JsonRpcServer(lambda item: {"jsonrpc": "2.0", "id": item["id"], "result": None}) as server,
          pytest.raises(PublisherError, match=r"phaseId .* malformed value")):
        history.feed_event_sources(RpcClient([server.url], max_attempts=1), "0x" + "0a" * 20, 100)


WORD = "0x" + "00" * 31


@pytest.mark.parametrize("topic, data", [("-0x1", WORD + "10"), (WORD + "01", "0x" + "ff" * 32)],
                         ids=["a negative price topic", "a timestamp past year 9999"])
def test_a_price_log_with_a_malformed_topic_or_time_is_refused(topic, data):
    raw = [{"address": "0x" + "11" * 20, "blockNumber": "0x5", "logIndex": "0x0", "topics": [history.TOPIC_ORACLE, topic], "data": data}]
    with pytest.raises(PublisherError, match="malformed log"):
        history._decode(raw, "0x" + "11" * 20, "oracle", 0, 10)


@pytest.mark.parametrize("topic", ["0xnothex", None, 7, "-0x7"])
def test_a_vault_log_with_a_malformed_topic_is_refused(topic):
    raw = {"address": "0x" + "22" * 20, "blockNumber": "0x5", "logIndex": "0x0",
           "topics": [shareprice.TOPIC_SYNC, topic], "data": WORD + "01"}
    with pytest.raises(PublisherError, match="malformed log"):
        shareprice._decode(raw, "0x" + "22" * 20, 0, 10)


@pytest.mark.parametrize("date", ["not-a-date", "9999-12-31", "2026-02-30"])
def test_a_published_history_with_a_day_no_calendar_has_is_no_prior(tmp_path, date):
    point = {"date": date, "ggpInAvaxWei": "1", "avaxUsdAnswer": "1", "block": 1, "timestamp": 1}
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"points": [point], "meta": {"block": {"number": 5}}}))
    assert load_published(path) is None


def test_queue_files_nested_past_any_parser_are_no_prior(tmp_path):
    out = tmp_path / "out"
    (out / "withdrawals").mkdir(parents=True)
    (out / "withdrawals.json").write_text("[" * 100_000)
    assert queuelog.load_published(out / "withdrawals.json", out / "withdrawals") is None


def test_times_past_year_9999_are_refused_by_the_snapshot_check():
    m = F.minipool(0, liquid=F.avax(10))
    check(F.snapshot(minipools=[m], validators=(F.validator(m, LAST_TIME),)))
    for bad in (F.snapshot(minipools=[m], validators=(F.validator(m, LAST_TIME + 1),)),
                F.snapshot(minipools=[dataclasses.replace(m, end_time=3 * 10**11)]),
                F.snapshot(requests=[F.request(0, F.avax(1), expiration_delay=LAST_TIME)])):
        with pytest.raises(PublisherError, match="year 9999"):
            check(bad)


def test_a_price_too_small_to_be_one_is_a_malformed_answer():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"avalanche-2": {"usd": 1e-999999999}, "gogopool": {"usd": 5.1}}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        http = HttpClient("price API", f"http://127.0.0.1:{server.server_address[1]}", max_attempts=1)
        with pytest.raises(PublisherError, match="implausibly small"):
            prices.fetch_usd(http)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("number", ["-0x10", "0x_5", "12", 12, None])
def test_a_block_header_with_a_malformed_number_is_refused(number):
    from publisher.chain.reader import header_ref

    client = RpcClient(["http://127.0.0.1:9"])
    assert header_ref({"number": "0x10", "hash": "0x" + "aa" * 32, "timestamp": "0x5"}, client).number == 16
    with pytest.raises(PublisherError, match="malformed value"):
        header_ref({"number": number, "hash": "0x" + "aa" * 32, "timestamp": "0x5"}, client)


def test_a_live_history_keyed_by_anything_but_a_day_protects_nothing_and_breaks_nothing():
    from publisher.build.validate import compare_accumulated

    new = {"/prices/history": json.dumps({"points": [{"date": "2026-12-01", "x": 1}]}).encode()}
    listed = {"/prices/history": json.dumps({"points": [{"date": ["2026-12-01"], "x": 1}]}).encode()}
    assert compare_accumulated(listed, new) == []
    longer = {"/prices/history": json.dumps({"points": [{"date": "2026-11-30"}, {"date": "2026-12-01"}]}).encode()}
    assert "would shrink" in compare_accumulated(longer, new)[0]


def test_deep_nesting_is_refused_even_where_a_library_raised_the_recursion_limit(tmp_path):
    """web3's py_ecc sets the limit to 100 000, where json.loads of 100 000 brackets overflows the C
    stack and kills the interpreter: the loaders of what comes from outside parse within their own
    depth."""
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        deep = b"[" * 100_000
        assert parse_root(deep) is None
        path = tmp_path / "history.json"
        path.write_bytes(deep)
        assert load_published(path) is None
    finally:
        sys.setrecursionlimit(limit)


def test_the_watch_backs_off_at_most_its_bound_however_long_it_fails():
    from publisher.watch import MAX_BACKOFF, _backoff

    assert _backoff(0.1, 1) == 0.5 * 2 and _backoff(0.1, 2000) == MAX_BACKOFF  # 2.0 ** 2000 would overflow



def test_a_node_answering_another_block_than_asked_is_named_in_the_search_by_time():
    from publisher.chain.reader import find_block_at

    head = BlockRef(1000, "0x" + "cc" * 32, 1_800_010_000)

    def answer(item: dict) -> dict:
        n = int(item["params"][0], 16)
        lied = n + 1 if n else n  # every block but the genesis answered as the next one
        return {"jsonrpc": "2.0", "id": item["id"],
                "result": {"number": hex(lied), "hash": "0x" + "ab" * 32, "timestamp": hex(1_800_000_000 + 10 * lied)}}

    with JsonRpcServer(answer) as server:
        client = RpcClient([server.url], max_attempts=1)
        with pytest.raises(PublisherError, match=r"answered block \d+ for block \d+"):
            find_block_at(client, 1_800_005_000, head)
        # The price history is secondary: its search failing leaves it unextended, with a warning.
        snap, warnings = F.snapshot(number=head.number, now=head.timestamp), []
        profile = dataclasses.replace(load_profile("mainnet"), history_from_block=0)
        assert _history(client, snap, profile, None, warnings, None) == ()
        assert any(w.startswith("price history not built (") and "answered block" in w for w in warnings), warnings


def test_a_node_that_cannot_say_whether_the_prior_history_is_its_chain_leaves_the_history_as_it_was():
    """The check that the previous history belongs to this chain reads a header; a node erring on
    it stops the history only: the previous run's points are published again, with a warning."""
    from publisher.sources.history_file import PriorHistory

    snap = F.snapshot()
    points = tuple(F.price_point(day) for day in (2, 1))
    prior = PriorHistory(points, snap.block.number - 1, snap.network, snap.chain_id, "0x" + "ab" * 32)

    def answer(item: dict) -> dict:
        return {"jsonrpc": "2.0", "id": item["id"], "error": {"code": -32000, "message": "header not found"}}

    with JsonRpcServer(answer) as server:
        client, warnings = RpcClient([server.url], max_attempts=1), []
        profile = dataclasses.replace(load_profile("mainnet"), history_from_block=0)
        assert _history(client, snap, profile, prior, warnings, None) == prior.points
        assert any(w.startswith("price history not updated (") and "header not found" in w for w in warnings), warnings


def test_an_object_larger_than_a_run_reads_is_refused_by_its_length_or_what_comes(moto, tmp_path):
    """The bucket is untrusted input too: a live object (here /status) larger than the bound a
    run reads of one object is a one-line refusal, and publish then changes nothing."""
    import boto3

    from publisher.build.pipeline import build
    from publisher.publish import publish
    from publisher.publish.s3 import S3Sink

    s3 = boto3.client("s3", endpoint_url=moto, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    s3.create_bucket(Bucket="huge")
    s3.put_object(Bucket="huge", Key="small", Body=b"x" * 1000)
    s3.put_object(Bucket="huge", Key="status", Body=b"{" + b" " * 5000 + b"}")
    session = boto3.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
    sink = S3Sink("huge", endpoint_url=moto, session=session, max_read_bytes=1000)
    assert sink.get("small") == b"x" * 1000 and sink.get("absent") is None
    with pytest.raises(PublisherError, match=r"^s3://huge/status: larger than the 1000 bytes a run reads of one object$"):
        sink.get("status")
    build(F.snapshot(), load_profile("mainnet"), tmp_path / "out")
    with pytest.raises(PublisherError, match="larger than the 1000 bytes"):
        publish(tmp_path / "out", "huge", sink=sink)
    assert sink.requests["PUT"] == 0
    # A server that announces no length: refused once one byte past the bound has come.
    raw = io.BytesIO(b"x" * 5000)
    took = []
    read = raw.read
    raw.read = lambda n=-1: took.append(n) or read(n)  # what the sink asked of the stream
    sink.s3.get_object = lambda **_: {"Body": StreamingBody(raw, None)}
    before = sink.requests["bytes received"]
    with pytest.raises(PublisherError, match=r"^s3://huge/status: larger than the 1000 bytes"):
        sink.get("status")
    assert took == [1001] and raw.closed and sink.requests["bytes received"] - before == 1001
