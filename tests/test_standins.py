"""The local stand-ins speak the third-party shapes, agree with the seeded chain, and switch faults."""
from __future__ import annotations

import json
import time

import pytest
import requests
from ggp_devnet import standins as st
from ggp_devnet.scenarios import LAUNCHED, STAKING, build
from ggp_devnet.standins import Fault, Standins

from publisher.compute.nodeid import node_id, tx_id
from publisher.sources.http import HttpClient, SourceMalformed, SourceUnavailable
from publisher.sources.validators import Glacier

NAVAX_PER_WEI = 10**9


@pytest.fixture(scope="module")
def scenario():
    return build("demo")


@pytest.fixture(scope="module")
def services(scenario):
    with Standins(scenario) as s:
        yield s


@pytest.fixture(autouse=True)
def clean(services):
    services.reset()
    yield
    services.reset()


def glacier_get(services, **params):
    return requests.get(f"{services.glacier.url}/v1/networks/{st.NETWORK}/validators", params=params, timeout=5)


def pchain_call(services, params, method="platform.getCurrentValidators"):
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    return requests.post(services.pchain.url, json=body, timeout=5).json()


def test_missing_node_is_a_launched_minipool_and_deterministic(scenario):
    missing = st.missing_node(scenario)
    pool = next(m for m in scenario.minipools if node_id(m["nodeID"]) == missing)
    assert pool["status"] == LAUNCHED
    assert pool["index"] == min(m["index"] for m in scenario.minipools if m["status"] == LAUNCHED)
    assert st.missing_node(build("demo")) == missing
    assert st.validator_records(build("demo")) == st.validator_records(scenario)


def test_records_cover_active_minipools_with_chain_values(scenario, demo_snapshot):
    records = {r.node_id: r for r in st.validator_records(scenario)}
    active = {node_id(m.node_id): m for m in demo_snapshot.minipools if m.status in (LAUNCHED, STAKING)}
    assert set(records) == set(active) - {st.missing_node(scenario)}
    assert len(records) == len(active) - 1 > 20
    for nid, r in records.items():
        m = active[nid]
        assert r.stake == (m.avax_node_op_amt + m.avax_liquid_staker_amt) // NAVAX_PER_WEI
        assert r.fee_pct == "2.0000" and m.delegation_fee == 20_000
        if m.status == STAKING:
            assert (r.start, r.end, r.tx_id) == (m.start_time, m.end_time, tx_id(m.tx_id))
        assert r.start < r.end and r.start <= demo_snapshot.block.timestamp


def test_glacier_answers_in_glacier_shape(services):
    resp = glacier_get(services, validationStatus="active", pageSize=100)
    assert resp.status_code == 200
    body = resp.json()
    assert set(body) == {"validators"}  # one page: no nextPageToken
    v = body["validators"][0]
    for key in ("amountStaked", "amountDelegated", "delegationFee", "delegationCapacity"):
        assert isinstance(v[key], str) and v[key].replace(".", "").isdigit(), key
    for key in ("validationRewardAmount", "delegationRewardAmount"):
        assert isinstance(v["potentialRewards"][key], str) and v["potentialRewards"][key].isdigit()
    assert isinstance(v["startTimestamp"], int) and isinstance(v["endTimestamp"], int)
    assert isinstance(v["uptimePerformance"], float) and 95 <= v["uptimePerformance"] <= 100
    assert isinstance(v["delegatorCount"], int)
    assert v["nodeId"].startswith("NodeID-") and v["validationStatus"] == "active"
    assert set(v["blsCredentials"]) == {"publicKey", "proofOfPossession"}


