"""The RPC path under failure: reverting sub-calls, a flaky node, dead fallbacks, the wrong chain,
secret URLs, nodes that refuse big requests; and the ABI codec the reader decodes with."""
from __future__ import annotations

import dataclasses
import time

import eth_abi
import pytest
from click.testing import CliRunner
from ggp_devnet.anvil import free_port
from ggp_devnet.seed import MULTICALL3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.chain import head
from support.flaky_proxy import FlakyProxy
from support.jsonrpc import JsonRpcServer

from publisher.chain import abis, codec
from publisher.chain.abi import Fn
from publisher.chain.multicall import (
    CALL_OVERHEAD_GAS,
    CHUNK_GAS,
    Call,
    CallFailed,
    Calls,
    Multicall,
    aggregate3_payload,
    decode_results,
    one_word_results,
)
from publisher.chain.reader import GAS_PER_MINIPOOL, GAS_PER_STAKER, STAKER_PAGE, Reader, pool_calls, staker_page_calls
from publisher.chain.rpc import RawParams, RpcClient, RpcError, RpcUnavailable, mask_url
from publisher.cli import main as cli
from publisher.collect import collect
from publisher.errors import PublisherError


def fast_client(urls: list[str], **kw) -> RpcClient:
    """Retries that keep a test fast: short timeout, tiny backoff."""
    return RpcClient(urls, **{"timeout": 2.0, "backoff": 0.01, "max_backoff": 0.02, **kw})


@pytest.fixture(scope="module")
def reference(demo, demo_profile):
    """The chain snapshot read directly, pinned so later reads can be compared byte for byte."""
    number = int(RpcClient([demo.url]).request("eth_blockNumber"), 16)
    client = RpcClient([demo.url])
    snap = Reader(client, demo_profile).read(block=number)
    return snap, client.counters


# ---- failing sub-calls -------------------------------------------------------------------------


def test_a_reverting_sub_call_is_reported_with_contract_function_and_arguments(demo, rpc):
    staking = demo.addresses["Staking"]
    number, _ = head(rpc)
    count = len(demo.scenario.stakers)
    mc = Multicall(rpc, MULTICALL3, hex(number))
    calls = [
        Call(staking, abis.getStakerCount, contract="Staking"),
        Call(staking, abis.getStakers, (count + 5, 10), contract="Staking"),
    ]
    with pytest.raises(CallFailed) as err:
        mc.run(calls)
    text = str(err.value)
    assert f"Staking.getStakers({count + 5}, 10) panicked (code 0x11)" in text
    assert f"at block {number}" in text and "\n" not in text


def test_every_failed_sub_call_is_counted_and_reasons_are_decoded(demo, rpc):
    a = demo.addresses
    stranger = "0x" + "cd" * 20
    mc = Multicall(rpc, MULTICALL3, "latest")
    inner = [(a["Staking"], False, abis.getStakers.encode(10_000, 1))]
    calls = [
        Call(MULTICALL3, abis.aggregate3, (inner,), contract="Multicall3"),  # Error(string)
        Call(a["Staking"], Fn("getGGPStake(address)", "uint256"), (stranger,), contract="Staking"),  # custom error
        Call(a["Oracle"], abis.getGGPPriceInAVAX, contract="Oracle"),
    ]
    with pytest.raises(CallFailed) as err:
        mc.run(calls)
    text = str(err.value)
    assert "Multicall3.aggregate3([1 items]) reverted: Multicall3: call failed" in text
    assert "(and 1 more)" in text
    with pytest.raises(CallFailed) as err:
        mc.run(calls[1:])
    # The custom error is named from the compiled ABIs, not shown as a raw selector.
    assert f"Staking.getGGPStake({stranger}) reverted with StakerNotFound()" in str(err.value)


def test_an_optional_sub_call_that_reverts_gives_none(demo, rpc):
    a = demo.addresses
    mc = Multicall(rpc, MULTICALL3, "latest")
    out = mc.run([
        Call(a["Staking"], abis.getStakers, (10_000, 1), contract="Staking", optional=True),
        Call(a["Staking"], abis.getStakerCount, contract="Staking"),
    ])
    assert out == [None, len(demo.scenario.stakers)]


