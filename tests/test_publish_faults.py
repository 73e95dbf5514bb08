"""Publish faults through the real CLI against moto's S3 server behind a failing proxy: S3 errors
after N uploads, dropped connections, the manifest or status upload failing, a missing bucket, bad
and absent credentials, accumulated data shrinking. A failed run leaves the live status and
manifest byte-identical, prints one line without secrets, and a rerun converges.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pytest
from support.s3_fault_proxy import S3FaultProxy, stored_objects

from publisher.build.pipeline import build
from publisher.chain.rpc import RpcClient
from publisher.config import load_profile
from publisher.snapshot import Snapshot

EPOCH = "1800000000"
AWS_SECRET = "wJalrXUtnFEMI-K7MDENG-never-print-me"
API_KEY = "sk-live-7f3a9c"


def aws_env(**extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISHER_", "AWS_"))}
    env.update({"AWS_ACCESS_KEY_ID": "AKIATESTPUBLISHER", "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "2", "SOURCE_DATE_EPOCH": EPOCH,
                "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"})
    env.update(extra)
    return env


def cli(args, env=None, timeout=180) -> subprocess.CompletedProcess:
    got = subprocess.run([sys.executable, "-m", "publisher.cli", *map(str, args)], env=env or aws_env(),
                         capture_output=True, text=True, timeout=timeout)
    assert AWS_SECRET not in got.stdout + got.stderr and API_KEY not in got.stdout + got.stderr
    return got


def one_line(got) -> str:
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 1 and len(lines) == 1, got.stderr[-2000:]
    assert lines[0].startswith("error: ") and "unexpected" not in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def runs(demo, tmp_path_factory) -> dict[str, Path]:
    """Two consecutive builds of the devnet: "first", and "second" three blocks later."""
    root = tmp_path_factory.mktemp("runs")
    env = aws_env(PUBLISHER_VALIDATOR_API_URL=demo.services["validator_api"],
                  PUBLISHER_PCHAIN_RPC_URL=demo.services["pchain_rpc"], PUBLISHER_VALIDATOR_API_KEY=API_KEY)
    rpc = RpcClient([demo.url])
    snap_id = rpc.request("evm_snapshot", [])
    try:
        got = cli(["build", "--rpc-url", demo.url, "--out", root / "first"], env, timeout=300)
        assert got.returncode == 0, got.stderr
        for _ in range(3):
            rpc.request("evm_mine", [])
        got = cli(["snapshot", "--rpc-url", demo.url, "--out", root / "second.json"], env, timeout=300)
        assert got.returncode == 0, got.stderr
        got = cli(["build", "--from-snapshot", root / "second.json", "--out", root / "second"], env, timeout=300)
        assert got.returncode == 0, got.stderr
    finally:
        rpc.request("evm_revert", [snap_id])
    return {"first": root / "first", "second": root / "second", "second_snapshot": root / "second.json"}


@pytest.fixture
def bucket(moto):
    name = f"api-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto, region_name="us-east-1", aws_access_key_id="x",
                 aws_secret_access_key="x").create_bucket(Bucket=name)
    return name


def objects(moto, bucket, only: tuple[str, ...] | None = None) -> dict[str, bytes]:
    s3 = boto3.client("s3", endpoint_url=moto, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    if only is not None:
        keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket) for o in page.get("Contents", ())]
        return {k: s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys if k in only}
    return stored_objects(s3, bucket)


LIVE = ("status", "_manifest.json")


def publish(directory, bucket, endpoint, *more, env=None):
    return cli(["publish", "--dir", directory, "--bucket", bucket, "--endpoint-url", endpoint, *more], env)


def consistent(live: dict[str, bytes]) -> None:
    """Status, manifest and objects agree: every shard matches the root's digest, every manifest
    entry is there with its sha256, and no aggregate is stamped after the status block."""
    import hashlib

    status = json.loads(live["status"])
    root = json.loads(live["_manifest.json"])
    entries = {}
    for name, digest in root["shards"].items():
        shard = live[f"_manifest/{name}.json"]
        assert hashlib.sha256(shard).hexdigest() == digest, name
        entries.update(json.loads(shard))
    assert entries, "manifest lists no objects"
    for key, entry in entries.items():
        assert key in live, key
        assert hashlib.sha256(live[key]).hexdigest() == entry["sha256"], key
    for key, body in live.items():
        if key.endswith(".json") or key in ("_manifest.json", "status"):
            continue
        try:
            doc = json.loads(body)
        except ValueError:
            continue
        meta = doc.get("meta") if isinstance(doc, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get("block"), dict):
            # this run's block, or the older one a file carried unchanged was read at
            assert meta["block"]["number"] <= status["block"]["number"], key


@pytest.mark.parametrize("fault", ["500 after 3 PUTs", "dropped connections", "manifest PUT fails", "status PUT fails"])
def test_a_failed_publish_keeps_the_live_status_and_a_rerun_converges(runs, moto, bucket, fault):
    assert publish(runs["first"], bucket, moto).returncode == 0
    before = objects(moto, bucket, LIVE)
    kwargs = {"500 after 3 PUTs": {"fail_puts_after": 3}, "dropped connections": {"drop_puts_after": 3},
              "manifest PUT fails": {"fail_keys": ("_manifest.json",)}, "status PUT fails": {"fail_keys": ("status",)}}[fault]
    with S3FaultProxy(moto, **kwargs) as proxy:
        got = publish(runs["second"], bucket, proxy.url, "--prefix", "")
    line = one_line(got)
    assert line.startswith(f"error: s3://{bucket}/") and "failed" in line, line
    after = objects(moto, bucket, LIVE)
    assert after["status"] == before["status"]  # the live run is still the first one
    if fault != "status PUT fails":
        assert after["_manifest.json"] == before["_manifest.json"]
    assert publish(runs["second"], bucket, moto).returncode == 0  # the rerun completes the job
    live = objects(moto, bucket)
    assert json.loads(live["status"])["block"] == json.loads((runs["second"] / "status.json").read_text())["block"]
    consistent(live)


def test_missing_bucket(runs, moto):
    got = publish(runs["first"], f"nope-{uuid.uuid4().hex[:8]}", moto)
    assert "NoSuchBucket" in one_line(got)


def test_the_run_deadline_holds_against_uploads_that_trickle(runs, moto, bucket):
    """Each socket wait of a trickling answer is short, so no per-request timeout fires: the run's
    deadline still ends the run on time, without waiting for the stalled uploads."""
    import time

    with S3FaultProxy(moto, drip_puts_under="stakers/") as proxy:
        t0 = time.monotonic()
        got = publish(runs["first"], bucket, proxy.url, env=aws_env(PUBLISHER_RUN_DEADLINE="3"))
        took = time.monotonic() - t0
    assert "deadline" in one_line(got)
    assert took < 15, took  # the trickle alone lasts a minute per object


def test_a_run_after_one_its_deadline_stopped_waits_for_its_stragglers(runs, moto, bucket, monkeypatch):
    """In a long-lived process (the watch) the requests a stopped run left in flight must not land
    after the next run's: that run is refused until they have ended."""
    import threading

    from publisher.deadline import DeadlineExceeded, deadline
    from publisher.errors import PublisherError
    from publisher.publish import publish as publish_dir

    for k, v in aws_env().items():
        monkeypatch.setenv(k, v)
    with S3FaultProxy(moto, drip_puts_under="stakers/", drip_seconds=8) as proxy:
        with pytest.raises(DeadlineExceeded), deadline(2, "the run") as token:
            if token is None:
                pytest.fail("no alarm could be set in this process")
            publish_dir(runs["first"], bucket, endpoint_url=proxy.url)
        with pytest.raises(PublisherError, match="of an earlier run are still in flight"):
            publish_dir(runs["first"], bucket, endpoint_url=proxy.url)
        for t in threading.enumerate():
            if t.name.startswith("publish-request"):
                t.join(30)
        assert publish_dir(runs["first"], bucket, endpoint_url=moto).block


