"""`publisher watch` against a moving devnet and moto's S3 server.

The watch runs in this process; each line it prints hands control to the test, which moves the
chain (a stake, quiet blocks, a pause switch, a reorg, a price jump the guards refuse) before the
watch's next look. Every publish is then read back from the bucket. The command itself is run as
a user runs it: a subprocess, stopped with SIGTERM.
"""
from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
import weakref

import boto3
import pytest
from ggp_devnet import devnet_profile, running
from ggp_devnet.operator import set_paused, set_price, stake_ggp_for
from support.chain import eth_call, head, header, send

from publisher import watch as watch_module
from publisher.chain import abis
from publisher.chain.rpc import RpcClient
from publisher.config import load_profile
from publisher.runs import Target
from publisher.watch import watch

WAD = 10**18
BUCKET = "api-watch"


@pytest.fixture(scope="module")
def net():
    with running("demo") as devnet:  # its own chain: these tests move it
        yield devnet


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTPUBLISHER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture
def bucket(moto, request):
    name = f"{BUCKET}-{request.node.name[-20:].replace('_', '-').lower()}"
    boto3.client("s3", endpoint_url=moto).create_bucket(Bucket=name)
    return name


def read(moto: str, bucket: str, key: str) -> dict:
    return json.loads(boto3.client("s3", endpoint_url=moto).get_object(Bucket=bucket, Key=key)["Body"].read())


@pytest.mark.slow
def test_watch_publishes_each_change_and_nothing_else(net, moto, bucket, tmp_path):
    client = RpcClient([net.url])
    profile = devnet_profile(load_profile("devnet"), net)
    a = net.addresses
    staker = net.scenario.stakers[0]["stakerAddr"]
    staked = lambda: read(moto, bucket, f"stakers/{staker.lower()}")["staker"]["ggpStaked"]  # noqa: E731
    live_block = lambda: read(moto, bucket, "status")["block"]["number"]  # noqa: E731
    seen: list[tuple[str, int]] = []  # (reason or "error", the bucket's block afterwards)
    state: dict = {}

    def on_line(line: str) -> None:
        reason = "error" if line.startswith("error") else line.split("(", 1)[1].split(";")[0].split(" ")[0]
        seen.append((reason, live_block()))
        step = len(seen)
        if step == 1:  # published at the head; now a stake (Staking emits GGPStaked)
            assert seen[0][1] == head(client)[0]
            state["before"] = staked()
            send(client, a["Staking"], stake_ggp_for.encode(staker, 7 * WAD))
        elif step == 2:
            assert staked() == state["before"] + 7
            # Blocks without a protocol log or setting change publish nothing; a pause (a Storage
            # write, no log) is found by the settings digest.
            for _ in range(3):
                client.request("evm_mine", [])
            send(client, a["Storage"], set_paused.encode("MinipoolManager", True))
        elif step == 3:
            assert read(moto, bucket, "featureFlags")["paused"]["MinipoolManager"] is True
            state["snapshot"] = client.request("evm_snapshot", [])
            state["at"] = staked()
            send(client, a["Staking"], stake_ggp_for.encode(staker, 5 * WAD))
        elif step == 4:
            assert staked() == state["at"] + 5
            # A reorg replaces the published block with one where the stake never happened.
            assert client.request("evm_revert", [state["snapshot"]]) is True
            for _ in range(2):
                client.request("evm_mine", [])
        elif step == 5:
            assert staked() == state["at"]
            # A GGP price ten times the last: a guard refuses it (the USD cross-check); the live data stays.
            state["live"] = read(moto, bucket, "status")
            ts = int(header(client)["timestamp"], 16)
            state["oracle"] = eth_call(client, a["Oracle"], abis.getGGPPriceInAVAX)[0]
            send(client, a["Oracle"], set_price.encode(state["oracle"] * 10, ts))
        elif step == 6:
            assert read(moto, bucket, "status") == state["live"]
            ts = int(header(client)["timestamp"], 16)
            send(client, a["Oracle"], set_price.encode(state["oracle"], ts + 1))

    done = watch(profile, tmp_path / "out", Target(bucket, endpoint_url=moto), poll=0.1,
                 heartbeat=3600, workers=2, runs=6, echo=on_line)
    reasons = [r for r, _ in seen]
    assert done == 6
    assert reasons == ["start", "logs", "settings", "logs", "reorg", "error", "logs"], seen
    assert seen[-1][1] == head(client)[0]  # the price put back: published at the head again
    blocks = [b for r, b in seen if r != "error"]
    assert blocks[:4] == sorted(blocks[:4]) and seen[5][1] == seen[4][1]


def test_heartbeat_publishes_an_unchanged_chain(net, moto, bucket, tmp_path):
    profile = devnet_profile(load_profile("devnet"), net)
    lines: list[tuple[float, str]] = []
    watch(profile, tmp_path / "out", Target(bucket, endpoint_url=moto), poll=0.1, heartbeat=1.5, workers=1, runs=2,
          echo=lambda line: lines.append((time.monotonic(), line)))
    assert [line.split("(")[1].split(";")[0] for _, line in lines] == ["start", "heartbeat"]
    assert lines[1][0] - lines[0][0] >= 1.5