def test_calls_of_one_function_read_like_single_calls(demo, rpc):
    a = demo.addresses
    mc = Multicall(rpc, MULTICALL3, "latest", chunk_gas=200_000)  # several chunks
    stakers = [(s["stakerAddr"],) for s in demo.scenario.stakers[:20]] + [("0x" + "cd" * 20,)]
    stake = Fn("getGGPStake(address)", "uint256")  # reverts for an address that is not a staker
    single = [Call(a["Staking"], stake, args, gas=40_000, contract="Staking", optional=True) for args in stakers]
    grouped = Calls(a["Staking"], stake, stakers, gas=40_000, contract="Staking", optional=True)
    count = Call(a["Staking"], abis.getStakerCount, contract="Staking")
    out = mc.run([count, grouped, count])
    assert out == mc.run([count, *single, count])
    assert out[-2] is None and out[0] == out[-1] == len(demo.scenario.stakers)
    with pytest.raises(CallFailed) as err:  # a failure names the call inside the group
        mc.run([count, grouped._replace(optional=False)])
    assert f"Staking.getGGPStake({stakers[-1][0]}) reverted with StakerNotFound()" in str(err.value)


def test_answers_decoded_while_the_next_request_is_out_fail_the_run_like_any_other(demo, rpc):
    calls = [Call(demo.addresses["Staking"], abis.getStakerCount, contract="Staking")] * 40
    several = {"batch_size": 1, "chunk_gas": 200_000}  # several requests: answers decode on a thread
    assert Multicall(rpc, MULTICALL3, "latest", **several).run(calls) == [len(demo.scenario.stakers)] * 40
    with FlakyProxy(demo.url, [None, "random"]) as proxy, pytest.raises(CallFailed, match=r"returned a malformed result \("):
        Multicall(fast_client([proxy.url]), MULTICALL3, "latest", **several).run(calls)


# ---- a flaky node ------------------------------------------------------------------------------


def test_a_flaky_rpc_still_yields_the_identical_snapshot(demo, demo_profile, reference):
    snap, _ = reference
    faults = [429, 500, "hang", None, 503, "reset", None, "garbage", None, 502, "busy", None, "busy items", 504]
    with FlakyProxy(demo.url, faults, hang_seconds=1.5) as proxy:
        client = fast_client([proxy.url], timeout=0.4)
        got = Reader(client, demo_profile).read(block=snap.block.number)
    assert got == snap
    assert got.to_json() == snap.to_json()
    injected = [f for f in faults if f is not None]
    assert proxy.injected == injected
    assert client.counters.retries == len(injected)
    assert client.counters.http_requests == proxy.requests


def test_the_minipools_are_read_beside_the_stakers_views(demo, demo_profile, reference):
    """The minipools' round goes out on a connection of its own beside the stakers' views: while a
    slow node still holds it, the views are asked for. The snapshot is the same, every request of
    either connection counted."""
    snap, _ = reference
    minipools, views = (fn.selector.hex().encode() for fn in (abis.getMinipool, abis.getEffectiveGGPStaked))
    seen: list[str] = []

    def slow_minipools(n: int, body: bytes) -> None:
        if minipools in body:
            seen.append("minipools asked")
            time.sleep(0.8)
            seen.append("minipools answered")
        elif views in body:
            seen.append("views asked")

    with FlakyProxy(demo.url, on_request=slow_minipools) as proxy:
        client = fast_client([proxy.url])
        got = Reader(client, demo_profile).read(block=snap.block.number)
    assert got == snap
    assert seen.index("views asked") < seen.index("minipools answered")
    assert client.counters.http_requests == proxy.requests


