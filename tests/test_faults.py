"""The fault matrix over the real pipeline: the CLI in a subprocess, the session's anvil devnet, the
third-party stand-ins with their fault switches, and a misbehaving proxy in front of the node or
an API. Every failing case ends with exit 1, one line naming the cause, and out/ byte-identical to
before; degraded cases (a second-opinion source down) publish with a warning.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ggp_devnet.standins import Fault
from support.chain import checkpoint, eth_call, header
from support.flaky_proxy import FlakyProxy
from support.s3_fault_proxy import stored_objects

from publisher.chain import abis
from publisher.chain.rpc import RpcClient, RpcUnavailable
from publisher.sources.http import HttpClient, SourceUnavailable

EPOCH = "1800000000"
SECRET = "sk-live-7f3a9c"
# Seconds: a stalled source ends the run well before the test's timeout and its own attempt deadline
# (20 s for the APIs, 30 s a read for the node), yet a run on a loaded machine still reaches the
# stalled source first (imports count: on a quiet machine the node is first asked 1.0 s and the price
# API 1.3 s after the process starts). Each such test waits it out in full, so it is kept short.
RUN_DEADLINE = "6"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` by relative path -> sha256 (names and bytes)."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def sources_env(demo, **override) -> dict[str, str]:
    env = {
        "PUBLISHER_VALIDATOR_API_URL": demo.services["validator_api"],
        "PUBLISHER_PCHAIN_RPC_URL": demo.services["pchain_rpc"],
        "PUBLISHER_PRICE_API_URL": demo.services["price_api"],
        "PUBLISHER_VALIDATOR_API_KEY": SECRET,
        "SOURCE_DATE_EPOCH": EPOCH,
    }
    env.update(override)
    return env


def run_cli(args, env_extra=None, timeout=180, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBLISHER_")}
    env.update(env_extra or {})
    got = subprocess.run([sys.executable, "-m", "publisher.cli", *map(str, args)], env=env, capture_output=True,
                         text=True, timeout=timeout, **kw)
    assert SECRET not in got.stdout + got.stderr
    return got


def failed(got: subprocess.CompletedProcess) -> str:
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 1, (got.returncode, got.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: ") and "unexpected" not in lines[0], got.stderr[-2000:]
    return lines[0]


@pytest.fixture(scope="module")
def base(demo, tmp_path_factory) -> Path:
    """A good build of the demo devnet with every source configured: the "previous run"."""
    out = tmp_path_factory.mktemp("base") / "out"
    got = run_cli(["build", "--rpc-url", demo.url, "--out", out], sources_env(demo), timeout=300)
    assert got.returncode == 0, got.stderr
    return out


@pytest.fixture
def previous(base, tmp_path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(base, out)
    return out


@pytest.fixture(autouse=True)
def healthy_standins(demo):
    demo.standins.reset()
    yield
    demo.standins.reset()


# ---- the chain ----------------------------------------------------------------------------------

# (id, FlakyProxy arguments, extra env, the cause the one line must contain)
RPC_FAULTS = [
    ("429 with Retry-After", {"always": 429}, {}, r"RPC failed for batch of 2 after 6 attempts: HTTP 429"),
    ("5xx beyond the budget", {"always": 503}, {}, r"RPC failed for batch of 2 after 6 attempts: HTTP 503"),
    ("garbage", {"always": "garbage"}, {}, r"RPC failed for batch of 2 after 6 attempts: malformed JSON"),
    ("truncated", {"always": "truncated"}, {}, r"RPC failed for batch of 2 after 6 attempts: connection error"),
    ("huge", {"always": "huge"}, {}, r"RPC failed for batch of 2 after 6 attempts: malformed JSON"),
    ("wrong chain id", {"always": "chain 1"}, {}, r"RPC serves chain id 1, expected 43112"),
    ("slow eth_call", {"always": "slow", "only": "eth_call", "hang_seconds": 60},
     {"PUBLISHER_RUN_DEADLINE": RUN_DEADLINE}, rf"the run exceeded its {RUN_DEADLINE}s deadline while waiting for the RPC"),
    ("dripping", {"always": "drip", "drip_seconds": 0.5},
     {"PUBLISHER_RUN_DEADLINE": RUN_DEADLINE}, rf"the run exceeded its {RUN_DEADLINE}s deadline while waiting for the RPC"),
]


@pytest.mark.parametrize("proxy_args,env,cause", [c[1:] for c in RPC_FAULTS], ids=[c[0] for c in RPC_FAULTS])
def test_rpc_faults_fail_closed(demo, previous, proxy_args, env, cause):
    before = tree(previous)
    t0 = time.monotonic()
    with FlakyProxy(demo.url, **proxy_args) as proxy:
        got = run_cli(["build", "--rpc-url", proxy.url, "--out", previous], sources_env(demo, **env))
    assert re.search(cause, failed(got)), got.stderr
    assert tree(previous) == before
    if "PUBLISHER_RUN_DEADLINE" in env:
        assert time.monotonic() - t0 < float(RUN_DEADLINE) + 20  # interpreter start and devnet-free exit


def test_a_stalled_round_beside_the_views_ends_the_run_naming_the_node(demo, previous):
    """The minipools' round goes beside the stakers' views, on a connection of its own: a node that
    never answers it stops the run at its deadline, which names the node as it does when the run's
    own thread waits on a request."""
    before = tree(previous)
    minipools = abis.getMinipool.selector.hex().encode()

    def stall(n: int, body: bytes) -> None:
        if minipools in body:
            time.sleep(60)

    with FlakyProxy(demo.url, on_request=stall) as proxy:
        got = run_cli(["build", "--rpc-url", proxy.url, "--out", previous], sources_env(demo, PUBLISHER_RUN_DEADLINE=RUN_DEADLINE))
    assert f"the run exceeded its {RUN_DEADLINE}s deadline while waiting for the RPC" in failed(got)
    assert tree(previous) == before


def test_rpc_down(demo, previous):
    before = tree(previous)
    got = run_cli(["build", "--rpc-url", f"http://127.0.0.1:{free_port()}", "--out", previous], sources_env(demo))
    assert re.fullmatch(r"error: RPC failed for batch of 2 after 6 attempts: connection error \(ConnectionError\)", failed(got))
    assert tree(previous) == before


def test_one_dripping_attempt_is_cut_at_its_deadline(demo):
    """The per-attempt deadline holds where no alarm can fire (off the main thread): a node that
    drips its answer costs ``deadline`` seconds per attempt, not forever."""
    import threading

    box = {}

    def call():
        client = RpcClient([proxy.url], deadline=1.0, max_attempts=2, backoff=0.01)
        t0 = time.monotonic()
        try:
            client.request("eth_chainId")
        except RpcUnavailable as exc:
            box["error"] = str(exc)
        box["seconds"] = time.monotonic() - t0

    with FlakyProxy(demo.url, always="drip", drip_seconds=0.3) as proxy:
        worker = threading.Thread(target=call)
        worker.start()
        worker.join(30)
    assert box["error"] == "RPC failed for eth_chainId after 2 attempts: timed out"
    assert box["seconds"] < 4


def test_a_dripping_api_is_cut_at_its_deadline(demo):
    with FlakyProxy(demo.services["price_api"], always="drip", drip_seconds=0.3) as proxy:
        client = HttpClient("price API", proxy.url, deadline=1.0, max_attempts=2, backoff=0.01)
        t0 = time.monotonic()
        with pytest.raises(SourceUnavailable) as err:
            client.get_json("/simple/price", {"ids": "avalanche-2", "vs_currencies": "usd"})
    assert str(err.value) == "price API failed: timed out after 2 attempts"
    assert time.monotonic() - t0 < 4


def test_headers_dripped_to_a_worker_thread_are_cut_at_the_deadline():
    """Validator groups are fetched on worker threads, where no alarm can interrupt a read: a
    server that drips its status line and headers is still cut at each attempt's deadline."""
    import threading

    stop = threading.Event()

    def serve(listener: socket.socket) -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
            with conn:
                for i in range(len(head)):
                    if stop.wait(0.2):
                        break
                    try:
                        conn.sendall(head[i:i + 1])
                    except OSError:  # the client gave up, as it should
                        break

    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    client = HttpClient("validator API", f"http://127.0.0.1:{listener.getsockname()[1]}", deadline=1.0,
                        max_attempts=2, backoff=0.01)
    box: dict = {}

    def call() -> None:
        t0 = time.monotonic()
        try:
            client.get_json("/v1/networks/mainnet/validators", {})
        except SourceUnavailable as exc:
            box["error"] = str(exc)
        box["seconds"] = time.monotonic() - t0

    worker = threading.Thread(target=call)
    worker.start()
    worker.join(30)
    stop.set()
    listener.close()
    assert box["error"] == "validator API failed: timed out after 2 attempts"
    assert box["seconds"] < 4  # the whole answer would take 16 s to drip


