"""The real networks: shipped mainnet and Fuji profiles, sourced, rehearsed end to end on anvil with
the contracts at the profiles' exact addresses (``publisher devnet --as``), built by the CLI,
checked, and published to moto's S3 over HTTP."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid

import boto3
import pytest
import requests
from eth_abi import encode
from eth_utils import keccak, to_checksum_address
from ggp_devnet import running
from ggp_devnet.seed import DEPLOYER, set_reserves
from support.chain import artifacts, checkpoint, eth_call, send
from support.devnet_cli import DevnetCli

from publisher.chain import abis
from publisher.chain.reader import registry_key
from publisher.chain.rpc import RpcClient
from publisher.config import PROFILE_DIR, load_profile
from publisher.endpoints.registry import file_for, load_all

TJ_FACTORY = "0x9Ad6C38BE94206cA50bb0d90783181662f0Cfa10"
TJ_INIT_CODE_HASH = "0x0bbca9af0511ad1a1da383135cf3a8d2ac620e549ef9f6ae3a4c33c2fed0af91"
NOWHERE = to_checksum_address("0x" + keccak(text="nothing lives here").hex()[-40:])


def create2_pair(factory: str, init_code_hash: str, token_a: str, token_b: str) -> str:
    """Uniswap-v2 / Trader Joe v1 pair address: CREATE2(factory, keccak(token0 ‖ token1), init code hash)."""
    t0, t1 = sorted((token_a.lower(), token_b.lower()))
    salt = keccak(bytes.fromhex(t0[2:]) + bytes.fromhex(t1[2:]))
    return to_checksum_address(keccak(b"\xff" + bytes.fromhex(factory[2:]) + salt + bytes.fromhex(init_code_hash[2:]))[12:])


def address_fields(profile) -> dict[str, str | None]:
    """Every address a profile names, keyed as its ``sources`` entry is."""
    out = {"storage": profile.storage, "multicall": profile.multicall,
           "avax_usd_feed": profile.avax_usd_feed, "dex_pair": profile.dex_pair,
           "withdraw_queue": profile.withdraw_queue, "pst_avax": profile.pst_avax}
    return out | {f"addresses.{k}": v for k, v in profile.addresses.items()}


# -- the profiles -----------------------------------------------------------------------------------


def test_mainnet_dex_pair_is_the_create2_pair_of_ggp_and_wavax():
    p = load_profile("mainnet")
    derived = create2_pair(TJ_FACTORY, TJ_INIT_CODE_HASH, p.addresses["TokenGGP"], p.addresses["WAVAX"])
    assert derived == p.dex_pair == "0xae671e0bF91CEaa4a6cB0D1294735EA3236d4586"
    # Order of the tokens does not matter; a different token gives a different pair.
    assert create2_pair(TJ_FACTORY, TJ_INIT_CODE_HASH, p.addresses["WAVAX"], p.addresses["TokenGGP"]) == derived
    assert create2_pair(TJ_FACTORY, TJ_INIT_CODE_HASH, p.addresses["TokenggAVAX"], p.addresses["WAVAX"]) != derived


@pytest.mark.parametrize("network", ["mainnet", "fuji"])
def test_every_profile_address_has_a_source_and_a_check_date(network):
    p = load_profile(network)
    fields = address_fields(p)
    assert set(p.sources) == set(fields), "sources must cover exactly the profile's addresses"
    today = dt.date.today()
    for key, entry in p.sources.items():
        assert set(entry) == {"source", "checked"}, key
        assert len(entry["source"]) > 20, key
        assert dt.date.fromisoformat(entry["checked"]) <= today, key
    for key, addr in fields.items():
        assert addr is None or to_checksum_address(addr) == addr, f"{key} is not EIP-55 checksummed"
    raw = json.loads((PROFILE_DIR / f"{network}.json").read_text())
    assert "dex_pair" in raw, "the profile must say whether the network has a pair"


def test_fuji_profile_says_there_is_no_confirmed_pair():
    p = load_profile("fuji")
    assert p.dex_pair is None
    assert p.sources["dex_pair"]["source"].startswith("none confirmed")


# -- rehearsals -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mainnet():
    with running("demo", as_network="mainnet") as net:
        yield net


@pytest.fixture(scope="module")
def fuji():
    with running("demo", as_network="fuji") as net:
        yield net


def env_for(net, **extra) -> dict[str, str]:
    """Only URLs differ from production: the node and the stand-ins, through PUBLISHER_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBLISHER_")}
    env |= {"PUBLISHER_VALIDATOR_API_URL": net.services["validator_api"],
            "PUBLISHER_PCHAIN_RPC_URL": net.services["pchain_rpc"],
            "SOURCE_DATE_EPOCH": "1800000000",
            "AWS_ACCESS_KEY_ID": "AKIATESTPUBLISHER", "AWS_SECRET_ACCESS_KEY": "test-secret",
            "AWS_DEFAULT_REGION": "us-east-1"}
    if net.network == "mainnet":  # Fuji's profile has no price API: GGP has no market price there
        env["PUBLISHER_PRICE_API_URL"] = net.services["price_api"]
    return env | extra