def test_watch_command_runs_until_sigterm(net, moto, bucket, tmp_path):
    env = {**os.environ, "PUBLISHER_VALIDATOR_API_URL": net.services["validator_api"],
           "PUBLISHER_PCHAIN_RPC_URL": net.services["pchain_rpc"], "PUBLISHER_PRICE_API_URL": net.services["price_api"]}
    proc = subprocess.Popen([sys.executable, "-m", "publisher.cli", "watch", "--rpc-url", net.url, "--bucket", bucket,
                             "--endpoint-url", moto, "--poll", "0.2", "--out", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    published = threading.Event()

    def follow() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("block"):
                published.set()

    threading.Thread(target=follow, daemon=True).start()
    try:
        assert published.wait(60), lines
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        proc.kill()
    _, err = proc.communicate()
    assert lines[0].startswith("watching  devnet") and net.url not in "".join(lines) + err
    assert lines[-1].strip() == "stopping" and err == ""
    assert read(moto, bucket, "status")["block"]["number"] == head(RpcClient([net.url]))[0]


@pytest.mark.slow
def test_watch_follows_the_living_devnet(moto, bucket, tmp_path):
    """Protocol days pass between looks (prices, ggAVAX syncs, minipools cycling, distributions):
    each is published, and after each the bucket holds exactly the tree the build left."""
    import hashlib

    from ggp_devnet import running_live

    from publisher.build.validate import load_dir
    from publisher.publish.plan import object_key

    s3 = boto3.client("s3", endpoint_url=moto)
    out = tmp_path / "out"
    lines: list[str] = []

    def bucket_etags() -> dict[str, str]:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return {o["Key"]: o["ETag"].strip('"') for page in pages for o in page.get("Contents", ())
                if not o["Key"].startswith("_manifest")}

    with running_live(seed=3) as (net, live):
        profile = devnet_profile(load_profile("devnet"), net)
        distributions = len(live.distributions)
        # Four looks span 18 protocol days: prices every day, a ggAVAX sync, minipools ending and
        # cycling, and the GGP cycle's distribution (due some 16 days after the seeded head).
        runs = 4

        def on_line(line: str) -> None:
            lines.append(line)
            assert line.startswith("block"), line
            local = {object_key("", url): hashlib.md5(body).hexdigest() for url, body in load_dir(out).items()}
            assert bucket_etags() == local
            if len(lines) < runs:  # six protocol days before the next look (none after the last)
                for _ in range(6):
                    live.step()

        watch(profile, out, Target(bucket, endpoint_url=moto), poll=0.1, heartbeat=3600, workers=2, runs=runs, echo=on_line)
        moved = len(live.distributions) - distributions
    assert [line.split("(")[1].split(" ")[0].rstrip(";") for line in lines] == ["start"] + ["logs"] * (runs - 1)
    assert moved >= 1  # at least one GGP distribution happened between looks, and was published


@pytest.mark.slow
def test_a_move_the_bounds_refuse_waits_for_a_person_then_the_watch_carries_on(moto, bucket, tmp_path):
    """GGP triples (beyond the 50 % bound; the price API agrees): the watch refuses it every
    turn, the live data stays; once a person publishes it with --force, the watch goes on."""
    from publisher.build.incremental import Cache
    from publisher.publish import publish
    from publisher.runs import read_and_build

    with running("demo") as net:
        client = RpcClient([net.url])
        profile = devnet_profile(load_profile("devnet"), net)
        lines: list[str] = []
        state: dict = {}

        def on_line(line: str) -> None:
            lines.append(line)
            if len(lines) == 1:
                state["live"] = read(moto, bucket, "status")
                price, _ = eth_call(client, net.addresses["Oracle"], abis.getGGPPriceInAVAX)
                ts = int(header(client)["timestamp"], 16)
                send(client, net.addresses["Oracle"], set_price.encode(price * 3, ts + 1))
                avax_usd = net.scenario.prices[-1][2]
                net.scenario.prices.append((ts + 1, price * 3, avax_usd))
                net.standins.refresh()  # the USD cross-check sees the same move
            elif len(lines) == 3:
                assert read(moto, bucket, "status") == state["live"]  # refused twice, nothing changed
                read_and_build(profile, tmp_path / "by-hand", cache=Cache(), workers=1, force=True)
                publish(tmp_path / "by-hand", bucket, endpoint_url=moto, force=True)

        watch(profile, tmp_path / "out", Target(bucket, endpoint_url=moto), poll=0.1, heartbeat=3600, workers=1, runs=2,
              echo=on_line)
    assert [line.split()[0] for line in lines] == ["block", "error", "error", "resumed", "block"], lines
    assert "refusing to publish" in lines[1] and "ggpInAvax moved 200.0%" in lines[1]
    assert read(moto, bucket, "status")["block"]["number"] >= state["live"]["block"]["number"] + 1


def test_an_interrupt_during_the_collection_between_turns_is_raised_not_dropped():
    # A finalizer the collection runs receives the interrupt (its handler raises, as the CLI's
    # does): noted during the collection, it is raised after it, in the watch's own code.
    class Cycle:
        pass

    def interrupt(*_):
        raise KeyboardInterrupt

    ran = []
    before = signal.signal(signal.SIGINT, interrupt)
    gc.disable()  # the cycle is collected by the watch's collection, not by an automatic one before it
    try:
        cycle = Cycle()
        cycle.me = cycle
        weakref.finalize(cycle, lambda: (ran.append(True), os.kill(os.getpid(), signal.SIGINT), time.sleep(0.05)))
        del cycle
        with pytest.raises(KeyboardInterrupt):
            watch_module.collect_between_turns()
        assert ran == [True]
    finally:
        gc.enable()
        signal.signal(signal.SIGINT, before)