def test_a_block_older_than_outs_is_refused_before_anything_is_built(demo, demo_profile, tmp_path):
    """A fallback node behind the one read last: a watch's run (forced past the build's own bound)
    refuses before building, so out/ does not move back to a block whose rebuilt price history would
    be shorter than the live one, which every later run would then be refused for."""
    from publisher.build.incremental import Cache
    from publisher.build.validate import load_dir
    from publisher.errors import PublisherError
    from publisher.runs import read_and_build

    out = tmp_path / "out"
    first = read_and_build(demo_profile, out, cache=Cache(), workers=1)
    before = load_dir(out)
    older = first.collected.snapshot.block.number - 1
    with pytest.raises(PublisherError, match=f"block {older} is older than the last run's"):
        read_and_build(demo_profile, out, older, cache=Cache(), workers=1, force=True, not_older=True)
    assert load_dir(out) == before


def test_head_moving_during_the_run_keeps_one_block(demo, tmp_path):
    """A block is mined before every request: the run still reads one block, and the published
    hash is that block's canonical hash."""
    rpc = RpcClient([demo.url])
    out = tmp_path / "out"
    with checkpoint(rpc), FlakyProxy(demo.url, on_request=lambda n, body: rpc.request("evm_mine", [])) as proxy:
        got = run_cli(["build", "--rpc-url", proxy.url, "--out", out], {"SOURCE_DATE_EPOCH": EPOCH})
        assert got.returncode == 0, got.stderr
        status = json.loads((out / "status.json").read_text())
        number = status["block"]["number"]
        assert header(rpc, number)["hash"] == status["block"]["hash"]
        assert int(header(rpc)["number"], 16) > number + 10  # the head really moved
    for path in ("metrics.json", "ggAvax.json", "prices.json", "stakers.json"):
        assert json.loads((out / path).read_text())["meta"]["block"]["hash"] == status["block"]["hash"], path