def cli(net, *args, env=None):
    return subprocess.run([sys.executable, "-m", "publisher.cli", *map(str, args)], capture_output=True,
                          text=True, env=env or env_for(net), timeout=300)


def build(net, out, env=None):
    proc = cli(net, "build", "--network", net.network, "--rpc-url", net.url, "--out", out, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def read(out, url_path: str):
    return json.loads((out / file_for(url_path)).read_text())


def assert_every_endpoint(out) -> None:
    for ep in load_all().values():
        if ep.is_function:
            continue
        if "{" in ep.path:  # one file per entity: at least one must exist
            folder = out / file_for(ep.path.split("{")[0].rstrip("/") + "/x").rsplit("/", 1)[0]
            assert any(folder.iterdir()), ep.path
        else:
            assert (out / file_for(ep.path)).is_file(), ep.path


def test_rehearsal_chain_has_the_profile_addresses(mainnet, fuji):
    for net in (mainnet, fuji):
        p = load_profile(net.network)
        client = RpcClient([net.url])
        assert int(client.request("eth_chainId", []), 16) == p.chain_id
        for key, addr in address_fields(p).items():
            if addr:
                assert client.request("eth_getCode", [addr, "latest"]) not in ("0x", ""), f"{net.network} {key}"
        for name in abis.REGISTRY_NAMES:
            got = eth_call(client, p.storage, abis.storage_getAddress, registry_key("contract.address", name))
            assert to_checksum_address(got) == p.addresses[name], f"{net.network} registry {name}"
        assert to_checksum_address(eth_call(client, p.addresses["TokenggAVAX"], abis.asset)) == p.addresses["WAVAX"]
        # Stand-ins answer at the network's real request paths only.
        glacier = net.standins.glacier
        assert glacier.network == p.validator_network
    pair = load_profile("mainnet").dex_pair
    client = RpcClient([mainnet.url])
    assert to_checksum_address(eth_call(client, pair, abis.token0)) == load_profile("mainnet").addresses["TokenGGP"]


@pytest.mark.parametrize("network", ["mainnet", "fuji"])
def test_build_check_and_publish_on_the_shipped_profile(network, mainnet, fuji, moto, tmp_path):
    net = {"mainnet": mainnet, "fuji": fuji}[network]
    profile_file = PROFILE_DIR / f"{network}.json"
    before = profile_file.read_bytes()
    out = tmp_path / "out"
    proc = build(net, out)
    assert profile_file.read_bytes() == before
    assert_every_endpoint(out)

    status, tj = read(out, "/status"), read(out, "/prices/tj")
    assert (status["network"], status["chainId"]) == (network, load_profile(network).chain_id)
    assert not [w for w in status["warnings"] if "profile says" in w], status["warnings"]
    if network == "mainnet":
        assert tj["status"] == "ok" and tj["reason"] is None
        assert tj["pair"] == "0xae671e0bF91CEaa4a6cB0D1294735EA3236d4586"
        assert tj["token0"] == load_profile("mainnet").addresses["TokenGGP"]
        assert tj["ggpInAvax"] > 0 and tj["ggpInUSD"] > 0
        assert read(out, "/prices")["crossCheck"]["status"] == "ok"
    else:
        assert tj["status"] == "noPair" and tj["pair"] is None and tj["ggpInAvax"] is None
        assert "fuji" in tj["reason"]
        assert not [w for w in status["warnings"] if "/prices/tj" in w]
    warned = [ln for ln in proc.stdout.splitlines() if ln.startswith("warning")]
    assert len(warned) == 1 and "has no record of 1 active minipool" in warned[0], warned  # only the seeded gap

    check = cli(net, "check", out)
    assert check.returncode == 0, check.stderr

    s3 = boto3.client("s3", endpoint_url=moto, region_name="us-east-1",
                      aws_access_key_id="AKIATESTPUBLISHER", aws_secret_access_key="test-secret")
    bucket = f"{network}-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=bucket)
    pub = cli(net, "publish", "--dir", out, "--bucket", bucket, "--endpoint-url", moto)
    assert pub.returncode == 0, pub.stderr
    got = json.loads(s3.get_object(Bucket=bucket, Key="prices/tj")["Body"].read())
    assert got == tj
    assert json.loads(s3.get_object(Bucket=bucket, Key="status")["Body"].read()) == status


def edited_profile_dir(tmp_path, network: str, key: str, value: str):
    """A copy of the shipped profiles with one address replaced."""
    folder = tmp_path / "profiles"
    shutil.copytree(PROFILE_DIR, folder)
    path = folder / f"{network}.json"
    data = json.loads(path.read_text())
    if key.startswith("addresses."):
        data["addresses"][key.split(".", 1)[1]] = value
    else:
        data[key] = value
    path.write_text(json.dumps(data))
    return folder


# The exit path's addresses (withdraw_queue, pst_avax) are left out while snapshots do not read them.
EXIT_PATH = ("withdraw_queue", "pst_avax")


@pytest.mark.parametrize("key", sorted(k for k, v in address_fields(load_profile("mainnet")).items() if v and k not in EXIT_PATH))
def test_one_edited_address_in_a_profile_copy_is_named_in_one_line(key, mainnet, tmp_path):
    folder = edited_profile_dir(tmp_path, "mainnet", key, NOWHERE)
    proc = cli(mainnet, "snapshot", "--network", "mainnet", "--rpc-url", mainnet.url, "--out", tmp_path / "s.json",
               env=env_for(mainnet, PUBLISHER_PROFILE_DIR=str(folder)))
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if NOWHERE in ln]
    assert len(lines) == 1, proc.stdout + proc.stderr
    if proc.returncode:
        # Fixed addresses the run cannot do without: a one-line error, nothing written.
        assert key in ("storage", "multicall", "avax_usd_feed")
        assert proc.stderr.strip() == lines[0] and lines[0].startswith("error: ")
        assert not (tmp_path / "s.json").exists()
    else:
        # Registry entries (the Storage registry is the truth) and the DEX pair: a warning.
        assert lines[0].startswith("warning ")
        assert key.startswith("addresses.") or key == "dex_pair"


