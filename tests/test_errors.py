"""The error boundary: every bad input found by trying the CLI ends in one line naming its cause
and exit 1, with no secret in the output (with -v too), and no source URL under out/.

Each case runs the real CLI in a subprocess against the session's demo devnet (state changes
inside evm_snapshot/evm_revert), the stand-ins, or a misbehaving proxy in front of the node.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
import requests
from ggp_devnet.standins import Fault
from support.chain import WAD, checkpoint, send
from support.flaky_proxy import FlakyProxy

from publisher.chain.abi import Fn

MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11"
SECRET = "sk-live-7f3a9c"  # recognizable: must never appear in any output


def run_cli(args: list[str], env_extra: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBLISHER_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "publisher.cli", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def one_line_error(got: subprocess.CompletedProcess) -> str:
    """The run failed with exit 1 and exactly one line on stderr, not a bug report."""
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 1, (got.returncode, got.stderr[-2000:])
    assert len(lines) == 1, got.stderr[-2000:]
    assert lines[0].startswith("error: ") and "unexpected" not in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def rpc(demo):
    from publisher.chain.rpc import RpcClient

    return RpcClient([demo.url])


def test_multicall3_missing_is_named(demo, rpc, tmp_path):
    with checkpoint(rpc):
        rpc.request("anvil_setCode", [MULTICALL3, "0x"])
        got = run_cli(["snapshot", "--rpc-url", demo.url, "--out", str(tmp_path / "s.json")])
    line = one_line_error(got)
    assert re.fullmatch(rf"error: no contract code for Multicall3 at {MULTICALL3} at block \d+ \(wrong network or address\?\)", line)


def test_a_contract_whose_code_was_removed_is_named(demo, rpc, tmp_path):
    with checkpoint(rpc):
        rpc.request("anvil_setCode", [demo.addresses["Staking"], "0x"])
        got = run_cli(["snapshot", "--rpc-url", demo.url, "--out", str(tmp_path / "s.json")])
    assert f"error: no contract code for Staking at {demo.addresses['Staking']}" in one_line_error(got)


def test_a_chain_value_outside_the_formula_range_is_named(demo, rpc, tmp_path):
    data = Fn("setUint(string,uint256)", "").encode("MinipoolNodeCommissionFeePct", 2 * WAD)
    with checkpoint(rpc):
        send(rpc, demo.addresses["ProtocolDAO"], data)
        saved = run_cli(["snapshot", "--rpc-url", demo.url, "--out", str(tmp_path / "s.json")])
    assert saved.returncode == 0, saved.stderr  # the chain's values as they are; the build refuses them
    got = run_cli(["build", "--from-snapshot", str(tmp_path / "s.json"), "--out", str(tmp_path / "out")])
    line = one_line_error(got)
    assert re.fullmatch(r"error: chain value outside the rewards formula's range at block \d+: "
                        r"params field 'minipoolNodeCommissionFeePctWad' is out of range \[0, \d+\]", line), line


def test_a_zero_oracle_price_with_a_price_api_names_the_contract_error(demo, rpc, tmp_path):
    data = Fn("setGGPPriceInAVAX(uint256,uint256)", "").encode(0, 0)
    with checkpoint(rpc):
        send(rpc, demo.addresses["Oracle"], data)
        got = run_cli(["snapshot", "--rpc-url", demo.url, "--out", str(tmp_path / "s.json")],
                      {"PUBLISHER_PRICE_API_URL": demo.services["price_api"]})
    line = one_line_error(got)
    # The custom error is decoded from the compiled ABIs, not printed as a raw selector.
    assert re.fullmatch(r"error: call failed at block \d+: Oracle.getGGPPriceInAVAX\(\) reverted with InvalidGGPPrice\(\)", line), line


def test_serve_refuses_a_port_out_of_range(tmp_path):
    got = run_cli(["serve", "--dir", str(tmp_path), "--port", "99999"], timeout=30)
    assert one_line_error(got) == "error: port 99999 is not a TCP port (0-65535; 0 picks a free one)"


def test_serve_on_port_0_prints_the_bound_port(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBLISHER_")}
    proc = subprocess.Popen([sys.executable, "-m", "publisher.cli", "serve", "--dir", str(tmp_path), "--port", "0"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        m = re.match(r"serving .* at http://127\.0\.0\.1:(\d+)/", line)
        assert m and int(m.group(1)) != 0, line
        resp = requests.get(f"http://127.0.0.1:{m.group(1)}/nothing", timeout=10)
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_an_rpc_url_that_is_not_a_url_is_refused_at_once(tmp_path):
    t0 = time.monotonic()
    got = run_cli(["snapshot", "--rpc-url", "notaurl", "--out", str(tmp_path / "s.json")], timeout=30)
    assert one_line_error(got) == "error: RPC URL must start with http:// or https://"
    assert time.monotonic() - t0 < 10  # no retries against something that cannot be a node


@pytest.mark.parametrize("verbose", [[], ["-v"]])
def test_a_secret_in_a_malformed_port_is_never_printed(tmp_path, verbose):
    url = f"https://rpc.example.com:{SECRET}/ext/bc/C/rpc"
    got = run_cli([*verbose, "snapshot", "--out", str(tmp_path / "s.json")], {"PUBLISHER_RPC_URL": url}, timeout=30)
    assert got.returncode == 1
    assert SECRET not in got.stdout + got.stderr
    assert got.stderr.strip().splitlines()[-1] == "error: RPC URL is malformed (bad port or brackets)"


def test_a_negative_block_is_refused_plainly(demo, tmp_path):
    got = run_cli(["snapshot", "--rpc-url", demo.url, "--block", "-5", "--out", str(tmp_path / "s.json")], timeout=30)
    assert one_line_error(got) == "error: block -5 is negative: give a block number ≥ 0 or omit --block for the latest"


def test_a_block_beyond_the_head_is_refused_plainly(demo, tmp_path):
    got = run_cli(["snapshot", "--rpc-url", demo.url, "--block", str(10**9), "--out", str(tmp_path / "s.json")], timeout=30)
    assert one_line_error(got) == f"error: block {10**9} does not exist on RPC"


def test_eth_call_answering_random_bytes(demo, tmp_path):
    with FlakyProxy(demo.url, always="random", only="eth_call") as proxy:
        got = run_cli(["snapshot", "--rpc-url", proxy.url, "--out", str(tmp_path / "s.json")])
    line = one_line_error(got)
    assert ("multicall of" in line and "malformed result" in line) or "undecodable" in line, line
    assert not (tmp_path / "s.json").exists()


def test_a_50_mb_body_of_nested_brackets(demo, tmp_path):
    with FlakyProxy(demo.url, always="nested") as proxy:
        got = run_cli(["snapshot", "--rpc-url", proxy.url, "--out", str(tmp_path / "s.json")])
    line = one_line_error(got)
    assert re.fullmatch(r"error: RPC failed for batch of 2 after \d attempts: malformed JSON", line), line


def test_a_price_quote_of_1e400_is_refused_as_malformed(demo, tmp_path):
    standins = demo.standins
    standins.prices.fault = Fault(body='{"avalanche-2":{"usd":1e400},"gogopool":{"usd":1e400}}')
    try:
        got = run_cli(["snapshot", "--rpc-url", demo.url, "--out", str(tmp_path / "s.json")],
                      {"PUBLISHER_PRICE_API_URL": demo.services["price_api"]})
    finally:
        standins.prices.fault = None
    # The price API is a second opinion: a broken one is a warning, never a crash.
    assert got.returncode == 0, got.stderr
    assert "warning   price cross-check skipped: price API returned a malformed body: avalanche-2.usd is implausibly large" in got.stdout


def test_an_unexpected_error_shows_no_message_even_with_v(tmp_path):
    # A snapshot file that is JSON but not a snapshot: whatever breaks, the cause is one line.
    bad = tmp_path / "snap.json"
    bad.write_text(json.dumps({"network": "devnet", "url": f"https://x/{SECRET}"}))
    for verbose in ([], ["-v"]):
        got = run_cli([*verbose, "build", "--from-snapshot", str(bad), "--out", str(tmp_path / "out")], timeout=60)
        assert got.returncode == 1
        assert SECRET not in got.stdout + got.stderr
        assert got.stderr.strip().splitlines()[-1].startswith("error: ")


def test_published_files_name_sources_by_kind_never_by_url(demo, tmp_path):
    """Warnings and the price cross-check in out/ say "validator API", "price API" … never a URL."""
    standins = demo.standins
    standins.glacier.fault = Fault(status=500)  # falls back to the P-Chain API: a warning naming both
    try:
        got = run_cli(["build", "--rpc-url", demo.url, "--out", str(tmp_path / "out")], {
            "PUBLISHER_VALIDATOR_API_URL": demo.services["validator_api"],
            "PUBLISHER_PCHAIN_RPC_URL": demo.services["pchain_rpc"],
            "PUBLISHER_PRICE_API_URL": demo.services["price_api"],
            "PUBLISHER_VALIDATOR_API_KEY": SECRET,
        }, timeout=300)
    finally:
        standins.glacier.fault = None
    assert got.returncode == 0, got.stderr
    out = tmp_path / "out"
    status = json.loads((out / "status.json").read_text())
    assert any("validator API" in w for w in status["warnings"]), status["warnings"]
    assert json.loads((out / "prices.json").read_text())["crossCheck"]["source"] == "price API"
    leaks = []
    for f in out.rglob("*"):
        if not f.is_file():
            continue
        # The Atom feed's namespace is a name, not a source.
        text = f.read_text(errors="replace").replace('xmlns="http://www.w3.org/2005/Atom"', "")
        for needle in ("127.0.0.1", "localhost", "http://", SECRET):
            if needle in text:
                leaks.append((str(f.relative_to(out)), needle))
    assert not leaks, leaks[:10]
    assert SECRET not in got.stdout + got.stderr