def _reorg_hook(rpc: RpcClient, at_request: int):
    """Before request ``at_request``: replace the head block by one with another timestamp (same
    number, new hash), as a one-block reorg does."""
    snap_id = rpc.request("evm_snapshot", [])
    head = header(rpc)
    rpc.request("evm_mine", [])  # the block the run will pin
    state = {"done": False, "replaced": None}

    def hook(n, body):
        if n == at_request and not state["done"]:
            state["done"] = True
            assert rpc.request("evm_revert", [snap_id]) is True
            rpc.request("evm_setNextBlockTimestamp", [hex(int(head["timestamp"], 16) + 7)])
            rpc.request("evm_mine", [])
            state["replaced"] = header(rpc)["hash"]
    return hook, state


def test_a_reorg_of_the_latest_block_is_retried_once_at_the_new_head(demo, tmp_path):
    rpc = RpcClient([demo.url])
    out = tmp_path / "out"
    with checkpoint(rpc):
        hook, state = _reorg_hook(rpc, at_request=3)
        with FlakyProxy(demo.url, on_request=hook) as proxy:
            got = run_cli(["build", "--rpc-url", proxy.url, "--out", out], {"SOURCE_DATE_EPOCH": EPOCH})
        assert got.returncode == 0, got.stderr
        status = json.loads((out / "status.json").read_text())
        # Published under the replacing block's hash, which is canonical.
        assert state["replaced"] and status["block"]["hash"] == state["replaced"]
        assert header(rpc, status["block"]["number"])["hash"] == state["replaced"]


def test_a_reorg_of_an_explicit_block_ends_the_run(demo, previous):
    rpc = RpcClient([demo.url])
    before = tree(previous)
    with checkpoint(rpc):
        hook, _state = _reorg_hook(rpc, at_request=3)
        pinned = int(header(rpc)["number"], 16)
        with FlakyProxy(demo.url, on_request=hook) as proxy:
            got = run_cli(["build", "--rpc-url", proxy.url, "--block", pinned, "--out", previous, "--force"],
                          sources_env(demo))
    line = failed(got)
    assert re.fullmatch(rf"error: block {pinned} was replaced during the run \(reorg: 0x[0-9a-f]{{8}}… is no longer "
                        rf"canonical, now 0x[0-9a-f]{{8}}…\): nothing was written", line), line
    assert tree(previous) == before


def test_a_reorg_right_after_the_pin_that_takes_the_head_back_ends_the_run(demo, previous, tmp_path):
    """The latest block is pinned, then the chain goes back below it and below the live run's
    block: the run, which retries at the new head, ends naming the reorg as the cause of reading
    an older block. (A new head at or after the live run's block is built: see above.)"""
    rpc = RpcClient([demo.url])
    with checkpoint(rpc):
        snap_id = rpc.request("evm_snapshot", [])
        back_to = int(header(rpc)["number"], 16)
        rpc.request("evm_mine", [])
        live = tmp_path / "live"
        got = run_cli(["build", "--rpc-url", demo.url, "--out", live], sources_env(demo))
        assert got.returncode == 0, got.stderr
        assert json.loads((live / "status.json").read_text())["block"]["number"] == back_to + 1
        before = tree(live)
        rpc.request("evm_mine", [])  # the block the run pins
        state = {"done": False}

        def hook(n, body):
            if n == 2 and not state["done"]:  # request 1 pinned the head
                state["done"] = True
                assert rpc.request("evm_revert", [snap_id]) is True

        with FlakyProxy(demo.url, on_request=hook) as proxy:
            got = run_cli(["build", "--rpc-url", proxy.url, "--out", live], sources_env(demo))
        assert state["done"]
    line = failed(got)
    assert re.fullmatch(rf"error: block {back_to + 2} was replaced during the run \(reorg: 0x[0-9a-f]{{8}}… is no longer "
                        rf"canonical\), and the new head, block {back_to}, is older than the last run's {back_to + 1}: "
                        rf"nothing was written", line), line
    assert tree(live) == before