def test_retries_are_bounded_and_the_error_names_the_last_cause(demo):
    with FlakyProxy(demo.url, [503] * 10) as proxy:
        client = fast_client([proxy.url], max_attempts=4)
        with pytest.raises(RpcUnavailable) as err:
            client.request("eth_chainId")
    assert proxy.requests == 4 and client.counters.retries == 3
    assert str(err.value) == "RPC failed for eth_chainId after 4 attempts: HTTP 503"


def test_a_batch_rate_limited_item_by_item_is_retried(demo):
    with FlakyProxy(demo.url, ["busy items", "busy items"]) as proxy:
        client = fast_client([proxy.url])
        got = client.batch([("eth_chainId", []), ("eth_blockNumber", []), ("net_version", [])])
    assert int(got[0], 16) == 43112 and int(got[1], 16) > 0 and got[2] == "43112"
    assert proxy.injected == ["busy items", "busy items"] and client.counters.retries == 2


def test_an_error_about_the_request_itself_is_not_retried(demo):
    # Providers use -32005 for rate limits and for over-wide queries alike; only the first is
    # worth repeating, the second needs a smaller request from the caller.
    with FlakyProxy(demo.url, ["too wide"]) as proxy:
        client = fast_client([proxy.url])
        with pytest.raises(RpcError) as err:
            client.request("eth_getLogs", [{"fromBlock": "0x0", "toBlock": "latest"}])
    assert err.value.code == -32005 and "max block range" in err.value.rpc_message
    assert client.counters.retries == 0 and proxy.requests == 1


def test_the_second_url_is_used_when_the_first_is_dead(demo, demo_profile, reference):
    snap, _ = reference
    dead = f"http://127.0.0.1:{free_port()}"
    client = fast_client([dead, demo.url])
    got = Reader(client, demo_profile).read(block=snap.block.number)
    assert got == snap
    assert client.counters.retries == 1 and client.url == demo.url


def test_an_unreachable_node_fails_fast_without_splitting_calls(demo):
    client = fast_client([f"http://127.0.0.1:{free_port()}"], max_attempts=3)
    calls = [Call(demo.addresses["Staking"], abis.getStakerCount, contract="Staking")] * 500
    with pytest.raises(RpcUnavailable) as err:
        Multicall(client, MULTICALL3, "latest", chunk_gas=1_000_000).run(calls)
    assert err.value.unreachable
    # The first request and the one sent beside it, each tried 3 times (the second may still be
    # trying when the first gives up): no halving retries against a node that is not there.
    assert 3 <= client.counters.http_requests <= 6


def test_the_wrong_chain_id_fails_with_a_clear_message(demo_profile):
    profile = dataclasses.replace(demo_profile, chain_id=1)
    with pytest.raises(PublisherError) as err:
        collect(profile)
    # Sources are named by kind: a URL could carry a key or an internal host.
    assert str(err.value) == "RPC serves chain id 43112, expected 1"


# ---- the environment's proxy settings ----------------------------------------------------------


def test_the_environment_s_proxy_and_no_proxy_are_honoured_request_after_request(monkeypatch):
    # Read once per host, not per request (see transport._Session): the second request and the
    # second host must still go where the environment says.
    with JsonRpcServer(lambda item: {"jsonrpc": "2.0", "id": item["id"], "result": "0xa868"}) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "direct.invalid")
        proxied = fast_client(["http://node.invalid:8545/ext/bc/C/rpc"], max_attempts=1)
        assert [proxied.request("eth_chainId") for _ in range(3)] == ["0xa868"] * 3
        assert proxy.paths == ["http://node.invalid:8545/ext/bc/C/rpc"] * 3  # a forward proxy's request targets
        direct = fast_client(["http://direct.invalid:8545"], max_attempts=1, session=proxied.session)
        with pytest.raises(RpcUnavailable):
            direct.request("eth_chainId")  # not through the proxy: the name does not resolve
        assert len(proxy.paths) == 3


# ---- secrets in URLs ---------------------------------------------------------------------------


