"""publisher publish against moto's S3 and CloudFront in server mode, over real HTTP."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.server import ThreadedMotoServer
from support.trees import copy_of

from publisher.build.pipeline import build
from publisher.build.tree import trees
from publisher.build.validate import load_dir
from publisher.endpoints.registry import CACHE_POLICIES, file_for, match
from publisher.errors import PublisherError
from publisher.publish import publish
from publisher.publish.plan import MANIFEST_FORMAT, MANIFEST_KEY, SHARD_DIR, object_key

SECRET = "SeCrEt-9f2c1e-never-print-me"
EPOCH = "1800000000"
DATA = CACHE_POLICIES["data"].format(max_age=60)  # the devnet profile's cadence


@pytest.fixture(scope="module")
def endpoint():
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTPUBLISHER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    for var in ("AWS_MAX_ATTEMPTS", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def s3(endpoint):
    return boto3.client("s3", endpoint_url=endpoint)


@pytest.fixture
def bucket(s3):
    name = f"api-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


class Recorder:
    """Records S3 writes (and apart, reads) in call order through botocore's event hooks; can fail the
    Nth upload."""

    def __init__(self, fail_put: int | None = None):
        self.ops: list[tuple[str, str]] = []
        self.gets: list[str] = []  # reads, in call order (not in ops: those are the writes)
        self.fail_put = fail_put
        self.lock = threading.Lock()
        self.session = boto3.Session()
        self.session.events.register("provide-client-params.s3.PutObject", self._put)
        self.session.events.register("provide-client-params.s3.DeleteObjects", self._delete)
        self.session.events.register("provide-client-params.s3.GetObject", self._get)

    def _get(self, params, **_):
        with self.lock:
            self.gets.append(params["Key"])

    def _put(self, params, **_):
        with self.lock:
            self.ops.append(("put", params["Key"]))
            if self.fail_put is not None and len(self.puts) == self.fail_put:
                raise ClientError({"Error": {"Code": "InternalError", "Message": "injected failure"}}, "PutObject")

    def _delete(self, params, **_):
        with self.lock:
            self.ops.extend(("delete", o["Key"]) for o in params["Delete"]["Objects"])

    @property
    def puts(self) -> list[str]:
        return [k for op, k in self.ops if op == "put"]

    @property
    def deletes(self) -> list[str]:
        return [k for op, k in self.ops if op == "delete"]


def run(directory, bucket, endpoint, recorder=None, **kwargs):
    return publish(directory, bucket, endpoint_url=endpoint, session=recorder.session if recorder else None, **kwargs)


def cli(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "publisher.cli", "publish", *map(str, args)],
                          capture_output=True, text=True, env=dict(os.environ), timeout=60)
    assert SECRET not in proc.stdout + proc.stderr
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def contents(s3, bucket) -> dict[str, str]:
    """Key -> ETag of every object: one LIST instead of a GET per object (moto answers ~100/s)."""
    return {o["Key"]: o["ETag"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            for o in page.get("Contents", ())}


def etags(files: dict[str, bytes]) -> dict[str, str]:
    """What S3 reports as the ETag of a single-part upload: the MD5 of the body."""
    return {k: f'"{hashlib.md5(v).hexdigest()}"' for k, v in files.items()}


def get(s3, bucket, key) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def expected(directory, prefix="") -> dict[str, bytes]:
    return {object_key(prefix, url): body for url, body in load_dir(directory).items()}


def published(s3, bucket, prefix="") -> dict[str, str]:
    """The bucket's ETags without the manifest, to compare with etags(expected(...))."""
    return {k: v for k, v in contents(s3, bucket).items() if not is_manifest(k, prefix)}


def is_manifest(key: str, prefix: str = "") -> bool:
    return key == prefix + MANIFEST_KEY or key.startswith(prefix + SHARD_DIR)


def data_puts(rec) -> list[str]:
    return [k for k in rec.puts if not is_manifest(k)]


