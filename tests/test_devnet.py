"""The embedded devnet: registry, Multicall3, scenario coverage, history window, determinism,
compiled artifacts, startup failures and the `publisher devnet` command."""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from eth_utils import keccak
from ggp_devnet import running, scenarios
from ggp_devnet.anvil import CHAIN_ID, Anvil, _port_taken, free_port
from ggp_devnet.scenarios import DAY
from ggp_devnet.seed import MULTICALL3, REGISTERED
from support.chain import MAX_UINT, WAD, artifacts, checkpoint, eth_call, header, send
from support.devnet_cli import DevnetCli

from publisher.chain import abis
from publisher.chain.abi import Fn, event_topic
from publisher.chain.reader import registry_key
from publisher.chain.rpc import RpcClient, RpcError
from publisher.errors import PublisherError
from publisher.protocol import MinipoolStatus

ROOT = Path(__file__).resolve().parents[1]
storage_getString = Fn("getString(bytes32)", "string")
getGGPStake = Fn("getGGPStake(address)", "uint256")


# ---- registry and Multicall3 -------------------------------------------------------------------


def test_registry_resolves_every_registered_contract(demo, rpc):
    storage = demo.addresses["Storage"]
    for name in REGISTERED:
        got = eth_call(rpc, storage, abis.storage_getAddress, registry_key("contract.address", name))
        assert got.lower() == demo.addresses[name].lower(), name
        # The reverse entries mainnet's registerContract writes are there too.
        assert eth_call(rpc, storage, storage_getString, keccak(b"contract.name" + bytes.fromhex(got[2:]))) == name
        assert eth_call(rpc, storage, abis.storage_getBool, keccak(b"contract.exists" + bytes.fromhex(got[2:]))) is True
    unknown = eth_call(rpc, storage, abis.storage_getAddress, registry_key("contract.address", "NoSuchContract"))
    assert int(unknown, 16) == 0


def test_multicall3_is_installed_at_the_canonical_address(rpc):
    assert MULTICALL3 == "0xcA11bde05977b3631167028862bE2a173976CA11"
    code = rpc.request("eth_getCode", [MULTICALL3, "latest"])
    assert len(code) > 2
    assert code == artifacts()["Multicall3"]["deployedBytecode"]


def test_aggregate3_reports_failures_per_call_or_reverts_when_not_allowed(demo, rpc):
    a = demo.addresses
    count = eth_call(rpc, a["Staking"], abis.getStakerCount)
    stranger = "0x" + "ab" * 20
    good = (a["Staking"], abis.getStakerCount.encode())
    panics = (a["Staking"], abis.getStakers.encode(count + 5, 1))  # checked `max - offset` underflows
    custom = (a["Staking"], getGGPStake.encode(stranger))  # StakerNotFound()

    results = eth_call(rpc, MULTICALL3, abis.aggregate3, [(t, True, d) for t, d in (good, panics, custom)])
    (ok0, data0), (ok1, data1), (ok2, data2) = results
    assert ok0 and abis.getStakerCount.decode(data0) == count
    assert not ok1 and data1 == bytes.fromhex("4e487b71") + (0x11).to_bytes(32, "big")
    assert not ok2 and data2 == keccak(text="StakerNotFound()")[:4]

    with pytest.raises(RpcError) as err:
        eth_call(rpc, MULTICALL3, abis.aggregate3, [(good[0], True, good[1]), (panics[0], False, panics[1])])
    assert "Multicall3: call failed" in err.value.rpc_message or "Multicall3: call failed" in str(err.value.data)


# ---- scenario coverage -------------------------------------------------------------------------


def test_demo_has_every_minipool_status(demo_snapshot):
    statuses = {m.status for m in demo_snapshot.minipools}
    assert statuses == set(MinipoolStatus)
    assert demo_snapshot.minipool_count == len(demo_snapshot.minipools) >= 7 * 2