@pytest.mark.parametrize("url, shown", [
    ("http://127.0.0.1:9/secret-key", "http://127.0.0.1:9/***"),
    ("https://user:hunter2@rpc.example.com/ext/bc/C/rpc", "https://rpc.example.com/***"),
    ("https://rpc.example.com/?apikey=hunter2", "https://rpc.example.com/***"),
    ("http://127.0.0.1:8545", "http://127.0.0.1:8545"),
])
def test_mask_url_keeps_only_scheme_host_and_port(url, shown):
    assert mask_url(url) == shown


def test_rpc_urls_never_reach_error_messages(demo, demo_profile):
    # A dead URL carrying a key in its path.
    client = fast_client(["http://127.0.0.1:9/secret-key"], max_attempts=2)
    with pytest.raises(PublisherError) as err:
        Reader(client, demo_profile).read()
    assert "secret-key" not in str(err.value) and "127.0.0.1" not in str(err.value)
    assert str(err.value).startswith("RPC failed for batch of 2 after 2 attempts: connection error")
    # A live node behind a keyed URL that serves the wrong chain.
    with FlakyProxy(demo.url) as proxy:
        keyed = f"{proxy.url}/v1/secret-key?token=hunter2"
        with pytest.raises(PublisherError) as err:
            Reader(fast_client([keyed]), dataclasses.replace(demo_profile, chain_id=1)).read()
    assert str(err.value) == "RPC serves chain id 43112, expected 1"


def test_the_cli_never_prints_a_keyed_rpc_url(demo, tmp_path):
    with FlakyProxy(demo.url) as proxy:
        keyed = f"{proxy.url}/ext/bc/C/rpc/secret-key"
        # Fuji expects chain 43113; the devnet answers 43112, so the run stops at the first request.
        result = CliRunner().invoke(cli, ["snapshot", "--network", "fuji", "--rpc-url", keyed, "--out", str(tmp_path / "s.json")])
    assert result.exit_code == 1
    assert "secret-key" not in result.output
    assert result.output.strip() == "error: RPC serves chain id 43112, expected 43113"


# ---- nodes that refuse big requests ------------------------------------------------------------


def test_chunks_are_halved_when_the_node_answers_out_of_gas(demo, demo_profile, reference):
    snap, direct = reference
    with FlakyProxy(demo.url, max_call_data=20_000) as proxy:
        client = fast_client([proxy.url])
        got = Reader(client, demo_profile).read(block=snap.block.number)
    assert got == snap
    assert proxy.refused_calls > 0
    assert client.counters.http_requests > direct.http_requests
    assert client.counters.eth_calls > direct.eth_calls


def test_requests_are_split_when_the_node_answers_413(demo, demo_profile, reference):
    snap, direct = reference
    with FlakyProxy(demo.url, max_body=30_000) as proxy:
        client = fast_client([proxy.url])
        got = Reader(client, demo_profile).read(block=snap.block.number)
    assert got == snap
    assert proxy.refused_bodies > 0
    assert client.counters.http_requests > direct.http_requests


def test_splits_while_answers_decode_on_a_thread_read_the_same(demo, rpc):
    a = demo.addresses
    stakers = [(s["stakerAddr"],) for s in demo.scenario.stakers]
    calls = [Calls(a["Staking"], abis.getEffectiveGGPStaked, stakers, gas=40_000, contract="Staking"),
             Calls(a["ClaimNodeOp"], abis.isEligible, stakers, gas=40_000, contract="ClaimNodeOp")]
    block = hex(head(rpc)[0])
    want = Multicall(rpc, MULTICALL3, block).run(calls)
    # Several requests of several chunks each (decoded on a thread, built ahead), then refused:
    # chunks halved, then requests of fewer chunks than were built ahead.
    for limits in ({"max_call_data": 3_000}, {"max_body": 8_000}):
        with FlakyProxy(demo.url, **limits) as proxy:
            assert Multicall(fast_client([proxy.url]), MULTICALL3, block, batch_size=3, chunk_gas=400_000).run(calls) == want
        assert proxy.refused_calls + proxy.refused_bodies > 0