def manifest_files(s3, bucket, prefix="") -> dict[str, dict]:
    """Every entry of the bucket's manifest: its root's /status entry and its shards'."""
    root = json.loads(get(s3, bucket, prefix + MANIFEST_KEY))
    files = {prefix + "status": root["status"]}
    for name, digest in root["shards"].items():
        body = get(s3, bucket, f"{prefix}{SHARD_DIR}{name}.json")
        assert hashlib.sha256(body).hexdigest() == digest
        files.update(json.loads(body))
    return files


def small(snap):
    """Six stakers (three with minipools) and their minipools: every kind of file, a fifth of the
    objects, because moto takes ~10 ms per request."""
    owners = {m.owner.lower() for m in snap.minipools}
    keep = ([s for s in snap.stakers if s.staker_addr.lower() not in owners][:3]
            + [s for s in snap.stakers if s.staker_addr.lower() in owners][:3])
    addrs = {s.staker_addr.lower() for s in keep}
    minipools = tuple(m for m in snap.minipools if m.owner.lower() in addrs)
    return dataclasses.replace(snap, stakers=tuple(keep), staker_count=len(keep),
                               total_ggp_stake=sum(s.ggp_staked for s in keep),
                               minipools=minipools, minipool_count=len(minipools))


def with_changed_staker(snap):
    i = len(snap.stakers) - 1
    stakers = list(snap.stakers)
    stakers[i] = dataclasses.replace(stakers[i], ggp_rewards=stakers[i].ggp_rewards + 10**18)
    return dataclasses.replace(snap, stakers=tuple(stakers)), stakers[i].staker_addr.lower()


def with_newer_block(snap, by=1):
    return dataclasses.replace(snap, block=dataclasses.replace(snap.block, number=snap.block.number + by,
                                                               hash="0x" + f"{by:02x}" * 32))


def without_a_staker(snap):
    owners = {m.owner.lower() for m in snap.minipools}
    i = next(i for i, s in enumerate(snap.stakers) if s.staker_addr.lower() not in owners)
    gone = snap.stakers[i]
    return dataclasses.replace(with_newer_block(snap), stakers=snap.stakers[:i] + snap.stakers[i + 1:],
                               staker_count=snap.staker_count - 1,
                               total_ggp_stake=snap.total_ggp_stake - gone.ggp_staked), gone.staker_addr.lower()


@pytest.fixture(scope="module")
def dirs(demo_snapshot, demo_profile, tmp_path_factory):
    """Built directories: a small base run and variants of it."""
    root = tmp_path_factory.mktemp("builds")
    base = small(demo_snapshot)
    changed, addr = with_changed_staker(base)
    removed, gone = without_a_staker(base)
    snaps = {"base": base, "changed": changed, "newer": with_newer_block(base),
             "removed": removed}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        out = {name: build(snap, demo_profile, root / name).out_dir for name, snap in snaps.items()}
    out["changed_addr"], out["gone_addr"] = addr, gone
    out["base_snapshot"] = base
    return out


def test_first_publish_uploads_everything_with_endpoint_headers(dirs, s3, bucket, endpoint):
    result = run(dirs["base"], bucket, endpoint)
    files = expected(dirs["base"])
    assert published(s3, bucket) == etags(files) and MANIFEST_KEY in contents(s3, bucket)
    assert [k for k in files if k.endswith(".json")] == ["openapi.json"]  # only the endpoint named so
    assert len(result.plan.upload) == len(files) and result.live_block is None

    docs = CACHE_POLICIES["docs"]
    for key, ctype, cache in [
        ("prices", "application/json", DATA),
        ("prices/tj", "application/json", DATA),
        (f"stakers/{dirs['changed_addr']}", "application/json", DATA),
        ("status", "application/json", CACHE_POLICIES["status"]),
        ("docs", "application/json", docs),
        ("openapi.json", "application/json", docs),
        ("calculator.html", "text/html; charset=utf-8", docs),
        # The dashboard and the reference show this build's numbers: data, not docs.
        ("docs.html", "text/html; charset=utf-8", DATA),
        ("index.html", "text/html; charset=utf-8", DATA),
    ]:
        head = s3.head_object(Bucket=bucket, Key=key)
        assert (head["ContentType"], head["CacheControl"]) == (ctype, cache), key
        assert head["Metadata"]["sha256"] == hashlib.sha256(files[key]).hexdigest()

    manifest = json.loads(get(s3, bucket, MANIFEST_KEY))
    status = json.loads(files["status"])
    assert manifest["format"] == MANIFEST_FORMAT and manifest["block"] == status["block"]
    assert manifest["generatedAt"] == status["generatedAt"] == int(EPOCH)
    entries = manifest_files(s3, bucket)
    assert set(entries) == set(files)
    # A staker's two files share a shard, so a change to one staker rewrites one shard.
    addr = dirs["changed_addr"]
    shard = [k for k in contents(s3, bucket) if k.startswith(SHARD_DIR)
             and f"stakers/{addr}" in json.loads(get(s3, bucket, k))]
    assert len(shard) == 1 and f"rewards/{addr}" in json.loads(get(s3, bucket, shard[0]))
    assert entries["prices"] == {"sha256": hashlib.sha256(files["prices"]).hexdigest(),
                                           "size": len(files["prices"]), "contentType": "application/json",
                                           "cacheControl": DATA}


