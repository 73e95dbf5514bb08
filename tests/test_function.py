"""The rewards function: HTTP behaviour, input validation, params loading and fallback, the grid
agreement, and the deployable zip in a clean interpreter."""
from __future__ import annotations

import importlib.util
import json
import marshal
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from publisher.compute import params as P
from publisher.compute import rewards as R
from publisher.endpoints import registry
from publisher.endpoints.context import Context
from publisher.function import handler as H
from publisher.function.package import HANDLER, RUNTIME, build_zip

WAD = R.WAD
GOOD = "ggpStaked=1500&avaxStaked=1000"


def event(query: str = GOOD, method: str = "GET", path: str = "/rewards/byStake") -> dict:
    """An API Gateway HTTP API v2 / Function URL event, as AWS sends it."""
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query,
        "headers": {"accept": "application/json", "host": "abc.lambda-url.us-east-1.on.aws"},
        "requestContext": {"http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                                    "sourceIp": "203.0.113.7", "userAgent": "pytest"},
                           "requestId": "req", "stage": "$default"},
        "isBase64Encoded": False,
    }


@pytest.fixture(scope="module")
def params_doc(demo_snapshot):
    return P.rewards_params(demo_snapshot)


@pytest.fixture(scope="module")
def params_bytes(params_doc):
    return R.canonical_json(params_doc)


@pytest.fixture
def params_file(tmp_path, params_bytes, monkeypatch):
    """Params published to a file; the function points at it; a cold container."""
    path = tmp_path / "params.json"
    path.write_bytes(params_bytes)
    monkeypatch.setenv("REWARDS_PARAMS_URL", path.as_uri())
    monkeypatch.delenv("REWARDS_PARAMS_TTL", raising=False)
    H.CACHES.clear()
    yield path
    H.CACHES.clear()


def call(query: str = GOOD, **kw) -> tuple[int, dict, dict | None]:
    resp = H.handler(event(query, **kw), None)
    body = json.loads(resp["body"]) if resp.get("body") else None
    return resp["statusCode"], resp["headers"], body


# ---- answers ----------------------------------------------------------------------------------


def test_answer_echoes_inputs_stamp_and_the_formula(params_file, params_doc):
    resp = H.handler(event("ggpStaked=1500.25&avaxStaked=2000"), None)
    assert resp["statusCode"] == 200
    h = resp["headers"]
    assert h["Content-Type"] == "application/json" and h["Access-Control-Allow-Origin"] == "*"
    assert "x-params-stale" not in h
    cache = dict(part.split("=") for part in h["Cache-Control"].split(", ")[1:])
    assert h["Cache-Control"].startswith("public, ") and 0 <= int(cache["max-age"]) <= 60
    assert int(cache["stale-if-error"]) > 0
    body = json.loads(resp["body"])
    assert resp["body"].encode() == R.canonical_json(body)  # canonical bytes
    assert body["inputs"] == {"ggpStaked": "1500.25", "avaxStaked": "2000",
                              "ggpStakedWei": str(150025 * 10**16), "avaxStakedWei": str(2000 * WAD)}
    assert body["meta"] == {"network": params_doc["network"], "chainId": params_doc["chainId"], "block": params_doc["block"]}
    assert body["result"] == R.estimate(params_doc, 150025 * 10**16, 2000 * WAD)
    jsonschema.Draft202012Validator(registry.load_all()["/rewards/byStake"].schema).validate(body)


def test_every_grid_point_equals_the_function(params_file, demo_snapshot, params_bytes):
    ctx = Context(demo_snapshot)
    (_path, params_body), = registry.load_all()["/rewards/params"].render(ctx)
    assert R.canonical_json(params_body) == params_bytes  # the file the function reads is the published one
    (_, grid), = registry.load_all()["/rewards/grid"].render(ctx)
    assert len(grid["points"]) == 300
    for point in grid["points"]:
        resp = H.handler(event(point["query"]), None)
        assert resp["statusCode"] == 200, point["query"]
        body = json.loads(resp["body"])
        assert R.canonical_json(body["result"]) == R.canonical_json(point["result"]), point["query"]
        assert body["meta"]["block"] == grid["meta"]["block"]