def test_a_block_older_than_the_live_run_is_refused_before_anything_is_built(demo, previous):
    """Seeding writes every staker and minipool in the demo's last block: the block before it has
    none. Refused naming both blocks; with --force it is built, every page included."""
    live_block = json.loads((previous / "status.json").read_text())["block"]["number"]
    older = live_block - 1
    before = tree(previous)
    got = run_cli(["build", "--rpc-url", demo.url, "--block", older, "--out", previous], sources_env(demo))
    assert failed(got) == (f"error: refusing to write {previous}: block {older} is older than the last run's "
                           f"{live_block}; --force overrides")
    assert tree(previous) == before

    got = run_cli(["build", "--rpc-url", demo.url, "--block", older, "--out", previous, "--force"], sources_env(demo))
    assert got.returncode == 0, got.stderr
    status = json.loads((previous / "status.json").read_text())
    assert status["block"]["number"] == older
    assert json.loads((previous / "stakers.json").read_text())["count"] == 0
    for page in ("index.html", "docs.html", "calculator.html"):
        assert (previous / page).stat().st_size > 1000, page
    docs = (previous / "docs.html").read_text()
    assert f"No example response: block {older} has no staker to show." in docs
    assert f"No example response: block {older} has no minipool to show." in docs
    assert 'href="docs.html#stakers_address"' in (previous / "index.html").read_text()
    got = run_cli(["check", previous])
    assert got.returncode == 0, got.stderr


def _storage_slot(rpc: RpcClient, address: str, view) -> int:
    """The storage slot (among the first 64) that holds what ``view`` answers: the one whose
    change the view follows."""
    value = eth_call(rpc, address, view)
    for slot in range(64):
        if int(rpc.request("eth_getStorageAt", [address, hex(slot), "latest"]), 16) != value:
            continue
        _set_storage(rpc, address, slot, value + 1)
        follows = eth_call(rpc, address, view) == value + 1
        _set_storage(rpc, address, slot, value)
        if follows:
            return slot
    raise AssertionError(f"no slot of {address} holds its {view.signature}")


def _set_storage(rpc: RpcClient, address: str, slot: int, value: int) -> None:
    rpc.request("anvil_setStorageAt", [address, hex(slot), "0x" + value.to_bytes(32, "big").hex()])


# (id, contract, view, the cause's text after "refusing to read block N: ")
HUGE_COUNTS = [
    ("queue ids", "WithdrawQueue", abis.wq_nextRequestId,
     "WithdrawQueue {address}: nextRequestId() is 18446744073709551616, outside the 0 to 1,000,000 request ids a run reads"),
    ("stakers", "Staking", abis.getStakerCount,
     "Staking.getStakerCount() is 18446744073709551616, outside the 0 to 1,000,000 stakers a run reads"),
    ("minipools", "MinipoolManager", abis.getMinipoolCount,
     "MinipoolManager.getMinipoolCount() is 18446744073709551616, outside the 0 to 1,000,000 minipools a run reads"),
]


@pytest.mark.parametrize("contract,view,cause", [c[1:] for c in HUGE_COUNTS], ids=[c[0] for c in HUGE_COUNTS])
def test_a_count_of_2_to_the_64_is_refused_before_anything_is_allocated(demo, previous, contract, view, cause):
    """A count the node answers is bounded before a call is made or a list allocated for it: under
    a 1 GiB address-space cap (a normal build of the demo fits in it), the run ends in seconds
    naming the count, not in a MemoryError."""
    rpc = RpcClient([demo.url])
    address = demo.addresses[contract]
    before = tree(previous)

    def capped():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    with checkpoint(rpc):
        _set_storage(rpc, address, _storage_slot(rpc, address, view), 2**64)
        rpc.request("evm_mine", [])
        block = int(header(rpc)["number"], 16)
        t0 = time.monotonic()
        got = run_cli(["build", "--rpc-url", demo.url, "--out", previous], sources_env(demo), preexec_fn=capped)
    assert failed(got) == f"error: refusing to read block {block}: " + cause.format(address=address)
    assert time.monotonic() - t0 < 60
    assert tree(previous) == before