def test_prefix_and_max_age(dirs, s3, bucket, endpoint):
    run(dirs["base"], bucket, endpoint, prefix="/v1/", max_age=300)
    urls = load_dir(dirs["base"])
    files = expected(dirs["base"], "v1/")
    assert published(s3, bucket, "v1/") == etags(files) and "v1/" + MANIFEST_KEY in contents(s3, bucket)
    assert s3.head_object(Bucket=bucket, Key="v1/metrics")["CacheControl"].startswith("public, max-age=300,")
    # A new max-age is new metadata for every data object (docs and status have their own policies).
    again = Recorder()
    run(dirs["base"], bucket, endpoint, again, prefix="v1", max_age=120)
    data = {object_key("v1/", url) for url in urls if match(url).cache == "data"}
    assert "v1/stakers" in data and "v1/docs" not in data
    assert sorted(k for k in again.puts if not is_manifest(k, "v1/")) == sorted(data)
    assert again.puts[-1] == "v1/" + MANIFEST_KEY  # status is unchanged


def test_unchanged_run_uploads_nothing_and_a_changed_staker_only_its_files(dirs, s3, bucket, endpoint):
    run(dirs["base"], bucket, endpoint)
    rerun = Recorder()
    result = run(dirs["base"], bucket, endpoint, rerun)
    assert rerun.ops == [] and result.plan.empty

    base, changed = expected(dirs["base"]), expected(dirs["changed"])
    diff = {k for k in changed if base.get(k) != changed[k]}
    addr = dirs["changed_addr"]
    assert diff == {f"stakers/{addr}", f"rewards/{addr}", "stakers", "status"}
    rec = Recorder()
    result = run(dirs["changed"], bucket, endpoint, rec)
    assert sorted(data_puts(rec)) == sorted(diff)
    assert rec.puts[-2:] == [MANIFEST_KEY, "status"]
    # The manifest moves by shard: the aggregates' and the changed staker's, then its root.
    assert len([k for k in rec.puts if k.startswith(SHARD_DIR)]) == 2
    # Its files are live already (a new version of each): they go with the lists naming them.
    assert not result.plan.new_entities
    assert published(s3, bucket) == etags(changed)


def test_a_new_entity_is_live_before_the_lists_that_name_it(dirs, s3, bucket, endpoint):
    run(dirs["removed"], bucket, endpoint)
    gone = dirs["gone_addr"]
    rec = Recorder()
    result = run(dirs["base"], bucket, endpoint, rec, force=True)  # the removal was built one block later
    assert result.plan.new_entities
    # A client following a link from the fresh /stakers never meets a 404.
    assert max(rec.puts.index(f"stakers/{gone}"), rec.puts.index(f"rewards/{gone}")) < rec.puts.index("stakers")
    assert published(s3, bucket) == etags(expected(dirs["base"]))