def test_an_answer_from_a_stale_price_says_so(demo_snapshot, tmp_path, monkeypatch):
    """The Oracle's price is 63 days old at the params block (the bound: 7 days): the params say
    so, and so does every answer, in the grid and from the function alike."""
    import dataclasses

    snap = dataclasses.replace(demo_snapshot, oracle=dataclasses.replace(
        demo_snapshot.oracle, timestamp=demo_snapshot.block.timestamp - 63 * 86_400))
    ctx = Context(snap, oracle_max_age=7 * 86_400)
    (_, params), = registry.load_all()["/rewards/params"].render(ctx)
    reason = params["ggpPriceStaleReason"]
    assert params["ggpPriceStale"] is True and reason.startswith("the Oracle's GGP price was last set 63 days ago")
    path = tmp_path / "params.json"
    path.write_bytes(R.canonical_json(params))
    monkeypatch.setenv("REWARDS_PARAMS_URL", path.as_uri())
    (_, grid), = registry.load_all()["/rewards/grid"].render(ctx)
    point = grid["points"][7]
    H.CACHES.clear()
    try:
        status, _, body = call(point["query"])
    finally:
        H.CACHES.clear()
    assert status == 200
    assert {"code": "ggp_price_stale", "message": f"the GGP price is stale: {reason}"} in body["result"]["warnings"]
    assert R.canonical_json(point["result"]) == R.canonical_json(body["result"])
    # Params without the fields (published before them) say nothing of the price's age.
    old = {k: v for k, v in params.items() if not k.startswith("ggpPriceStale")}
    assert "ggp_price_stale" not in {w["code"] for w in R.estimate(old, 1500 * WAD, 1000 * WAD)["warnings"]}


def test_protocol_rejects_still_get_a_result(params_file):
    status, _, body = call("ggpStaked=1&avaxStaked=1500")
    assert status == 200
    assert {"collateral_below_minimum", "no_ggp_rewards", "avax_not_assignable"} <= {w["code"] for w in body["result"]["warnings"]}
    status, _, body = call("ggpStaked=0&avaxStaked=0")
    assert status == 200 and body["result"]["aprPct"] == 0 and body["result"]["collateralizationRatioPct"] is None


def test_decoding_and_tolerated_forms(params_file):
    base = call("ggpStaked=1500&avaxStaked=1000")[2]["result"]
    for query in ("avaxStaked=1000&ggpStaked=1500", "ggpStaked=1500.0&avaxStaked=01000",
                  "ggpStaked=1%35%300&avaxStaked=1000", "ggp%53taked=1500&avaxStaked=1000",
                  "ggpStaked=1500&&avaxStaked=1000&", "ggpStaked=1500.000000000000000000&avaxStaked=1000"):
        status, _, body = call(query)
        assert status == 200, query
        assert body["result"] == base, query


# ---- bad input --------------------------------------------------------------------------------