def test_demo_stakers_cover_every_collateralization_range(demo_snapshot):
    stakers = demo_snapshot.stakers
    tenth, max_ratio = WAD // 10, demo_snapshot.settings.max_collateralization_ratio
    groups = {
        "0 %": [s for s in stakers if s.avax_assigned and s.ggp_staked == 0],
        "< 10 %": [s for s in stakers if 0 < s.collateralization_ratio < tenth],
        "10-150 %": [s for s in stakers if tenth <= s.collateralization_ratio <= max_ratio],
        "> 150 %": [s for s in stakers if max_ratio < s.collateralization_ratio < MAX_UINT],
        "no AVAX assigned": [s for s in stakers if s.collateralization_ratio == MAX_UINT],
        "not yet eligible": [s for s in stakers if s.rewards_start_time and not s.eligible],
        "eligible": [s for s in stakers if s.eligible],
    }
    assert all(groups.values()), {k: len(v) for k, v in groups.items()}
    assert all(s.collateralization_ratio == 0 and s.effective_ggp_staked == 0 for s in groups["0 %"])
    assert all(s.effective_ggp_staked == 0 for s in groups["< 10 %"])
    capped = [s for s in groups["> 150 %"] if s.avax_validating_high_water]
    assert capped and all(s.effective_ggp_staked < s.ggp_staked for s in capped)
    assert any(0 < s.effective_ggp_staked == s.ggp_staked for s in groups["10-150 %"])


def test_history_window_spans_45_days_of_prices_and_reward_cycles(demo, rpc):
    a = demo.addresses

    def logs(address: str, event: str) -> list[dict]:
        got = rpc.request("eth_getLogs", [{"address": address, "topics": [event_topic(event)], "fromBlock": "0x0", "toBlock": "latest"}])
        assert got, f"no {event} logs"
        return got

    def times(entries: list[dict]) -> list[int]:
        blocks = rpc.batch([("eth_getBlockByNumber", [e["blockNumber"], False]) for e in entries])
        return [int(b["timestamp"], 16) for b in blocks]

    head_time = int(header(rpc)["timestamp"], 16)
    oracle = logs(a["Oracle"], abis.EV_GGP_PRICE_UPDATED)
    feed = logs(a["PriceFeed"], abis.EV_ANSWER_UPDATED)
    cycles = logs(a["TokenggAVAX"], abis.EV_NEW_REWARDS_CYCLE)
    t_oracle, t_feed, t_cycles = times(oracle), times(feed), times(cycles)

    assert head_time - t_oracle[0] >= 45 * DAY
    assert [int(e["topics"][1], 16) for e in oracle] == [p for _, p, _ in demo.scenario.prices]
    assert [int.from_bytes(bytes.fromhex(e["topics"][1][2:]), "big", signed=True) for e in feed] == [u for _, _, u in demo.scenario.prices]
    for series in (t_oracle, t_feed):
        assert max(b - a for a, b in itertools.pairwise(series)) <= DAY + 3600, "a daily update at least"
        assert head_time - series[-1] <= 2 * DAY
    # ggAVAX streams 14-day cycles: a new one starts within a day of each end, across the window.
    cycle_ends = [int(e["topics"][1], 16) for e in cycles]
    assert len(cycles) >= 45 // 14
    assert t_cycles[0] - t_oracle[0] <= DAY
    for started, end in zip(t_cycles[1:], cycle_ends, strict=False):  # each later cycle starts where one ended
        assert end <= started <= end + DAY
    assert head_time < cycle_ends[-1]


# ---- determinism -------------------------------------------------------------------------------