def test_bad_credentials_change_nothing(runs, moto, bucket):
    assert publish(runs["first"], bucket, moto).returncode == 0
    before = objects(moto, bucket)
    with S3FaultProxy(moto, bad_key="AKIABADBADBAD") as proxy:
        got = publish(runs["second"], bucket, proxy.url, env=aws_env(AWS_ACCESS_KEY_ID="AKIABADBADBAD"))
    assert "InvalidAccessKeyId" in one_line(got)
    assert objects(moto, bucket) == before


def test_absent_credentials_change_nothing(runs, moto, bucket):
    env = aws_env()
    del env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    got = publish(runs["first"], bucket, moto, env=env)
    assert "credentials" in one_line(got).lower()
    assert objects(moto, bucket) == {}


def test_a_shrinking_history_is_refused_unless_forced(runs, moto, bucket, tmp_path):
    """The scheduled job builds into a fresh out/: if its history read failed it would hold fewer
    points than the live one. Publish compares with the bucket and refuses."""
    assert publish(runs["first"], bucket, moto).returncode == 0
    before = objects(moto, bucket)
    snap = Snapshot.load(runs["second_snapshot"])
    n = len(json.loads((runs["first"] / "prices" / "history.json").read_text())["points"])
    short = tmp_path / "short"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        build(dataclasses.replace(snap, price_history=snap.price_history[-1:]), load_profile("devnet"), short)
    got = publish(short, bucket, moto)
    assert f"/prices/history would shrink from {n} to 1 entries" in one_line(got)
    assert objects(moto, bucket) == before
    # Without the manifest (lost, or of another format) nothing vouches that a live object is ours:
    # the bounds read the live ones, instead of comparing the build with itself.
    s3 = boto3.client("s3", endpoint_url=moto, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    s3.delete_object(Bucket=bucket, Key="_manifest.json")
    got = publish(short, bucket, moto)
    assert f"/prices/history would shrink from {n} to 1 entries" in one_line(got)
    assert publish(short, bucket, moto, "--force").returncode == 0


def test_secrets_never_reach_the_bucket_or_out(runs, moto, bucket):
    assert publish(runs["second"], bucket, moto).returncode == 0
    for key, body in objects(moto, bucket).items():
        for secret in (AWS_SECRET, API_KEY, "AKIATESTPUBLISHER", "127.0.0.1"):
            assert secret.encode() not in body, (key, secret)
    for f in runs["second"].rglob("*"):
        if f.is_file():
            assert API_KEY.encode() not in f.read_bytes()