def test_lost_or_altered_objects_are_found_by_a_reconcile(dirs, s3, bucket, endpoint):
    run(dirs["base"], bucket, endpoint)
    addr = dirs["changed_addr"]
    s3.delete_object(Bucket=bucket, Key="prices/tj")
    s3.put_object(Bucket=bucket, Key=f"stakers/{addr}", Body=b"{}")
    # An ordinary run trusts the manifest: it reads two objects and changes nothing.
    quiet = run(dirs["base"], bucket, endpoint, Recorder())
    assert quiet.plan.empty and quiet.requests["GET"] == 2 and quiet.requests.keys() <= {"GET", "bytes received"}
    rec = Recorder()
    result = run(dirs["base"], bucket, endpoint, rec, verify=True)
    assert result.plan.reconcile and sorted(data_puts(rec)) == ["prices/tj", f"stakers/{addr}"]
    assert published(s3, bucket) == etags(expected(dirs["base"]))


def test_a_lost_manifest_means_a_reconcile_not_a_full_upload(dirs, s3, bucket, endpoint):
    run(dirs["base"], bucket, endpoint)
    s3.delete_object(Bucket=bucket, Key=MANIFEST_KEY)
    s3.delete_object(Bucket=bucket, Key="prices/tj")
    rec = Recorder()
    result = run(dirs["base"], bucket, endpoint, rec)
    assert result.plan.reconcile and data_puts(rec) == ["prices/tj"] and rec.puts[-1] == MANIFEST_KEY
    assert published(s3, bucket) == etags(expected(dirs["base"]))
    assert run(dirs["base"], bucket, endpoint).plan.empty


def test_a_reconcile_time_ahead_of_the_clock_is_due(dirs, s3, bucket, endpoint):
    """A root whose last reconcile is in the future (a skewed clock, or an edit) would otherwise
    never be reconciled again: an object lost meanwhile would stay lost."""
    import time

    run(dirs["base"], bucket, endpoint)
    root = json.loads(get(s3, bucket, MANIFEST_KEY))
    s3.put_object(Bucket=bucket, Key=MANIFEST_KEY, Body=json.dumps({**root, "reconciledAt": int(time.time()) + 10**9}).encode())
    s3.delete_object(Bucket=bucket, Key="prices/tj")
    result = run(dirs["base"], bucket, endpoint)
    assert result.plan.reconcile and "prices/tj" in [i.key for i in result.plan.upload]
    assert published(s3, bucket) == etags(expected(dirs["base"]))


def test_a_reconcile_runs_when_the_last_is_old(dirs, s3, bucket, endpoint, monkeypatch):
    import time

    import publisher.publish as P

    run(dirs["base"], bucket, endpoint)  # a reconcile (nothing was there)
    s3.delete_object(Bucket=bucket, Key="prices/tj")
    assert not run(dirs["changed"], bucket, endpoint).plan.reconcile  # the last one is recent
    later = time.time() + P.RECONCILE_SECONDS
    monkeypatch.setattr(P.time, "time", lambda: later)
    result = run(dirs["newer"], bucket, endpoint)
    assert result.plan.reconcile and "prices/tj" in [i.key for i in result.plan.upload]
    assert published(s3, bucket) == etags(expected(dirs["newer"]))


def test_a_file_changed_after_the_build_is_refused(dirs, tmp_path, s3, bucket, endpoint):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(dirs["base"], copy, symlinks=False)
    (copy / "prices" / "tj.json").write_bytes(b'{"edited": true}\n')
    with pytest.raises(PublisherError, match=r"/prices/tj changed since it was built"):
        run(copy, bucket, endpoint)
    assert contents(s3, bucket) == {}


def test_removed_entities_are_deleted_after_the_new_data(dirs, s3, bucket, endpoint):
    run(dirs["base"], bucket, endpoint)
    gone = dirs["gone_addr"]
    rec = Recorder()
    result = run(dirs["removed"], bucket, endpoint, rec)
    assert sorted(rec.deletes) == [f"rewards/{gone}", f"stakers/{gone}"] == result.plan.delete
    first_delete = rec.ops.index(("delete", rec.deletes[0]))
    before = [k for _, k in rec.ops[:first_delete]]
    after = [k for op, k in rec.ops[first_delete:] if op == "put"]
    assert {"stakers", "metrics", "docs.html"} <= set(before)
    assert [k for k in after if not k.startswith(SHARD_DIR)] == [MANIFEST_KEY, "status"]
    assert published(s3, bucket) == etags(expected(dirs["removed"]))
    assert f"stakers/{gone}" not in manifest_files(s3, bucket)