# What mainnet's contracts take per row (getStakers reads each staker field from Storage), gas.
MAINNET_GAS = {"getStakers": 39_000, "getMinipool": 88_000, "balanceOf": 30_000}


def test_the_collection_round_stays_under_the_gas_cap_at_mainnet_costs():
    """Every chunk of the staker and minipool round of a large read, costed at what mainnet's
    contracts take, stays within the chunk budget: 10 M under the 50 M eth_call cap of public
    nodes, so a chunk is never refused for its gas (refused chunks are halved and sent again)."""
    a = {"Staking": "0x" + "11" * 20, "MinipoolManager": "0x" + "22" * 20, "TokenggAVAX": "0x" + "33" * 20}
    calls = [*staker_page_calls(a, 100_000), *pool_calls(a, 30_000, "0x" + "44" * 20)]
    groups = [Calls(c.target, c.fn, (c.args,), c.gas, c.contract) if isinstance(c, Call) else c for c in calls]
    real = []  # per call, in the order _encode numbers them
    for g in groups:
        per_row = MAINNET_GAS[g.fn.name]
        for args in g.args:
            rows = min(STAKER_PAGE, 100_000 - args[0]) if g.fn.name == "getStakers" else 1
            real.append(rows * per_row + CALL_OVERHEAD_GAS)
    _, chunks = Multicall(RpcClient(["http://127.0.0.1:9"]), MULTICALL3, "latest")._encode(groups)
    assert len(chunks) > 10
    worst = max(sum(real[i] for i in chunk) for chunk in chunks)
    assert worst <= CHUNK_GAS <= 50_000_000 - 10_000_000, worst


def test_the_gas_estimates_cover_what_the_devnet_contracts_take(demo, rpc):
    """Execution gas of a staker page and of one minipool, measured on our contracts (cheaper
    than mainnet's, which keep every field in Storage): the estimates are above them."""
    a = demo.addresses
    count = eth_call_int(rpc, a["Staking"], abis.getStakerCount)

    def execution(to: str, data: bytes) -> int:
        total = int(rpc.request("eth_estimateGas", [{"to": to, "data": "0x" + data.hex()}, "latest"]), 16)
        return total - 21_000 - sum(16 if b else 4 for b in data)  # the transaction's own cost

    page = execution(a["Staking"], abis.getStakers.encode(0, count))
    assert page <= GAS_PER_STAKER * count, page / count
    one = max(execution(a["MinipoolManager"], abis.getMinipool.encode(i)) for i in range(0, 64, 9))
    assert 40_000 < one <= GAS_PER_MINIPOOL, one


def eth_call_int(client: RpcClient, to: str, fn: Fn) -> int:
    return fn.decode(bytes.fromhex(client.request("eth_call", [{"to": to, "data": "0x" + fn.encode().hex()}, "latest"])[2:]))


def test_a_single_call_too_heavy_for_the_node_fails_clearly(demo):
    with FlakyProxy(demo.url, max_call_data=100) as proxy:
        mc = Multicall(fast_client([proxy.url]), MULTICALL3, "latest")
        with pytest.raises(CallFailed) as err:
            mc.run([Call(demo.addresses["Staking"], abis.getStakers, (0, 0), contract="Staking")] * 2)
    assert "multicall of 1 calls from Staking.getStakers(0, 0) failed: out of gas" in str(err.value)


# ---- the ABI codec agrees with eth_abi ----------------------------------------------------------

BASIC = ["uint8", "uint32", "uint112", "uint192", "uint256", "int8", "int64", "int256", "address", "bool",
         "bytes1", "bytes4", "bytes32", "bytes", "string"]


def _types(depth: int = 2):
    leaf = st.sampled_from(BASIC)
    if depth == 0:
        return leaf
    inner = _types(depth - 1)
    return st.one_of(
        leaf,
        inner.map(lambda t: t + "[]"),
        st.lists(inner, min_size=1, max_size=4).map(lambda ts: "(" + ",".join(ts) + ")"),
    )