def test_two_demo_devnets_produce_the_same_chain(demo, rpc):
    """A fresh seeding against the session's demo (started from the run's image of it, see
    tests/conftest.py): the same chain, so the image is too."""
    with running("demo", fresh=True) as other:
        theirs = RpcClient([other.url])
        top = header(theirs)
        ours = header(rpc, int(top["number"], 16))
        assert other.addresses == demo.addresses
        # Equal head hashes: every header, transaction and receipt of the two chains is the same.
        assert top["hash"] == ours["hash"]
        assert top["stateRoot"] == ours["stateRoot"]
        middle = hex(int(top["number"], 16) // 2)
        assert header(theirs, middle)["mixHash"] == header(rpc, middle)["mixHash"]
        # The state at a past block and every log, as the publisher's history reads them.
        a = demo.addresses
        assert eth_call(theirs, a["Oracle"], abis.getGGPPriceInAVAX, block=middle) == eth_call(rpc, a["Oracle"], abis.getGGPPriceInAVAX, block=middle)
        every = [{"fromBlock": "0x0", "toBlock": top["number"]}]
        assert theirs.request("eth_getLogs", every) == rpc.request("eth_getLogs", every)


def test_an_image_is_described_only_once_its_chain_is_written(tmp_path):
    """A seeding whose node wrote no file (cut off while writing it) leaves no image behind: the
    next caller seeds again instead of starting a node from half a chain."""
    from ggp_devnet import images

    calls = []

    def seed(state: Path) -> images.Image:
        calls.append(state)
        if len(calls) > 1:
            state.write_text("{}")
        return images.Image(state, scenarios.build("demo"), {}, CHAIN_ID, "local")

    with pytest.raises(PublisherError, match="did not write the seeded chain"):
        images.kept(tmp_path, "demo-devnet", seed)
    assert not (tmp_path / "demo-devnet.pickle").exists()
    assert images.kept(tmp_path, "demo-devnet", seed).state == calls[1] and len(calls) == 2
    assert images.kept(tmp_path, "demo-devnet", seed).chain_id == CHAIN_ID and len(calls) == 2  # kept: not seeded again


def test_automine_is_back_on_after_seeding(demo, rpc):
    a = demo.addresses
    price, stamp = eth_call(rpc, a["Oracle"], abis.getGGPPriceInAVAX)
    head = header(rpc)
    with checkpoint(rpc):
        receipt = send(rpc, a["Oracle"], Fn("setGGPPriceInAVAX(uint256,uint256)").encode(price + 1, stamp))
        assert eth_call(rpc, a["Oracle"], abis.getGGPPriceInAVAX, block=receipt["blockNumber"]) == (price + 1, stamp)
        # The node's clock runs on from the seeded head (a node started from an image too).
        assert 0 <= int(header(rpc)["timestamp"], 16) - int(head["timestamp"], 16) < 600
    assert eth_call(rpc, a["Oracle"], abis.getGGPPriceInAVAX) == (price, stamp)


# ---- sized scenarios ---------------------------------------------------------------------------


def test_sizes_resize_scale_in_proportion_and_a_size_is_one_chain():
    base = scenarios.SHAPES["scale"]
    for name, (family, stakers) in scenarios.SIZES.items():
        got, seed, shape = scenarios.resolve(name)
        assert family == "scale" and got == name and seed == f"scale-{stakers}x{stakers * 3 // 10}"
        assert (shape.stakers, shape.minipools, shape.days) == (stakers, stakers * base.minipools // base.stakers, base.days)
        assert sum(shape.status_mix) == shape.minipools
        assert [n * base.minipools for n in shape.status_mix] == [n * shape.minipools for n in base.status_mix]
        # The same size spelled either way is the same scenario, so the same chain.
        assert scenarios.resolve("scale", stakers) == (name, seed, shape)
    assert scenarios.resolve("scale-1k", 10_000) == ("scale", "scale", base)  # a base at its own size is itself
    assert scenarios.resolve("demo", 100, 40)[:2] == ("demo-100x40", "demo-100x40")
    with pytest.raises(ValueError, match="unknown scenario"):
        scenarios.resolve("scale-2k")
    small = scenarios.build("scale-1k")
    assert (len(small.stakers), len(small.minipools)) == (1_000, 300)
    assert small.stakers == scenarios.build("scale", 1_000).stakers != scenarios.build("scale", 1_000, 301).stakers
    assert [sum(m["status"] == s for m in small.minipools) for s in range(7)] == list(scenarios.resolve("scale-1k")[2].status_mix)


def test_a_sized_devnet_holds_the_size_asked_and_is_deterministic():
    heads = []
    for _ in range(2):
        with running("scale", stakers=240, minipools=70, fresh=True) as net:
            rpc = RpcClient([net.url])
            a = net.addresses
            assert eth_call(rpc, a["Staking"], abis.getStakerCount) == len(net.scenario.stakers) == 240
            assert eth_call(rpc, a["MinipoolManager"], abis.getMinipoolCount) == len(net.scenario.minipools) == 70
            assert net.scenario.name == "scale-240x70"
            heads.append(header(rpc)["hash"])
    assert heads[0] == heads[1]


def test_publisher_devnet_takes_a_size():
    port = free_port()
    with DevnetCli("--scenario", "scale", "--stakers", "150", "--port", str(port)) as dev:
        text = dev.wait_for("Ctrl-C")
        assert re.search(r"^devnet 'scale-150x45' ready in [\d.]+s: 150 stakers, 45 minipools$", text, re.M), text
        storage = re.search(r"^\s+Staking\s+(0x[0-9a-fA-F]{40})\s*$", text, re.M).group(1)
        assert eth_call(RpcClient([f"http://127.0.0.1:{port}"]), storage, abis.getStakerCount) == 150
        dev.interrupt()


def test_build_accepts_a_named_size(tmp_path):
    run = subprocess.run([sys.executable, "-m", "publisher.cli", "build", "--scenario", "scale-1k", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert "read      1000 stakers, 300 minipools" in run.stdout
    stakers = json.loads((tmp_path / "out" / "stakers.json").read_text())["stakers"]
    assert len(stakers) == len(list((tmp_path / "out" / "stakers").glob("*.json"))) == 1_000


def test_live_runs_only_the_demo_at_its_own_size():
    from click.testing import CliRunner

    from publisher.cli import main

    got = CliRunner().invoke(main, ["devnet", "--live", "--stakers", "100"])
    assert got.exit_code == 2 and "--live runs the demo scenario at its own size" in got.output


# ---- compiled artifacts ------------------------------------------------------------------------


def _compile_tools() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed, so the contracts cannot be recompiled here")
    if not (ROOT / "node_modules" / "solc").is_dir():
        pytest.skip("node_modules/solc is missing (run `npm install`), so the contracts cannot be recompiled here")
    return node


def test_the_runtime_names_every_custom_error_of_the_artifacts():
    """publisher/chain/custom_errors.json, the runtime's names for reverts (the wheel carries no
    artifacts), is what the artifacts hold."""
    from ggp_devnet import custom_errors

    assert custom_errors.TARGET.read_text() == custom_errors.render(), "stale: run python -m ggp_devnet.custom_errors"


@pytest.mark.slow
def test_compiled_artifacts_match_the_solidity_sources(tmp_path):
    node = _compile_tools()
    # A copy with one contract changed must be reported stale: the check can fail.
    stale = tmp_path / "devnet"
    shutil.copytree(ROOT / "devnet" / "ggp_devnet" / "contracts", stale / "contracts")
    shutil.copy(ROOT / "devnet" / "ggp_devnet" / "compile.mjs", stale)
    shutil.copy(ROOT / "devnet" / "ggp_devnet" / "artifacts.json", stale)
    with (stale / "contracts" / "Oracle.sol").open("a") as f:
        f.write("// changed\n")
    env = {**os.environ, "NODE_PATH": str(ROOT / "node_modules")}
    real = subprocess.Popen([node, "devnet/ggp_devnet/compile.mjs", "--check"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    copy = subprocess.Popen([node, str(stale / "compile.mjs"), "--check"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = real.communicate(timeout=300)
    assert real.returncode == 0, f"artifacts.json is stale or does not compile: {err or out}"
    assert "artifacts up to date" in out
    out, err = copy.communicate(timeout=300)
    assert copy.returncode == 1, err or out
    assert "out of date" in err


# ---- startup failures --------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert text and "\n" not in text, f"not one line: {text!r}"
    return text


def test_port_in_use_is_a_one_line_actionable_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(PublisherError) as err:
            Anvil(port).start()
        text = _one_line(err.value)
        assert f"port {port}" in text and "in use" in text and "--port" in text
        with pytest.raises(PublisherError), running("demo", port, fresh=True):
            pass


def test_a_stopped_node_leaves_no_states_on_disk():
    """Past some hundred blocks anvil moves older states to files under its $HOME, and leaves
    them there when a signal stops it: each node has a home of its own, removed as it stops."""
    node = Anvil().start()
    try:
        client = RpcClient([node.url])
        sender = client.request("eth_accounts", [])[0]
        for _ in range(20):  # blocks with state changes, then many more
            client.request("eth_sendTransaction", [{"from": sender, "to": "0x" + "11" * 20, "value": "0x1"}])
        client.request("anvil_mine", [hex(800)])
        home = Path(node.home)
        spilled = list((home / ".foundry").rglob("*.json"))
        assert spilled, "no state moved to disk: the test no longer exercises the spill"
        assert all(home in p.parents for p in spilled)
    finally:
        node.stop()
    assert not home.exists()


def test_port_in_use_from_the_command_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "publisher.cli", "devnet", "--port", str(port)],
                           capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [f"error: port {port} is already in use: choose another with --port or stop the process using it"]


@pytest.mark.parametrize("kind", ["missing", "not executable", "exits at once"])
def test_unusable_anvil_is_a_one_line_error(kind, tmp_path, monkeypatch):
    path = tmp_path / "anvil"
    if kind == "not executable":
        path.write_text("#!/bin/sh\n")
    elif kind == "exits at once":
        path.write_text("#!/bin/sh\necho 'anvil: unsupported flag' >&2\nexit 2\n")
        path.chmod(0o755)
    monkeypatch.setenv("PUBLISHER_ANVIL", str(path))
    with pytest.raises(PublisherError) as err:
        Anvil().start()
    text = _one_line(err.value)
    if kind == "exits at once":
        assert text == "anvil exited at startup: anvil: unsupported flag"
    else:
        assert str(path) in text and "npm install" in text


def _process(pid: int) -> tuple[str, str] | None:
    """(state, start time) of a process from /proc, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], fields[19]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux only")
def test_anvil_does_not_outlive_a_killed_publisher():
    code = ("import sys, time\nfrom ggp_devnet.anvil import Anvil\n"
            "a = Anvil().start()\nprint(a.proc.pid, a.port, a.home, flush=True)\ntime.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    home = None
    try:
        pid, port, home = parent.stdout.readline().split()
        pid, port = int(pid), int(port)
        state, started = _process(pid)
        assert state not in ("Z", "X") and _port_taken(port)

        def running() -> bool:
            now = _process(pid)  # same pid and start time: still that anvil, not a reused pid
            return now is not None and now[1] == started and now[0] not in ("Z", "X")

        parent.kill()  # SIGKILL: no cleanup code runs in the parent
        parent.wait(timeout=10)
        deadline = time.monotonic() + 20
        while running() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not running(), "anvil kept running after its parent was killed"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if home:
            shutil.rmtree(home, ignore_errors=True)  # its parent, which removes it, was killed


# ---- `publisher devnet` ------------------------------------------------------------------------


def test_publisher_devnet_serves_until_interrupted():
    port = free_port()
    # Started as from a shell whose PATH does not find this virtualenv's `publisher` (one that is not
    # activated), which the lines it prints must then name so that they run as pasted.
    scripts = Path(sys.executable).parent.resolve()
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != scripts)
    with DevnetCli("--scenario", "demo", "--port", str(port), env={"PATH": path}) as dev:
        text = dev.wait_for("Ctrl-C")
        url = re.search(r"RPC URL\s+(\S+)\s+\(chain id (\d+)\)", text)
        assert url and url.group(1) == f"http://127.0.0.1:{port}" and int(url.group(2)) == CHAIN_ID
        printed = dict(re.findall(r"^\s+(\w+)\s+(0x[0-9a-fA-F]{40})\s*$", text, re.M))
        assert set(printed) >= set(REGISTERED) | {"Storage", "Multicall3"}

        # The printed node is the seeded devnet: its registry resolves to the printed addresses.
        client = RpcClient([url.group(1)])
        assert int(client.request("eth_chainId"), 16) == CHAIN_ID
        for name in REGISTERED:
            got = eth_call(client, printed["Storage"], abis.storage_getAddress, registry_key("contract.address", name))
            assert got.lower() == printed[name].lower()
        time.sleep(0.5)
        assert dev.proc.poll() is None, "keeps serving"

        # The two lines it prints to use it run as pasted, in a shell without the virtualenv on PATH.
        use = text.split("use it:\n", 1)[1].splitlines()[:2]
        assert use[0].strip().startswith("export PUBLISHER_VALIDATOR_API_URL=") and " build --rpc-url " + url.group(1) in use[1]
        with tempfile.TemporaryDirectory() as where:
            shell = "\n".join(line.strip() for line in use) + " --out out"
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISHER_", "VIRTUAL_ENV", "PYTHON"))}
            env["PATH"] = "/usr/bin:/bin"
            got = subprocess.run(["/bin/sh", "-c", shell], cwd=where, env=env, capture_output=True, text=True, timeout=600)
            assert got.returncode == 0, (shell, got.stderr[-2000:])
            assert "built " in got.stdout and (Path(where) / "out" / "status.json").exists()
        assert "stopping" in dev.interrupt()
    assert not _port_taken(port), "anvil stopped with the command"


def test_publisher_devnet_live_keeps_the_protocol_moving():
    with DevnetCli("--live", "--pace", "0", "--seed", "2") as dev:
        text = dev.wait_for("GGP cycle", seconds=180)
        url = re.search(r"RPC URL\s+(\S+)", text).group(1)
        storage = re.search(r"^\s+Storage\s+(0x[0-9a-fA-F]{40})\s*$", text, re.M).group(1)
        client = RpcClient([url])
        pool = eth_call(client, storage, abis.storage_getAddress, registry_key("contract.address", "RewardsPool"))
        # The demo seeds three GGP cycles; the live run started the fourth.
        assert eth_call(client, pool, abis.getRewardsCycleCount) >= 4
        days = [int(d) for d in re.findall(r"^day (\d+) ", text, re.M)]
        assert days[:3] == [1, 2, 3] and len(days) >= 10
        dev.interrupt()