def test_queue_counts_that_contradict_each_other_are_refused_before_the_ids_are_read(demo, previous):
    rpc = RpcClient([demo.url])
    q = demo.addresses["WithdrawQueue"]
    pending, fulfilled = eth_call(rpc, q, abis.wq_getPendingRequestsCount), eth_call(rpc, q, abis.wq_getFulfilledRequestsCount)
    before = tree(previous)
    with checkpoint(rpc):
        _set_storage(rpc, q, _storage_slot(rpc, q, abis.wq_nextRequestId), 1)
        rpc.request("evm_mine", [])
        block = int(header(rpc)["number"], 16)
        got = run_cli(["build", "--rpc-url", demo.url, "--out", previous], sources_env(demo))
    assert pending + fulfilled > 1
    assert failed(got) == (f"error: refusing to read block {block}: WithdrawQueue {q}: it counts {pending} pending and "
                           f"{fulfilled} fulfilled requests, but has issued 1 ids (nextRequestId)")
    assert tree(previous) == before


def _doctor(snapshot: Path, into: Path, how: str) -> str:
    """A copy of a saved snapshot with its queue doctored; returns the cause it must be refused with."""
    doc = json.loads(snapshot.read_text())
    q = doc["withdraw_queue"]
    label = f"WithdrawQueue {q['address']}"
    funded = [r for r in q["requests"] if r["fulfilled"]]
    total = int(q["total_allocated_funds"])
    assert funded and total == sum(int(r["allocated_funds"]) for r in funded)
    if how == "allocated funds doubled":  # each request's and the total: the sum still agrees
        for r in funded:
            r["allocated_funds"] = str(2 * int(r["allocated_funds"]))
        q["total_allocated_funds"] = str(2 * total)
        first = funded[0]
        cause = (f"{label}: request {first['id']} has {first['allocated_funds']} wei allocated, more than the "
                 f"{first['expected_assets']} wei it is owed")
    elif how == "total doubled":
        q["total_allocated_funds"] = str(2 * total)
        cause = f"{label}: fulfilled requests hold {total} wei, totalAllocatedFunds() says {2 * total}"
    else:  # a funded request dropped from the records
        q["requests"] = [r for r in q["requests"] if r is not funded[0]]
        q["total_allocated_funds"] = str(total - int(funded[0]["allocated_funds"]))
        n = len(q["requests"])
        cause = (f"{label}: {n - len(funded) + 1} pending and {len(funded) - 1} fulfilled open records, but the queue "
                 f"counts {q['pending_count']} pending and {q['fulfilled_count']} fulfilled")
    into.write_text(json.dumps(doc))
    return "error: snapshot invariant violated: " + cause


@pytest.mark.parametrize("how", ["allocated funds doubled", "total doubled", "a funded request dropped"])
def test_a_doctored_snapshot_is_refused_by_the_invariants_a_read_is_held_to(demo, base, previous, tmp_path, how):
    doctored = tmp_path / "doctored.json"
    cause = _doctor(_snapshot(demo, base.parent), doctored, how)
    before = tree(previous)
    got = run_cli(["build", "--from-snapshot", doctored, "--out", previous, "--force"])
    assert failed(got) == cause
    assert tree(previous) == before


def test_the_same_invariant_refuses_the_chain_read(demo, previous):
    """The queue's own total doubled on the chain: the read is refused by the check a saved
    snapshot is held to, in the same words."""
    rpc = RpcClient([demo.url])
    q = demo.addresses["WithdrawQueue"]
    total = eth_call(rpc, q, abis.wq_totalAllocatedFunds)
    before = tree(previous)
    with checkpoint(rpc):
        _set_storage(rpc, q, _storage_slot(rpc, q, abis.wq_totalAllocatedFunds), 2 * total)
        rpc.request("evm_mine", [])
        got = run_cli(["build", "--rpc-url", demo.url, "--out", previous], sources_env(demo))
    assert failed(got) == (f"error: snapshot invariant violated: WithdrawQueue {q}: fulfilled requests hold {total} wei, "
                           f"totalAllocatedFunds() says {2 * total}")
    assert tree(previous) == before