def test_a_look_taken_before_the_build_is_the_live_data_the_publish_plans_against(dirs, s3, bucket, endpoint):
    """``publisher watch`` asks for the live /status and manifest before a turn's build: its publish
    reads neither again, counts the look's requests, and plans against the data live at the look."""
    from publisher.publish import LiveLook
    from publisher.publish.s3 import S3Sink

    run(dirs["base"], bucket, endpoint)
    rec = Recorder()
    sink = S3Sink(bucket, endpoint_url=endpoint, session=rec.session)
    elsewhere = LiveLook(sink, "v1/")
    with pytest.raises(ValueError, match="cannot stand for"):
        publish(dirs["changed"], bucket, endpoint_url=endpoint, sink=sink, look=elsewhere)
    assert rec.ops == [] and elsewhere.result() == (None, None)  # refused before anything was sent
    rec.gets.clear()
    look = LiveLook(sink)
    assert look.status() == get(s3, bucket, "status")
    result = publish(dirs["changed"], bucket, endpoint_url=endpoint, sink=sink, look=look)
    assert rec.gets.count("status") == rec.gets.count(MANIFEST_KEY) == 1
    assert result.requests["GET"] == len(rec.gets)  # the look's two and the changed shards
    addr = dirs["changed_addr"]
    assert sorted(data_puts(rec)) == sorted({f"stakers/{addr}", f"rewards/{addr}", "stakers", "status"})
    assert published(s3, bucket) == etags(expected(dirs["changed"]))


def test_failure_midway_keeps_the_previous_status_and_a_rerun_completes(dirs, s3, bucket, endpoint):
    run(dirs["base"], bucket, endpoint)
    status, manifest = get(s3, bucket, "status"), get(s3, bucket, MANIFEST_KEY)
    gone = dirs["gone_addr"]
    broken = Recorder(fail_put=3)
    with pytest.raises(PublisherError) as err:
        run(dirs["removed"], bucket, endpoint, broken, workers=1)
    assert str(err.value) == f"s3://{bucket}/{broken.puts[2]}: upload failed: InternalError: injected failure"
    assert get(s3, bucket, "status") == status and get(s3, bucket, MANIFEST_KEY) == manifest
    assert f"stakers/{gone}" in contents(s3, bucket) and broken.deletes == []

    rec = Recorder()
    run(dirs["removed"], bucket, endpoint, rec)
    assert rec.deletes == [f"rewards/{gone}", f"stakers/{gone}"] and rec.puts[-2:] == [MANIFEST_KEY, "status"]
    assert published(s3, bucket) == etags(expected(dirs["removed"]))
    assert run(dirs["removed"], bucket, endpoint).plan.empty


def test_invalid_directory_is_refused_through_the_cli(dirs, s3, bucket, endpoint, tmp_path):
    files = load_dir(dirs["base"])
    prices = json.loads(files["/prices"])
    prices["ggpInUSD"] = "a lot"
    files["/prices"] = json.dumps(prices).encode()
    bad = copy_of(files, tmp_path / "bad")
    proc = cli("--dir", bad, "--bucket", bucket, "--endpoint-url", endpoint, check=False)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: refusing to publish") and "/prices: schema" in lines[0]
    assert contents(s3, bucket) == {}


def test_an_older_block_than_the_live_one_needs_force(dirs, s3, bucket, endpoint):
    run(dirs["newer"], bucket, endpoint)
    newer_status = get(s3, bucket, "status")
    rec = Recorder()
    with pytest.raises(PublisherError, match=r"block \d+ is older than the last run's \d+; --force overrides"):
        run(dirs["base"], bucket, endpoint, rec)
    assert rec.ops == [] and get(s3, bucket, "status") == newer_status
    result = run(dirs["base"], bucket, endpoint, force=True)
    assert result.live_block == result.block + 1
    assert get(s3, bucket, "status") == expected(dirs["base"])["status"]