BAD = [
    ("ggpStaked=abc&avaxStaked=1000", "ggpStaked", "plain decimal"),
    ("ggpStaked=-5&avaxStaked=1000", "ggpStaked", "sign"),
    ("ggpStaked=%2B5&avaxStaked=1000", "ggpStaked", "sign"),
    ("ggpStaked=1e3&avaxStaked=1000", "ggpStaked", "exponent"),
    ("ggpStaked=1000&avaxStaked=1E3", "avaxStaked", "exponent"),
    ("ggpStaked=22500000.000000000000000001&avaxStaked=1000", "ggpStaked", "maximum"),
    ("ggpStaked=1000&avaxStaked=1000000001", "avaxStaked", "maximum"),
    ("ggpStaked=" + "9" * 80 + "&avaxStaked=1000", "ggpStaked", "longer"),
    ("ggpStaked=&avaxStaked=1000", "ggpStaked", "empty"),
    ("ggpStaked&avaxStaked=1000", "ggpStaked", "empty"),
    ("ggpStaked=1&ggpStaked=2&avaxStaked=1000", "ggpStaked", "more than once"),
    ("ggpStaked=1&avaxStaked=1000&avaxStaked=1000", "avaxStaked", "more than once"),
    ("ggpStaked=1&avaxStaked=1000&foo=1", "foo", "unknown parameter"),
    ("ggpstaked=1&avaxStaked=1000", "ggpstaked", "unknown parameter"),
    ("avaxStaked=1000", "ggpStaked", "required"),
    ("ggpStaked=1000", "avaxStaked", "required"),
    ("", "ggpStaked", "required"),
    ("ggpStaked=1.5.5&avaxStaked=1000", "ggpStaked", "plain decimal"),
    ("ggpStaked=.5&avaxStaked=1000", "ggpStaked", "plain decimal"),
    ("ggpStaked=5.&avaxStaked=1000", "ggpStaked", "plain decimal"),
    ("ggpStaked=1.0000000000000000001&avaxStaked=1000", "ggpStaked", "18 fractional"),
    ("ggpStaked=1%2C000&avaxStaked=1000", "ggpStaked", "plain decimal"),
    ("ggpStaked=1_000&avaxStaked=1000", "ggpStaked", "plain decimal"),
    ("ggpStaked=0x10&avaxStaked=1000", "ggpStaked", "not hexadecimal"),
    ("ggpStaked=0x3e8&avaxStaked=1000", "ggpStaked", "not hexadecimal"),  # no exponent for its 'e'
    ("ggpStaked=1e&avaxStaked=1000", "ggpStaked", "plain decimal"),
    ("ggpStaked=+1000&avaxStaked=1000", "ggpStaked", "'+' reads as a space"),
    ("ggpStaked=NaN&avaxStaked=1000", "ggpStaked", "plain decimal"),
    ("ggpStaked=Infinity&avaxStaked=1000", "ggpStaked", "plain decimal"),
    ("ggpStaked=%20100&avaxStaked=1000", "ggpStaked", "spaces"),
    ("ggpStaked=100+&avaxStaked=1000", "ggpStaked", "spaces"),
    ("ggpStaked=%D9%A1%D9%A2&avaxStaked=1000", "ggpStaked", "plain decimal"),  # Arabic-Indic digits
    ("ggpStaked=%zz&avaxStaked=1000", "ggpStaked", "percent-encoding"),
    ("ggpStaked=1%&avaxStaked=1000", "ggpStaked", "percent-encoding"),
    ("ggpStaked=%FF&avaxStaked=1000", "ggpStaked", "percent-encoding"),  # not UTF-8
    ("ggp%ZZ=1&avaxStaked=1000", None, "percent-encoding"),
    ("a=" + "1" * 2000, None, "longer"),
]


@pytest.mark.parametrize("query, name, why", BAD)
def test_bad_parameters_are_400_naming_the_parameter(params_file, query, name, why):
    resp = H.handler(event(query), None)
    assert resp["statusCode"] == 400, query
    assert resp["headers"]["Content-Type"] == "application/json"
    assert resp["headers"]["Access-Control-Allow-Origin"] == "*"
    body = json.loads(resp["body"])
    assert set(body) == {"error"} and body["error"]["code"] == "bad_parameter"
    message = body["error"]["message"]
    assert why in message, message
    if name:
        assert name in message, message
    assert resp["body"].encode() == R.canonical_json(body)


def test_bad_input_is_400_even_without_params(monkeypatch, tmp_path):
    monkeypatch.setenv("REWARDS_PARAMS_URL", (tmp_path / "missing.json").as_uri())
    H.CACHES.clear()
    assert call("ggpStaked=-1&avaxStaked=1")[0] == 400
    assert call(GOOD)[0] == 503