def test_a_queue_that_vanishes_is_refused_unless_forced_and_warned_of_when_forced(demo, previous, moto):
    """The profile's queue address loses its code between runs: the build refuses, naming the queue
    and why; forced, it publishes noQueue with a warning on the command line and in /status; and
    publish refuses it against the bucket, which still holds the queue."""
    rpc = RpcClient([demo.url])
    q = demo.addresses["WithdrawQueue"]
    bucket, s3 = _bucket(moto)
    publish = ["publish", "--dir", previous, "--bucket", bucket, "--endpoint-url", moto]
    assert run_cli(publish, AWS).returncode == 0
    live = _objects(s3, bucket)
    before = tree(previous)
    with checkpoint(rpc):
        rpc.request("anvil_setCode", [q, "0x"])
        rpc.request("evm_mine", [])
        block = int(header(rpc)["number"], 16)
        why = f"no contract code for WithdrawQueue at {q} at block {block} (wrong network or address?)"
        got = run_cli(["build", "--rpc-url", demo.url, "--out", previous], sources_env(demo))
        assert failed(got) == (f"error: refusing to write {previous}: the withdrawal queue {q} of the last run is "
                               f"gone: /withdrawals would be noQueue ({why})")
        assert tree(previous) == before
        got = run_cli(["build", "--rpc-url", demo.url, "--out", previous, "--force"], sources_env(demo))
    assert got.returncode == 0, got.stderr
    warning = f"/withdrawals is published as noQueue although the profile names a queue: {why}"
    assert f"warning   {warning}" in got.stdout.splitlines()
    assert warning in json.loads((previous / "status.json").read_text())["warnings"]
    assert json.loads((previous / "withdrawals.json").read_text())["status"] == "noQueue"
    assert not (previous / "withdrawals").exists()
    assert failed(run_cli(publish, AWS)) == (f"error: refusing to publish to s3://{bucket}/: the withdrawal queue {q} "
                                             f"of the last run is gone: /withdrawals would be noQueue ({why}); "
                                             "--force overrides")
    assert _objects(s3, bucket) == live


# ---- third-party sources --------------------------------------------------------------------------

# (id, {service: Fault}, expected: "ok" + a warning, or the failure's cause)
SOURCE_FAULTS = [
    ("validator API 500, P-Chain up", {"glacier": Fault(status=500)}, ("ok", "using P-Chain RPC instead")),
    ("validator API 429 twice", {"glacier": Fault(status=429, times=2, retry_after="0")}, ("ok", None)),
    ("validator API and P-Chain down", {"glacier": Fault(status=500), "pchain": Fault(status=503)},
     ("fail", "validator data unavailable: validator API failed: HTTP 500 after 5 attempts; P-Chain RPC failed: HTTP 503")),
    ("validator API malformed", {"glacier": Fault(malformed=True)}, ("fail", "validator API returned a malformed body")),
    ("validator API endless pages", {"glacier": Fault(page_loop=True)}, ("fail", "pagination")),
    ("price API down", {"prices": Fault(status=503)}, ("ok", "price cross-check skipped: price API failed: HTTP 503")),
    ("price API malformed", {"prices": Fault(body='{"avalanche-2":{"usd":"x"}}')}, ("ok", "price cross-check skipped")),
    ("price API divergent", {"prices": Fault(divergence_pct=40)}, ("fail", "price API: AVAX/USD")),
]


@pytest.mark.parametrize("faults,expect", [c[1:] for c in SOURCE_FAULTS], ids=[c[0] for c in SOURCE_FAULTS])
def test_source_faults(demo, previous, faults, expect):
    for name, fault in faults.items():
        getattr(demo.standins, name).fault = fault
    before = tree(previous)
    got = run_cli(["build", "--rpc-url", demo.url, "--out", previous], sources_env(demo))
    outcome, text = expect
    if outcome == "fail":
        assert text in failed(got)
        assert tree(previous) == before
    else:
        assert got.returncode == 0, got.stderr
        if text:
            warnings = json.loads((previous / "status.json").read_text())["warnings"]
            assert any(text in w for w in warnings), warnings


def test_a_dripping_price_api_ends_the_run_naming_it(demo, previous):
    before = tree(previous)
    with FlakyProxy(demo.services["price_api"], always="drip", drip_seconds=0.5) as proxy:
        got = run_cli(["build", "--rpc-url", demo.url, "--out", previous],
                      sources_env(demo, PUBLISHER_PRICE_API_URL=proxy.url, PUBLISHER_RUN_DEADLINE=RUN_DEADLINE))
    assert f"the run exceeded its {RUN_DEADLINE}s deadline while waiting for the price API" in failed(got)
    assert tree(previous) == before


# ---- out/ ---------------------------------------------------------------------------------------


def test_out_on_a_read_only_file_system(demo, base):
    got = run_cli(["build", "--from-snapshot", _snapshot(demo, base.parent), "--out", "/proc/ggp-out"])
    assert "/proc" in failed(got)