# -- /prices/tj when the pair misbehaves ------------------------------------------------------------


def _deploy(client: RpcClient, name: str, *args) -> str:
    art = artifacts()[name]
    types = [i["type"] for i in next(x for x in art["abi"] if x["type"] == "constructor")["inputs"]]
    code = bytes.fromhex(art["bytecode"][2:]) + encode(types, list(args))
    tx = client.request("eth_sendTransaction", [{"from": DEPLOYER, "data": "0x" + code.hex(), "gas": hex(30_000_000)}])
    deadline = time.monotonic() + 30
    while not (receipt := client.request("eth_getTransactionReceipt", [tx])):
        assert time.monotonic() < deadline, "deployment was not mined"
        time.sleep(0.02)
    assert receipt["status"] == "0x1"
    return to_checksum_address(receipt["contractAddress"])


def _drain(client, pair):
    send(client, pair, set_reserves.encode(0, 0))


def _alien_tokens(client, pair):
    p = load_profile("mainnet")
    other = _deploy(client, "DexPair", p.addresses["Staking"], p.addresses["Oracle"])
    client.request("anvil_setCode", [pair, client.request("eth_getCode", [other, "latest"])])


def _reverting(client, pair):
    client.request("anvil_setCode", [pair, "0x60006000fd"])  # PUSH1 0 PUSH1 0 REVERT


def _silent(client, pair):
    client.request("anvil_setCode", [pair, "0x00"])  # STOP: every call succeeds with no return data


@pytest.mark.parametrize("breakage,reason", [
    (_drain, "has an empty reserve"),
    (_alien_tokens, "does not hold GGP"),
    (_reverting, "reverted"),
    (_silent, "no valid answer"),
])
def test_a_broken_pair_costs_only_the_quote(breakage, reason, mainnet, tmp_path):
    client = RpcClient([mainnet.url])
    pair = load_profile("mainnet").dex_pair
    out = tmp_path / "out"
    with checkpoint(client):
        breakage(client, pair)
        client.request("evm_mine", [])
        proc = build(mainnet, out)
    tj, status = read(out, "/prices/tj"), read(out, "/status")
    assert tj["status"] == "unavailable" and tj["pair"] == pair
    assert reason in tj["reason"] and pair in tj["reason"]
    assert tj["ggpInAvax"] is None and tj["ggpInUSD"] is None and tj["deviationFromOraclePct"] is None
    assert tj["oracleGgpInAvax"] > 0
    assert [w for w in status["warnings"] if w.startswith("/prices/tj has no quote") and reason in w]
    assert "warning   /prices/tj has no quote: " in proc.stdout
    assert_every_endpoint(out)
    assert read(out, "/prices")["ggpInAvax"] > 0
    check = cli(mainnet, "check", out)
    assert check.returncode == 0, check.stderr


def test_publisher_devnet_as_fuji_prints_the_profile_addresses_and_real_paths():
    with DevnetCli("--as", "fuji") as dev:
        text = dev.wait_for("Ctrl-C")
        p = load_profile("fuji")
        assert re.search(r"RPC URL\s+\S+\s+\(chain id 43113\)", text)
        printed = dict(re.findall(r"^\s+(\w+)\s+(0x[0-9a-fA-F]{40})\s*$", text, re.M))
        assert printed["Storage"] == p.storage and printed["PriceFeed"] == p.avax_usd_feed
        assert all(printed[name] == addr for name, addr in p.addresses.items())
        assert "publisher build --network fuji --rpc-url" in text
        glacier = re.search(r"PUBLISHER_VALIDATOR_API_URL=(\S+)", text).group(1)
        assert requests.get(f"{glacier}/v1/networks/fuji/validators", timeout=10).status_code == 200
        assert requests.get(f"{glacier}/v1/networks/local/validators", timeout=10).status_code == 404
        dev.interrupt()