def test_change_bounds_and_network_switches_need_force(dirs, demo_profile, s3, bucket, endpoint, tmp_path):
    run(dirs["base"], bucket, endpoint)
    snap = with_newer_block(dirs["base_snapshot"])
    jump = build(dataclasses.replace(snap, oracle=dataclasses.replace(snap.oracle, price=snap.oracle.price * 3)),
                 demo_profile, tmp_path / "jump").out_dir
    other = build(dataclasses.replace(snap, network="fuji", chain_id=43113), demo_profile, tmp_path / "fuji").out_dir
    with pytest.raises(PublisherError, match=r"ggpInAvax moved 200\.0% since the last run"):
        run(jump, bucket, endpoint)
    with pytest.raises(PublisherError, match=r"the live data is devnet \(chain 43112\), this build is fuji \(chain 43113\)"):
        run(other, bucket, endpoint)
    assert get(s3, bucket, "status") == expected(dirs["base"])["status"]
    run(jump, bucket, endpoint, force=True)
    assert get(s3, bucket, "status") == expected(jump)["status"]


def test_the_bounds_read_a_changed_live_object_from_the_tree_built_before(dirs, demo_profile, s3, bucket, endpoint, tmp_path):
    """out/ flips between two trees, and the one it left is what a watch published last: the change
    bounds read a live object that changed from there when its digest is the manifest's, instead
    of fetching it. One edited there since is fetched; the bounds hold either way."""
    out, base = tmp_path / "out", dirs["base_snapshot"]
    build(base, demo_profile, out)
    run(out, bucket, endpoint)
    snap = with_newer_block(base)
    build(dataclasses.replace(snap, oracle=dataclasses.replace(snap.oracle, price=snap.oracle.price * 3)), demo_profile, out,
          force=True)  # the build's own bounds against the tree before: the publish's are tested
    rec = Recorder()
    with pytest.raises(PublisherError, match=r"ggpInAvax moved 200\.0% since the last run"):
        run(out, bucket, endpoint, rec)
    assert "prices" not in rec.gets and set(rec.gets[:2]) == {"status", MANIFEST_KEY}  # read side by side
    before = trees(out)[1] / file_for("/prices")
    kept = before.read_bytes()
    before.unlink()  # replaced, not edited in place: an unchanged file is a link both trees share
    before.write_bytes(kept.replace(b'"ggpInAvax"', b'"ggpInAvax" '))
    rec = Recorder()
    with pytest.raises(PublisherError, match=r"ggpInAvax moved 200\.0% since the last run"):
        run(out, bucket, endpoint, rec)
    assert "prices" in rec.gets
    assert get(s3, bucket, "status") == expected(dirs["base"])["status"]


def test_dry_run_prints_the_plan_and_changes_nothing(dirs, s3, bucket, endpoint):
    run(dirs["base"], bucket, endpoint)

    def listing():
        return {o["Key"]: (o["ETag"], o["LastModified"]) for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}

    before = listing()
    gone = dirs["gone_addr"]
    out = cli("--dir", dirs["removed"], "--bucket", bucket, "--endpoint-url", endpoint, "--dry-run").stdout
    assert "dry run   nothing changed" in out
    assert ", 2 to delete, manifest" in out and f"delete    stakers/{gone}" in out and "upload    status" in out
    assert listing() == before


def distribution(bucket: str, endpoint: str) -> tuple[str, Callable[[], list[dict]]]:
    """A CloudFront distribution in front of the bucket (no origin path), and its invalidations."""
    cf = boto3.client("cloudfront", endpoint_url=endpoint)
    dist = cf.create_distribution(DistributionConfig={
        "CallerReference": bucket, "Comment": "", "Enabled": True,
        "Origins": {"Quantity": 1, "Items": [{"Id": "s3", "DomainName": f"{bucket}.s3.amazonaws.com",
                                               "S3OriginConfig": {"OriginAccessIdentity": ""}}]},
        "DefaultCacheBehavior": {"TargetOriginId": "s3", "ViewerProtocolPolicy": "redirect-to-https", "MinTTL": 0,
                                 "ForwardedValues": {"QueryString": False, "Cookies": {"Forward": "none"}}},
    })["Distribution"]["Id"]

    def invalidations():
        items = cf.list_invalidations(DistributionId=dist)["InvalidationList"].get("Items", [])
        return [cf.get_invalidation(DistributionId=dist, Id=i["Id"])["Invalidation"]["InvalidationBatch"] for i in items]

    return dist, invalidations