def test_glacier_filters_and_pages(services, scenario):
    every = [r.node_id for r in st.validator_records(scenario)]
    seen, token, pages = [], None, 0
    while True:
        params = {"validationStatus": "active", "pageSize": 7, "nodeIds": ",".join(every[:30])}
        if token:
            params["pageToken"] = token
        body = glacier_get(services, **params).json()
        seen += [v["nodeId"] for v in body["validators"]]
        pages += 1
        token = body.get("nextPageToken")
        if not token:
            break
    assert pages == 5 and sorted(seen) == sorted(every[:30])
    assert glacier_get(services, pageSize=101).status_code == 400
    assert requests.get(f"{services.glacier.url}/v1/networks/mainnet/validators", timeout=5).status_code == 404


def test_pchain_answers_in_avalanchego_shape(services, scenario):
    records = st.validator_records(scenario)
    wanted = [records[0].node_id, records[1].node_id, st.missing_node(scenario)]
    body = pchain_call(services, {"nodeIDs": wanted})
    assert body["id"] == 7
    got = body["result"]["validators"]
    assert [v["nodeID"] for v in got] == wanted[:2]  # the missing node is absent here too
    v = got[0]
    for key in ("startTime", "endTime", "weight", "potentialReward", "delegatorCount", "delegatorWeight", "uptime", "delegationFee"):
        assert isinstance(v[key], str), key
    assert v["weight"] == str(records[0].stake) and v["delegators"] is None and v["connected"] is True
    assert pchain_call(services, {}, method="platform.nope")["error"]["code"] == -32601


def test_price_api_answers_in_coingecko_shape(services, scenario, demo_snapshot):
    url = f"{services.prices.url}/simple/price"
    body = requests.get(url, params={"ids": "avalanche-2,gogopool", "vs_currencies": "usd"}, timeout=5).json()
    assert set(body) == {"avalanche-2", "gogopool"}
    avax = demo_snapshot.feed.answer / 10**8
    assert body["avalanche-2"]["usd"] == pytest.approx(avax, rel=1e-6)
    assert body["gogopool"]["usd"] == pytest.approx(demo_snapshot.oracle.price / 10**18 * avax, rel=1e-5)
    services.prices.fault = Fault(divergence_pct=10)
    moved = requests.get(url, params={"ids": "avalanche-2", "vs_currencies": "usd"}, timeout=5).json()
    assert moved == {"avalanche-2": {"usd": pytest.approx(avax * 1.1, rel=1e-6)}}
    assert requests.get(url, params={"ids": "gogopool"}, timeout=5).status_code == 400


def test_fault_switch_over_http(services):
    control = f"http://127.0.0.1:{services.glacier.url.rsplit(':', 1)[1]}/__fault"
    assert requests.post(control, json={"status": 503, "times": 2, "retry_after": "3"}, timeout=5).ok
    assert requests.get(control, timeout=5).json()["fault"]["status"] == 503
    first = glacier_get(services)
    assert (first.status_code, first.headers["Retry-After"]) == (503, "3")
    assert glacier_get(services).status_code == 503
    assert glacier_get(services).status_code == 200  # healed after two
    assert requests.post(control, json={"malformed": True}, timeout=5).ok
    with pytest.raises(ValueError):
        glacier_get(services).json()
    assert requests.post(control, json={}, timeout=5).ok
    assert glacier_get(services).status_code == 200
    assert requests.post(control, json={"nonsense": 1}, timeout=5).status_code == 400
    assert requests.get(control, timeout=5).json()["requests"] == len(services.glacier.hits) == 5


def test_page_loop_never_ends(services):
    services.glacier.fault = Fault(page_loop=True)
    tokens = set()
    params = {"pageSize": 100}
    for _ in range(5):
        body = glacier_get(services, **params).json()
        tokens.add(body["nextPageToken"])
        params["pageToken"] = body["nextPageToken"]
    assert len(tokens) == 5