QUERY_CHARS = st.sampled_from([*list("&=%+.-eE0123456789abcdefxzAF \t/?#;,"), "ggpStaked", "avaxStaked", "ggpStaked=", "&avaxStaked=", "%2", "%25", "%C3%A9", "%ED%A0%80", "�", "é", "\x00"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.lists(QUERY_CHARS, max_size=40).map("".join) | st.text(max_size=200))
def test_random_query_strings_never_fail_the_server(params_file, query):
    resp = H.handler(event(query), None)
    assert resp["statusCode"] in (200, 400), (query, resp)
    body = json.loads(resp["body"])
    if resp["statusCode"] == 400:
        assert body["error"]["code"] == "bad_parameter" and body["error"]["message"]
    else:
        assert body["result"]["aprPct"] >= 0
    resp["body"].encode()  # representable as UTF-8


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ggp=st.integers(0, 22_500_000 * WAD), avax=st.integers(0, 10**9 * WAD))
def test_any_amount_in_range_is_answered_exactly(params_file, params_doc, ggp, avax):
    status, _, body = call(f"ggpStaked={R.whole_tokens(ggp)}&avaxStaked={R.whole_tokens(avax)}")
    assert status == 200
    assert body["inputs"]["ggpStakedWei"] == str(ggp) and body["inputs"]["avaxStakedWei"] == str(avax)
    assert body["result"] == json.loads(R.canonical_json(R.estimate(params_doc, ggp, avax)))


# ---- HTTP -------------------------------------------------------------------------------------


def test_methods_paths_and_cors(params_file):
    status, headers, body = call(method="POST")
    assert status == 405 and body["error"]["code"] == "method_not_allowed" and "GET" in headers["Allow"]
    resp = H.handler(event(method="OPTIONS"), None)
    assert resp["statusCode"] == 204 and resp["body"] == ""
    assert resp["headers"]["Access-Control-Allow-Origin"] == "*"
    assert "GET" in resp["headers"]["Access-Control-Allow-Methods"]
    resp = H.handler(event(method="HEAD"), None)
    assert resp["statusCode"] == 200 and resp["body"] == ""
    for path in ("/rewards/byStake//", "/rewards/bystake", "/", "/rewards/params", "/rewards/params/"):
        status, headers, body = call(path=path)
        assert status == 404 and body["error"]["code"] == "not_found", path
        assert headers["Access-Control-Allow-Origin"] == "*"
    # One trailing slash names the route, as the CDN's viewer function reads a file's path.
    assert H.handler(event(path="/rewards/byStake/"), None) == H.handler(event(), None)
    assert H.handler("not an event", None)["statusCode"] == 400
    assert H.handler({"rawPath": "/rewards/byStake", "rawQueryString": 7}, None)["statusCode"] == 400
    assert H.handler({"rawPath": "/rewards/byStake", "rawQueryString": GOOD, "requestContext": "x"}, None)["statusCode"] == 200


# ---- a staker's estimate -----------------------------------------------------------------------


@pytest.fixture
def built_params(built, monkeypatch):
    """The function pointed at a build's /rewards/params (its stakers' files beside it)."""
    monkeypatch.setenv("REWARDS_PARAMS_URL", (built / "rewards" / "params.json").as_uri())
    monkeypatch.delenv("REWARDS_PARAMS_TTL", raising=False)
    H.CACHES.clear()
    yield built
    H.CACHES.clear()