def test_out_on_a_full_disk_leaves_the_previous_out(demo, previous):
    """A file-size limit stands in for a full disk: writes fail with EFBIG midway through."""
    before = tree(previous)

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    snap = _snapshot(demo, previous.parent)
    got = run_cli(["build", "--from-snapshot", snap, "--out", previous, "--force"], preexec_fn=limit)
    assert "File too large" in failed(got)
    assert tree(previous) == before
    assert not [p for p in previous.parent.iterdir() if p.name.startswith(".out.")]  # no temp dir left


def _snapshot(demo, where: Path) -> Path:
    path = where / "snap.json"
    if not path.exists():
        got = run_cli(["snapshot", "--rpc-url", demo.url, "--out", path], {"SOURCE_DATE_EPOCH": EPOCH})
        assert got.returncode == 0, got.stderr
    return path


# ---- hand edits in out/ -------------------------------------------------------------------------

AWS = {"AWS_ACCESS_KEY_ID": "AKIATESTPUBLISHER", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
       "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_MAX_ATTEMPTS": "2"}


def _edit(path: Path, how: str) -> None:
    """Change one digit of a file as a person would: in place (same file, same size: only its
    modification time tells), or by writing a new file and renaming it over (as editors save)."""
    data = bytearray(path.read_bytes())
    at = re.search(rb":([0-9])", bytes(data)).start(1)  # the first number's first digit
    data[at] = ord("7") if data[at] != ord("7") else ord("3")
    if how == "in place":
        with open(path, "r+b") as f:
            f.write(bytes(data))
    else:
        tmp = path.with_name(f".{path.name}.swp")
        tmp.write_bytes(bytes(data))
        os.replace(tmp, path)