def test_delay_fault_times_out_the_client(services):
    services.pchain.fault = Fault(delay=1.0)
    client = HttpClient("P-Chain RPC", services.pchain.url, timeout=0.3, max_attempts=2, backoff=0.01)
    t0 = time.monotonic()
    with pytest.raises(SourceUnavailable) as err:
        client.post_json("", {"jsonrpc": "2.0", "id": 1, "method": "platform.getCurrentValidators", "params": {}})
    assert str(err.value) == "P-Chain RPC failed: timed out after 2 attempts"
    assert time.monotonic() - t0 < 2.0
    assert len(services.pchain.hits) == 2


def test_glacier_client_parses_the_real_shape(services, scenario):
    """Every parsed field traces back to the raw Glacier JSON, amounts as exact ints."""
    records = st.validator_records(scenario)
    ids = sorted(r.node_id for r in records)
    raw = {v["nodeId"]: v for v in glacier_get(services, pageSize=100).json()["validators"]}
    parsed = Glacier(HttpClient("validator API", services.glacier.url), st.NETWORK).fetch(ids)
    assert set(parsed) == set(ids)
    for nid, v in parsed.items():
        r = raw[nid]
        assert v.amount_staked == int(r["amountStaked"]) and isinstance(v.amount_staked, int)
        assert v.amount_delegated == int(r["amountDelegated"])
        assert v.validation_reward == int(r["potentialRewards"]["validationRewardAmount"])
        assert v.delegation_reward == int(r["potentialRewards"]["delegationRewardAmount"])
        assert (v.start_timestamp, v.end_timestamp, v.tx_hash) == (r["startTimestamp"], r["endTimestamp"], r["txHash"])
        assert v.delegation_fee_pct == r["delegationFee"] and v.delegator_count == r["delegatorCount"]
        assert float(v.uptime_pct) == r["uptimePerformance"] and v.avalanchego_version == r["avalancheGoVersion"]
    assert any(v.amount_delegated for v in parsed.values()) and any(v.delegation_reward for v in parsed.values())


@pytest.mark.parametrize("change, field", [
    ({"amountStaked": 2000000000000}, "validators[0].amountStaked is not an integer string"),
    ({"amountStaked": "2e12"}, "validators[0].amountStaked is not an integer string"),
    ({"startTimestamp": "1773273330"}, "validators[0].startTimestamp is not a non-negative integer"),
    ({"nodeId": "0xabc"}, "validators[0].nodeId is not a NodeID"),
    ({"potentialRewards": None}, "validators[0].potentialRewards is missing"),
    ({"uptimePerformance": 120.5}, "validators[0].uptimePerformance is not a percent number"),
])
def test_glacier_client_rejects_friendlier_shapes(services, scenario, change, field):
    record = st.glacier_json(st.validator_records(scenario)[0])
    services.glacier.fault = Fault(body=json.dumps({"validators": [{**record, **change}]}))
    client = Glacier(HttpClient("validator API", services.glacier.url), st.NETWORK)
    with pytest.raises(SourceMalformed) as err:
        client.fetch([record["nodeId"]])
    assert str(err.value) == f"validator API returned a malformed body: {field}"


def test_devnet_starts_the_standins(demo, demo_profile):
    assert set(demo.services) == {"validator_api", "pchain_rpc", "price_api"}
    assert demo.standins is not None and demo.standins.services == demo.services
    assert demo_profile.validator_api_url == demo.services["validator_api"]
    assert demo_profile.pchain_rpc_url == demo.services["pchain_rpc"]
    assert demo_profile.price_api_url == demo.services["price_api"]
    assert demo_profile.validator_network == st.NETWORK
    assert requests.get(f"{demo.services['price_api']}/simple/price", params={"ids": "gogopool", "vs_currencies": "usd"}, timeout=5).ok


def test_devnet_profile_file_names_the_deployed_feed_and_pair(demo):
    from publisher.config import load_profile

    p = load_profile("devnet")
    assert (p.avax_usd_feed, p.dex_pair, p.storage) == (demo.addresses["PriceFeed"], demo.addresses["DexPair"], demo.addresses["Storage"])