def _values(t: str):
    if t.endswith("[]"):
        return st.lists(_values(t[:-2]), max_size=4)
    if t.startswith("("):
        return st.tuples(*[_values(x) for x in codec.split_types(t[1:-1])])
    if t.startswith("uint"):
        return st.integers(0, 2 ** int(t[4:]) - 1)
    if t.startswith("int"):
        bits = int(t[3:])
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if t == "address":
        return st.binary(min_size=20, max_size=20).map(lambda b: "0x" + b.hex())
    if t == "bool":
        return st.booleans()
    if t == "bytes":
        return st.binary(max_size=70)
    if t == "string":
        return st.text(max_size=20)
    return st.binary(min_size=int(t[5:]), max_size=int(t[5:]))


@st.composite
def typed_values(draw):
    types = draw(st.lists(_types(), min_size=1, max_size=4))
    return types, draw(st.tuples(*[_values(t) for t in types]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_values())
def test_codec_encodes_and_decodes_exactly_like_eth_abi(tv):
    types, values = tv
    encoded = eth_abi.encode(types, values)
    assert codec.encode(types, values) == encoded
    assert codec.decode(types, encoded) == eth_abi.decode(types, encoded)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_values(), st.data())
def test_codec_never_accepts_what_eth_abi_rejects(tv, data):
    types, values = tv
    encoded = bytearray(eth_abi.encode(types, values))
    if encoded:
        for _ in range(data.draw(st.integers(1, 3))):
            encoded[data.draw(st.integers(0, len(encoded) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(encoded)))
    for blob in (bytes(encoded), bytes(encoded[:cut])):
        try:
            ours = codec.decode(types, blob)
        except Exception:
            continue  # stricter than eth_abi is fine
        assert ours == eth_abi.decode(types, blob)


def test_codec_rejects_bad_values_like_eth_abi():
    for types, values in ((["uint8"], (256,)), (["int8"], (-129,)), (["uint256"], (-1,)), (["bool"], (1,)),
                          (["uint256"], (True,)), (["address"], ("0x1234",)), (["bytes2"], (b"abc",)),
                          (["address"], ("0x" + "zz" * 20,)), (["address"], (b"\x01" * 21,)),
                          (["string"], (b"x",)), (["bytes"], ("x",)), (["uint256[]"], (5,))):
        with pytest.raises(eth_abi.exceptions.EncodingError):
            eth_abi.encode(types, values)
        with pytest.raises(codec.EncodingError):
            codec.encode(types, values)


def test_types_the_codec_leaves_out_go_to_eth_abi_with_the_codecs_errors():
    encoded = eth_abi.encode(["uint256[2]", "fixed128x18"], [(1, 2), 0])
    assert codec.decode(["uint256[2]", "fixed128x18"], encoded) == eth_abi.decode(["uint256[2]", "fixed128x18"], encoded)
    assert codec.encode(["uint256[2]"], [(1, 2)]) == eth_abi.encode(["uint256[2]"], [(1, 2)])
    with pytest.raises(codec.InsufficientDataBytes):
        codec.decode(["uint256[2]"], encoded[:40])
    with pytest.raises(codec.EncodingError):
        codec.encode(["uint8[2]"], [(1, 256)])


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=20, max_size=20), st.sampled_from(["0x", "0X", ""]), st.booleans())
def test_checksum_matches_eip55(raw, prefix, upper):
    from eth_utils import to_checksum_address
    text = raw.hex().upper() if upper else raw.hex()
    assert codec.checksum(prefix + text) == to_checksum_address(raw)


@pytest.mark.parametrize("bad", ["0x" + "ab" * 19, "0x" + "ab" * 21, "0x" + "zz" * 20, "0x" + "ab " * 13 + "a",
                                 "0x" + "é" * 40])
def test_checksum_refuses_what_is_not_a_hex_address(bad):
    with pytest.raises(ValueError):
        codec.checksum(bad)


CALLS3 = st.lists(st.tuples(st.binary(min_size=20, max_size=20).map(lambda b: "0x" + b.hex()), st.binary(max_size=100)),
                  max_size=6)