def test_docs_changes_make_one_invalidation_data_changes_none(dirs, bucket, endpoint, tmp_path):
    dist, invalidations = distribution(bucket, endpoint)

    run(dirs["base"], bucket, endpoint, distribution_id=dist)
    first = invalidations()
    docs = {url for url in load_dir(dirs["base"]) if match(url).cache == "docs"}
    assert docs == {"/docs", "/openapi.json", "/calculator.html", "/errors/404"}
    assert len(first) == 1 and sorted(first[0]["Paths"]["Items"]) == sorted(docs)

    run(dirs["changed"], bucket, endpoint, distribution_id=dist)  # data only
    assert len(invalidations()) == 1

    files = load_dir(dirs["changed"])
    files["/calculator.html"] += b"<!-- reworded -->\n"
    for page in ("/", "/docs.html"):  # the pages showing data change every run and expire like data
        files[page] += b"<!-- next block -->\n"
    edited = copy_of(files, tmp_path / "edited")
    result = run(edited, bucket, endpoint, distribution_id=dist)
    batches = invalidations()
    assert len(batches) == 2
    new = next(b for b in batches if b not in first)
    assert new["Paths"]["Items"] == ["/calculator.html"] and new["CallerReference"] == result.plan.manifest_sha256
    assert f"invalidated /calculator.html ({result.invalidation})" in result.describe()

    # Under a prefix (the distribution has no origin path) the paths are the objects' keys.
    run(dirs["base"], bucket, endpoint, distribution_id=dist, prefix="v2/")
    [prefixed] = [b for b in invalidations() if b not in batches]
    assert sorted(prefixed["Paths"]["Items"]) == sorted("/v2" + url for url in docs)


def test_without_a_manifest_every_docs_object_is_invalidated(dirs, s3, bucket, endpoint):
    """A run that uploaded docs and stopped before its invalidation leaves the CDN serving the old
    ones; once the manifest is lost too, the listing shows those docs unchanged. Nothing vouches
    for what the CDN was told, so the next run invalidates every docs object."""
    dist, invalidations = distribution(bucket, endpoint)
    run(dirs["base"], bucket, endpoint)  # its docs never invalidated (no distribution named)
    s3.delete_object(Bucket=bucket, Key=MANIFEST_KEY)
    result = run(dirs["base"], bucket, endpoint, distribution_id=dist)
    docs = {url for url in load_dir(dirs["base"]) if match(url).cache == "docs"}
    assert not result.plan.wave("docs") and [sorted(b["Paths"]["Items"]) for b in invalidations()] == [sorted(docs)]
    assert run(dirs["base"], bucket, endpoint, distribution_id=dist).plan.empty and len(invalidations()) == 1


def test_credentials_never_appear_in_output(dirs, bucket, endpoint, monkeypatch):
    ok = cli("--dir", dirs["base"], "--bucket", bucket, "--endpoint-url", endpoint)
    assert f"published {len(load_dir(dirs['base']))} objects" in ok.stdout
    with pytest.raises(PublisherError) as missing:
        run(dirs["base"], "no-such-bucket-here", endpoint)
    assert str(missing.value) == ("s3://no-such-bucket-here/status: read failed: "
                                  "NoSuchBucket: The specified bucket does not exist")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # no backoff against a closed port
    unreachable = cli("--dir", dirs["base"], "--bucket", bucket, "--endpoint-url", "http://127.0.0.1:9/token/abc",
                      check=False)
    assert unreachable.returncode == 1
    assert unreachable.stderr.strip() == f"error: s3://{bucket}/status: read failed: cannot connect to http://127.0.0.1:9/***"