def _bucket(moto) -> tuple[str, object]:
    import uuid

    import boto3

    name = f"api-{uuid.uuid4().hex[:12]}"
    s3 = boto3.client("s3", endpoint_url=moto, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    s3.create_bucket(Bucket=name)
    return name, s3


def _objects(s3, bucket: str) -> dict[str, bytes]:
    return stored_objects(s3, bucket)


def _published(directory: Path) -> dict[str, str]:
    """``tree`` without the build's record (which holds each file's modification time and inode)."""
    return {name: sha for name, sha in tree(directory).items() if name != ".build.json"}


def _problems(got: subprocess.CompletedProcess, directory: Path) -> list[str]:
    """The problem lines of a failed ``publisher check``, after checking its last line."""
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 1 and lines[-1] == f"error: {len(lines) - 1} problem(s) in {directory}", got.stderr
    return lines[:-1]


@pytest.fixture(scope="module")
def hand_edit_bucket(moto) -> tuple[str, object]:
    """One bucket for the hand-edit cases: each builds the same bytes from the same snapshot and
    publishes them, so after the first case's upload the others' publish has nothing to upload."""
    return _bucket(moto)


# Each way of editing after each kind of second build, one file each way per case.
@pytest.mark.parametrize(("after", "prices_how", "staker_how"), [("incremental", "in place", "renamed over"),
                                                                 ("full", "renamed over", "in place")])
def test_a_hand_edit_in_out_is_found_by_check_refused_by_publish_and_replaced_by_the_next_build(
        demo, base, moto, hand_edit_bucket, tmp_path, after, prices_how, staker_how):
    """Two builds (the second incremental, carrying hard links into the first tree, or --full),
    then /prices and a staker's file are edited in out/ (one in place, the other written anew and
    renamed over it): check names both, publish refuses naming them and leaves the bucket as it
    was, and the next build puts the built bytes back."""
    snap = _snapshot(demo, base.parent)
    out = tmp_path / "out"
    for more in ([], ["--full"] if after == "full" else []):
        got = run_cli(["build", "--from-snapshot", snap, "--out", out, *more], {"SOURCE_DATE_EPOCH": EPOCH})
        assert got.returncode == 0, got.stderr
    built = _published(out)
    bucket, s3 = hand_edit_bucket
    publish = ["publish", "--dir", out, "--bucket", bucket, "--endpoint-url", moto]
    assert run_cli(publish, AWS).returncode == 0
    live = _objects(s3, bucket)

    staker = sorted((out / "stakers").glob("0x*.json"))[0]
    staker_url = f"/stakers/{staker.stem}"
    _edit(out / "prices.json", prices_how)
    _edit(staker, staker_how)
    edited = tree(out)
    assert _published(out) != built
    got = run_cli(["check", out])
    assert _problems(got, out) == ["problem   /prices changed since it was built",
                                   f"problem   {staker_url} changed since it was built"]
    assert failed(run_cli(publish, AWS)) == (f"error: refusing to publish {out}: /prices changed since it was built; "
                                             f"{staker_url} changed since it was built; build again to replace them")
    assert _objects(s3, bucket) == live and tree(out) == edited

    got = run_cli(["build", "--from-snapshot", snap, "--out", out], {"SOURCE_DATE_EPOCH": EPOCH})
    assert got.returncode == 0, got.stderr
    assert _published(out) == built
    assert run_cli(["check", out]).returncode == 0
    got = run_cli(publish, AWS)
    assert got.returncode == 0, got.stderr
    assert _objects(s3, bucket) == live


def test_a_stray_or_missing_file_in_out_is_reported_and_does_not_outlive_the_next_builds(demo, base, tmp_path):
    snap = _snapshot(demo, base.parent)
    out = tmp_path / "out"
    for _ in range(2):
        assert run_cli(["build", "--from-snapshot", snap, "--out", out], {"SOURCE_DATE_EPOCH": EPOCH}).returncode == 0
    built = _published(out)
    stakers = sorted((out / "stakers").glob("0x*.json"))
    stray = out / "stakers" / ("0x" + "00" * 20 + ".json")
    shutil.copyfile(stakers[0], stray)  # a file that would pass its schema
    stakers[1].unlink()
    got = run_cli(["check", out])
    assert _problems(got, out) == [f"problem   /stakers/{'0x' + '00' * 20} is not a file the build wrote (its record does not list it)",
                                   f"problem   /stakers/{stakers[1].stem} is missing (the build wrote it)",
                                   "problem   /stakers: 1 stakers have no /stakers/{address} file"]
    for _ in range(2):  # into the other tree, then into the one that held the stray
        assert run_cli(["build", "--from-snapshot", snap, "--out", out], {"SOURCE_DATE_EPOCH": EPOCH}).returncode == 0
        assert _published(out) == built
    assert not list(tmp_path.glob(".out.*/stakers/" + stray.name))
    assert run_cli(["check", out]).returncode == 0


# ---- accumulated data ---------------------------------------------------------------------------


def _with_history(directory: Path, edit) -> None:
    path = directory / "prices" / "history.json"
    doc = json.loads(path.read_text())
    doc["points"] = edit(doc["points"])
    path.write_text(json.dumps(doc))


def test_check_refuses_a_history_that_shrank_or_changed_against_the_previous_run(base, tmp_path):
    shrunk, changed = tmp_path / "shrunk", tmp_path / "changed"
    shutil.copytree(base, shrunk)
    shutil.copytree(base, changed)
    n = len(json.loads((base / "prices" / "history.json").read_text())["points"])
    _with_history(shrunk, lambda pts: pts[5:])
    _with_history(changed, lambda pts: [dict(pts[0], ggpInAvaxWei=str(int(pts[0]["ggpInAvaxWei"]) + 1)), *pts[1:]])
    got = run_cli(["check", shrunk, "--previous", base])
    assert f"/prices/history would shrink from {n} to {n - 5} entries" in got.stderr and got.returncode == 1
    got = run_cli(["check", changed, "--previous", base])
    assert "/prices/history would rewrite 1 entries recorded by earlier runs" in got.stderr and got.returncode == 1
    assert run_cli(["check", base, "--previous", base]).returncode == 0


def test_build_refuses_to_shrink_the_history_unless_forced(demo, base, previous, tmp_path):
    """The previous run's history holds an older point that a rebuild from events cannot produce
    (as when the build cannot resume from it): the build would drop it, and is refused; --force
    accepts it. The previous run is built from a snapshot holding that point, at a block hash this
    chain does not have (an edit of out/ would not do: the bounds compare only with files as their
    build wrote them)."""
    doc = json.loads(_snapshot(demo, base.parent).read_text())
    older = {**doc["price_history"][0], "date": "2000-01-01", "ggavax_assets_per_share": None, "ggavax_block": None,
             "ggavax_time": None, "ggavax_source": None}
    doc["price_history"].insert(0, older)
    doc["block"]["hash"] = "0x" + "ab" * 32  # the history's cursor: the next build cannot resume from it
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps(doc))
    got = run_cli(["build", "--from-snapshot", foreign, "--out", previous, "--force"])
    assert got.returncode == 0, got.stderr
    assert json.loads((previous / "prices" / "history.json").read_text())["points"][0]["date"] == "2000-01-01"
    before = tree(previous)
    got = run_cli(["build", "--rpc-url", demo.url, "--out", previous], sources_env(demo))
    line = failed(got)
    assert "/prices/history" in line and ("shrink" in line or "drop" in line), line
    assert tree(previous) == before
    got = run_cli(["build", "--rpc-url", demo.url, "--out", previous, "--force"], sources_env(demo))
    assert got.returncode == 0, got.stderr