RESULTS = st.lists(st.tuples(st.booleans(), st.binary(max_size=100)), max_size=6)


def call3(target: str, data: bytes) -> bytes:
    """One ``Call3(target, allowFailure=true, callData)`` struct as eth_abi encodes it (less the
    offset word that heads a lone dynamic tuple)."""
    return eth_abi.encode(["(address,bool,bytes)"], [(target, True, data)])[32:]


@settings(max_examples=300, deadline=None)
@given(CALLS3, RESULTS)
def test_the_aggregate3_wire_format_agrees_with_eth_abi(calls, results):
    payload = aggregate3_payload([call3(target, data) for target, data in calls])
    assert payload == abis.aggregate3.selector + eth_abi.encode(["(address,bool,bytes)[]"], [[(t, True, d) for t, d in calls]])
    encoded = eth_abi.encode(["(bool,bytes)[]"], [results])
    assert decode_results(encoded) == results == list(codec.decode(["(bool,bytes)[]"], encoded)[0])


@settings(max_examples=300, deadline=None)
@given(RESULTS, st.data())
def test_aggregate3_results_are_never_accepted_where_eth_abi_rejects_them(results, data):
    encoded = bytearray(eth_abi.encode(["(bool,bytes)[]"], [results]))
    for _ in range(data.draw(st.integers(1, 3))):
        encoded[data.draw(st.integers(0, len(encoded) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(encoded)))
    for blob in (bytes(encoded), bytes(encoded[:cut])):
        try:
            ours = decode_results(blob)
        except codec.DecodingError:
            continue  # stricter than eth_abi is fine
        assert ours == list(eth_abi.decode(["(bool,bytes)[]"], blob)[0])


ONE_WORD = ["uint8", "uint32", "uint256", "int8", "int256", "address", "bool", "bytes4", "bytes32"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ONE_WORD).flatmap(lambda t: st.tuples(st.just(t), _values(t))), st.binary(max_size=40))
def test_functions_of_one_word_encode_and_decode_like_eth_abi(tv, noise):
    typ, value = tv
    fn = Fn(f"f({typ})", typ)
    assert fn.encode(value) == fn.selector + eth_abi.encode([typ], [value])
    encoded = eth_abi.encode([typ], [value])
    assert fn.decode(encoded) == eth_abi.decode([typ], encoded)[0]
    for blob in (noise, encoded[:-1], noise[:32] + encoded[32:]):  # garbage, short, and bad padding
        try:
            ours = fn.decode(blob)
        except codec.DecodingError:
            continue
        assert ours == eth_abi.decode([typ], blob)[0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.binary(min_size=32, max_size=32) | st.binary(max_size=70)), max_size=8),
       st.data())
def test_one_word_results_are_read_only_where_decode_results_reads_the_same(results, data):
    encoded = eth_abi.encode(["(bool,bytes)[]"], [results])
    words = one_word_results(encoded, len(results))
    if all(ok and len(blob) == 32 for ok, blob in results):
        assert words == [blob for _, blob in results]
    else:
        assert words is None
    mutated = bytearray(encoded)
    for _ in range(data.draw(st.integers(1, 3))):
        mutated[data.draw(st.integers(0, len(mutated) - 1))] = data.draw(st.integers(0, 255))
    for blob in (bytes(mutated), bytes(mutated[: data.draw(st.integers(0, len(mutated)))])):
        for count in {len(results), max(0, len(results) - 1)}:
            words = one_word_results(blob, count)
            if words is not None:
                assert decode_results(blob) == [(True, w) for w in words]


GROUP_FNS = [abis.balanceOf, abis.getStakers, abis.getClaimingContractPct, abis.getStakerCount]


def _group_args(fn):
    return st.tuples(*[_values(t) for t in fn.inputs])