def test_a_stakers_estimate_is_the_formula_on_its_inputs_from_the_chain(built_params, demo_snapshot):
    """/rewards/estimate?address= for every staker equals the formula for that staker's inputs as
    the chain holds them, over the build's params; together the shares are the pool."""
    snap = demo_snapshot
    doc = json.loads((built_params / "rewards" / "params.json").read_bytes())
    params = R.parse_params(doc)
    stakes = P.stakes_at_distribution(snap)
    schema = registry.load_all()["/rewards/estimate"].schema
    paid, eligible = 0, 0
    for i, staker in enumerate(snap.stakers):
        address = staker.staker_addr if i % 2 else staker.staker_addr.lower()  # both spellings name the staker
        status, headers, body = call(f"address={address}", path="/rewards/estimate")
        assert status == 200 and "x-params-stale" not in headers, body
        jsonschema.Draft202012Validator(schema).validate(body)
        eligible_next = P.eligible_at(staker, params.next_distribution, params.eligibility_min_seconds)
        want = R.operator_estimate(params, ggp_staked=staker.ggp_staked, avax_staked=staker.avax_staked,
                                   avax_validating=staker.avax_validating,
                                   effective_ggp_staked=stakes[staker.staker_addr].effective, eligible_next=eligible_next)
        assert body["result"] == json.loads(R.canonical_json(want)), staker.staker_addr
        assert body["address"] == staker.staker_addr and body["eligibleNextDistribution"] is eligible_next
        assert body["inputs"]["ggpStakedWei"] == str(staker.ggp_staked) and body["meta"]["block"] == doc["block"]
        if eligible_next:
            want_ggp = stakes[staker.staker_addr].effective * WAD // params.tegs * params.nodeop_pool // WAD
            assert int(body["result"]["ggpPerCycleWei"]) == want_ggp
        else:
            assert body["result"]["ggpPerCycleWei"] == "0"
        paid += int(body["result"]["ggpPerCycleWei"])
        eligible += eligible_next
    assert eligible == doc["tegs"]["stakers"] >= 5
    assert params.nodeop_pool - eligible * (params.nodeop_pool // WAD + 1) <= paid <= params.nodeop_pool


def test_a_stakers_estimate_refuses_what_is_not_a_staker(built_params):
    for query, name in (("", "address is required: a staker's address, 0x followed by 40 hex digits"),
                        ("address=0x12", "address must be"),
                        ("address=" + "0x" + "g" * 40, "address must be"), ("address=0x" + "1" * 40 + "&address=0x" + "1" * 40, "more than once"),
                        ("ggpStaked=1", "unknown parameter 'ggpStaked': only address is accepted")):
        status, _, body = call(query, path="/rewards/estimate")
        assert status == 400 and name in body["error"]["message"], query
    status, _, body = call("address=0x" + "1" * 40, path="/rewards/estimate")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_a_stakers_file_is_found_next_to_the_params():
    a = "0x" + "ab" * 20
    assert H.staker_url("file:///srv/out/rewards/params.json", a) == f"file:///srv/out/rewards/{a}.json"
    assert H.staker_url("https://api.example/rewards/params", a) == f"https://api.example/rewards/{a}"
    with pytest.raises(R.ParamsError):
        H.staker_url("https://api.example/rewards-params.json", a)


def test_a_stakers_estimate_without_its_file_is_503_not_404(built_params, tmp_path, monkeypatch):
    """The params load, the staker's document cannot be read (not a missing file): 503."""
    only = tmp_path / "rewards"
    only.mkdir()
    (only / "params.json").write_bytes((built_params / "rewards" / "params.json").read_bytes())
    st = next(p for p in (built_params / "rewards").glob("0x*.json"))
    (only / st.name).write_text("{not json")
    monkeypatch.setenv("REWARDS_PARAMS_URL", (only / "params.json").as_uri())
    H.CACHES.clear()
    status, headers, body = call(f"address={st.stem}", path="/rewards/estimate")
    assert status == 503 and body["error"]["code"] == "staker_unavailable" and headers["Cache-Control"] == "no-store"


# ---- params loading ---------------------------------------------------------------------------


def test_params_are_cached_for_the_ttl(params_file, monkeypatch):
    monkeypatch.setenv("REWARDS_PARAMS_TTL", "60")
    first = call()
    params_file.unlink()  # within the TTL the container does not look again
    second = call()
    assert first[0] == second[0] == 200 and first[2] == second[2]
    assert "x-params-stale" not in second[1]


@pytest.mark.parametrize("broken", [
    b"{not json",
    b"[]",
    b'{"formatVersion": 2}',
    b"[" * 100_000 + b"]" * 100_000,
    b" " * (2 << 20),
    None,  # file removed
    "price-zero",
    "missing-field",
])
def test_refresh_failure_keeps_last_good_params_and_says_so(params_file, params_doc, monkeypatch, broken):
    monkeypatch.setenv("REWARDS_PARAMS_TTL", "0")  # refresh on every request
    good = call()
    assert good[0] == 200 and "x-params-stale" not in good[1]
    if broken is None:
        params_file.unlink()
    elif broken == "price-zero":
        params_file.write_bytes(R.canonical_json({**params_doc, "ggpPriceInAvaxWei": "0"}))
    elif broken == "missing-field":
        params_file.write_bytes(R.canonical_json({k: v for k, v in params_doc.items() if k != "tegs"}))
    else:
        params_file.write_bytes(broken)
    status, headers, body = call()
    assert status == 200 and body == good[2]
    assert headers["x-params-stale"] == "true"
    reason = headers["x-params-error"]
    assert reason and reason.isascii() and len(reason) <= 200 and str(params_file) not in reason
    assert "max-age=0" in headers["Cache-Control"]
    # A cold container with only the broken document cannot answer.
    H.CACHES.clear()
    status, headers, body = call()
    assert status == 503 and body["error"]["code"] == "params_unavailable"
    assert headers["Cache-Control"] == "no-store"
    # Fixed again: fresh answers, no stale marker.
    params_file.write_bytes(R.canonical_json(params_doc))
    status, headers, _ = call()
    assert status == 200 and "x-params-stale" not in headers


def test_no_params_url_is_503(monkeypatch):
    monkeypatch.delenv("REWARDS_PARAMS_URL", raising=False)
    H.CACHES.clear()
    status, _, body = call()
    assert status == 503 and "REWARDS_PARAMS_URL" in body["error"]["message"]
    monkeypatch.setenv("REWARDS_PARAMS_URL", "ftp://example.invalid/params.json")
    assert call()[0] == 503
    H.CACHES.clear()


@pytest.fixture
def params_server(params_bytes):
    """A local HTTP origin for the params, switchable to failing."""
    state = {"status": 200, "body": params_bytes}

    class Origin(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(state["status"])
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(state["body"])

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/rewards/params", state
    finally:
        server.shutdown()
        server.server_close()


def test_params_over_http_with_fallback(params_server, monkeypatch):
    url, state = params_server
    monkeypatch.setenv("REWARDS_PARAMS_URL", url)
    monkeypatch.setenv("REWARDS_PARAMS_TTL", "0")
    H.CACHES.clear()
    good = call()
    assert good[0] == 200
    state["status"], state["body"] = 500, b'{"error":"boom"}'
    status, headers, body = call()
    assert status == 200 and body == good[2]
    assert headers["x-params-stale"] == "true" and headers["x-params-error"] == "HTTP 500 from the params URL"
    H.CACHES.clear()


# ---- the deployable zip -----------------------------------------------------------------------

CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import handler
event = json.loads(sys.argv[2])
resp = handler.handler(event, None)
third_party = sorted(n for n in {m.split(".")[0] for m in sys.modules}
                     if n not in sys.stdlib_module_names and n not in ("handler", "rewards", "line", "__main__"))
print(json.dumps({"resp": resp, "third_party": third_party, "path": sys.path,
                  "files": [handler.__file__, handler.rewards.__file__]}))
"""


def test_zip_is_deterministic_and_minimal(tmp_path):
    a, size = build_zip(tmp_path / "a" / "function.zip")
    b, _ = build_zip(tmp_path / "b" / "function.zip")
    # Bytecode from another interpreter process is the same bytes too.
    other = subprocess.run([sys.executable, "-c", "import sys; from publisher.function.package import build_zip; "
                            "build_zip(sys.argv[1])", str(tmp_path / "c" / "function.zip")], capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    assert a.read_bytes() == b.read_bytes() == (tmp_path / "c" / "function.zip").read_bytes()
    assert size == a.stat().st_size < 80_000  # three small modules and their bytecode (three routes)
    with zipfile.ZipFile(a) as zf:
        modules = ("handler.py", "line.py", "rewards.py")
        assert zf.namelist() == sorted([*modules, *(importlib.util.cache_from_source(m) for m in modules)])
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in zf.infolist())
        import publisher.compute.rewards as src
        assert zf.read("rewards.py") == Path(src.__file__).read_bytes()
    assert HANDLER == "handler.handler"


def test_zip_bytecode_is_this_runtimes_compiled_sources(tmp_path):
    zip_path, _ = build_zip(tmp_path / "function.zip")
    with zipfile.ZipFile(zip_path) as zf:
        for name in ("handler.py", "rewards.py"):
            pyc = zf.read(importlib.util.cache_from_source(name))
            # PEP 552 header: magic, flags (bit 0: hash-based; bit 1 clear: never checked), source hash.
            assert pyc[:4] == importlib.util.MAGIC_NUMBER
            assert int.from_bytes(pyc[4:8], "little") == 0b01
            assert pyc[8:16] == importlib.util.source_hash(zf.read(name))
            code = marshal.loads(pyc[16:])
            assert code.co_filename == name
            assert code.co_consts[0] == compile(zf.read(name), name, "exec").co_consts[0]  # the module docstring
    assert f"python{sys.version_info.major}.{sys.version_info.minor}" == RUNTIME


EXTRACTED_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import handler
print(json.dumps({"resp": handler.handler(json.loads(sys.argv[2]), None),
                  "cached": [handler.__cached__, handler.rewards.__cached__]}))
"""


def test_extracted_function_imports_its_bytecode_and_falls_back_to_source(tmp_path, params_file):
    """Lambda extracts the zip into a read-only directory (-B: nothing is written): the modules
    load from the shipped bytecode without reading the sources, and without the bytecode the
    sources are what runs."""
    zip_path, _ = build_zip(tmp_path / "function.zip")
    task = tmp_path / "task"
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(task)
    for name in ("handler.py", "rewards.py"):  # sources that fail if anything reads them
        (task / name).write_text("raise SystemExit('source read')\n")
    env = {"PATH": os.environ.get("PATH", ""), "REWARDS_PARAMS_URL": params_file.as_uri()}
    query = "ggpStaked=2500.5&avaxStaked=3000"

    def run():
        return subprocess.run([sys.executable, "-I", "-S", "-B", "-c", EXTRACTED_CHILD, str(task), json.dumps(event(query))],
                              capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)

    proc = run()
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["resp"]["statusCode"] == 200
    assert out["resp"]["body"] == H.handler(event(query), None)["body"]
    assert out["cached"] == [str(task / importlib.util.cache_from_source(n)) for n in ("handler.py", "rewards.py")]
    shutil.rmtree(task / "__pycache__")
    proc = run()
    assert proc.returncode == 1 and "source read" in proc.stderr
    assert not (task / "__pycache__").exists()


LAZY_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
heavy = ("dataclasses", "typing", "inspect", "line")
import handler
first = json.loads(sys.argv[2])
answers = [handler.handler(first, None)["statusCode"]]
loaded = [sorted(n for n in heavy if n in sys.modules)]
answers.append(handler.handler(json.loads(sys.argv[3]), None)["statusCode"])
loaded.append(sorted(n for n in heavy if n in sys.modules))
print(json.dumps({"answers": answers, "loaded": loaded}))
"""


def test_a_cold_start_imports_the_lines_module_only_for_a_withdrawal_estimate(tmp_path, built):
    """The rewards routes start without the line's module and the dataclasses it needs (most of a
    cold start's import); the first withdrawal estimate imports it and is answered."""
    zip_path, _ = build_zip(tmp_path / "function.zip")
    task = tmp_path / "task"
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(task)
    env = {"PATH": os.environ.get("PATH", ""), "REWARDS_PARAMS_URL": (built / "rewards" / "params.json").as_uri(),
           "QUEUE_PARAMS_URL": (built / "withdrawals" / "params.json").as_uri()}
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", LAZY_CHILD, str(task),
                           json.dumps(event("ggpStaked=2500.5&avaxStaked=3000")),
                           json.dumps(event("amount=100", path=H.ESTIMATE_PATH))],
                          capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["answers"] == [200, 200]
    assert out["loaded"] == [[], ["dataclasses", "inspect", "line"]]


def test_zip_runs_on_the_standard_library_alone(tmp_path, params_file, params_bytes):
    zip_path, _ = build_zip(tmp_path / "function.zip")
    query = "ggpStaked=2500.5&avaxStaked=3000"
    env = {"PATH": os.environ.get("PATH", ""), "REWARDS_PARAMS_URL": params_file.as_uri()}
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", CHILD, str(zip_path), json.dumps(event(query))],
                          capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["third_party"] == []
    assert all(f.startswith(str(zip_path)) for f in out["files"])
    assert not any("site-packages" in p for p in out["path"])
    resp = out["resp"]
    assert resp["statusCode"] == 200 and "x-params-stale" not in resp["headers"]
    local = H.handler(event(query), None)
    assert resp["body"] == local["body"]  # the zip and the package answer byte for byte alike