@st.composite
def call_groups(draw):
    groups = []
    for _ in range(draw(st.integers(0, 5))):
        fn = draw(st.sampled_from(GROUP_FNS))
        target = "0x" + draw(st.binary(min_size=20, max_size=20)).hex()
        groups.append(Calls(target, fn, draw(st.lists(_group_args(fn), max_size=12)), gas=draw(st.integers(0, 200_000))))
    return groups


@settings(max_examples=300, deadline=None)
@given(call_groups(), st.integers(1, 1_500_000), st.integers(1, 3_000))
def test_groups_encode_and_chunk_like_their_calls_one_by_one(groups, chunk_gas, chunk_bytes):
    mc = Multicall(RpcClient(["http://127.0.0.1:9"]), MULTICALL3, "latest", chunk_gas=chunk_gas, chunk_bytes=chunk_bytes)
    elements, chunks = mc._encode(groups)
    calls = [g.call(j) for g in groups for j in range(len(g.args))]
    assert elements == [call3(c.target, c.fn.encode(*c.args)) for c in calls]
    # The greedy rule, call by call: a call joins the chunk unless it would pass a budget.
    expected: list[list[int]] = []
    gas = size = 0
    for i, c in enumerate(calls):
        cost, length = c.gas + 8_000, len(c.fn.encode(*c.args)) + 128
        if expected and expected[-1] and (gas + cost > chunk_gas or size + length > chunk_bytes):
            expected.append([])
            gas = size = 0
        if not expected:
            expected.append([])
        expected[-1].append(i)
        gas += cost
        size += length
    assert chunks == expected


def test_spliced_params_are_the_bytes_json_dumps_writes():
    import json

    from publisher.chain.rpc import _item

    mc = Multicall(RpcClient(["http://127.0.0.1:9"]), MULTICALL3, {"blockHash": "0x" + "ab" * 32, "requireCanonical": True})
    elements, chunks = mc._encode([Calls(MULTICALL3, abis.balanceOf, [("0x" + "12" * 20,)] * 3)])
    method, params = mc._request(chunks[0], elements)
    assert isinstance(params, RawParams)
    plain = [{"to": MULTICALL3, "data": "0x" + aggregate3_payload(elements).hex()}, mc.block]
    assert params.text == json.dumps(plain, separators=(",", ":")).encode()
    assert _item(7, method, params) == _item(7, method, plain)


def test_a_lane_beside_starts_at_the_node_its_client_failed_over_to_and_a_lane_never_grows_a_batch():
    client = RpcClient(["http://127.0.0.1:1", "http://127.0.0.1:2"])
    client._url_index = 1  # the first URL failed earlier in the run
    other = client.sibling()
    assert other.url == client.url and other.session is not client.session and other.counters is not client.counters
    mc = Multicall(client, MULTICALL3, "latest")
    mc.batch_size = 2  # the other lane halved it meanwhile
    heavy = RpcUnavailable("timed out", heavy=True)
    group = [[i] for i in range(10)]
    assert mc._lighter(heavy, group) == group and mc.batch_size == 2


def test_a_failing_lane_stops_the_other_and_both_lanes_count_their_requests(demo):
    """A read of many requests through a proxy that fails one of them for good: the run fails with
    that failure, soon, and every request either lane sent is counted."""
    calls = [Call(demo.addresses["Staking"], abis.getStakerCount, contract="Staking")] * 4000
    # Three requests pass, then every one gets HTTP 500: not a heavy failure, so nothing is halved.
    with FlakyProxy(demo.url, faults=[None, None, None], always=500) as proxy:
        client = fast_client([proxy.url], max_attempts=2)
        started = time.monotonic()
        with pytest.raises(RpcUnavailable) as err:
            Multicall(client, MULTICALL3, "latest", chunk_gas=1_000_000).run(calls)
        assert "HTTP 500" in str(err.value) and time.monotonic() - started < 10
        # A lane still in its request when the run failed counts it when that request ends.
        deadline = time.monotonic() + 5
        while client.counters.http_requests < proxy.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.counters.http_requests == proxy.requests
        assert proxy.requests <= 3 + 2 * 2  # the passing three, then each lane's one request, tried twice
