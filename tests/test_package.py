"""The production path: a wheel of the project, installed from the hash-locked runtime set into a
fresh virtualenv outside the checkout, runs every command the scheduled publish and an operator
need, from another working directory. The devnet is a distribution of its own (devnet/): the wheel
carries none of it, and the installed publisher reads a real node or a saved snapshot."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import requests
from ggp_devnet.anvil import free_port

ROOT = Path(__file__).resolve().parents[1]

# One worker for the module: the installed wheel (a module fixture of some twenty seconds) is then
# built once, not once per worker that draws one of its tests (`make test` runs --dist loadgroup).
pytestmark = pytest.mark.xdist_group("installed wheel")


def _locked(name: str) -> set[str]:
    text = (ROOT / "requirements" / name).read_text()
    return {line.split("==")[0].lower() for line in text.splitlines() if "==" in line and not line.startswith((" ", "#"))}


def test_the_devnet_dependencies_are_locked_apart_from_the_runtime_set():
    """rlp (the devnet's transaction encoding) is the devnet's alone: locked with it and the tests,
    not in the runtime set the wheel and the image install; every other lock holds the runtime set."""
    import tomllib

    runtime, devnet, test = _locked("runtime.txt"), _locked("devnet.txt"), _locked("test.txt")
    assert "rlp" not in runtime and "rlp" in devnet and "rlp" in test
    assert runtime <= devnet <= test
    project = tomllib.loads((ROOT / "devnet" / "pyproject.toml").read_text())["project"]
    wanted = {d.split(">")[0].split("[")[0].strip().lower() for d in project["dependencies"]} - {"ggp-publisher"}
    assert wanted <= devnet, wanted - devnet
    runtime_wants = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not any(d.startswith("rlp") for d in runtime_wants)


def _files(directory: Path) -> dict[str, bytes]:
    """A built tree's files, without its build record (which holds inodes and times)."""
    root = directory.resolve()
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != ".build.json"}


def _run(args, cwd, env, timeout=300):
    run = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, f"{args} failed:\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin dir, environment, working directory) of a fresh install of the wheel."""
    tmp = tmp_path_factory.mktemp("installed")
    dist = tmp / "dist"
    venv = tmp / "venv"
    # A venv without a pip of its own (bootstrapping one takes seconds): the checkout's pip
    # installs into it (--python), byte-compiling nothing ahead (the interpreter does on import).
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp, env=dict(os.environ))
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
           "--disable-pip-version-check", "--no-compile"]
    # The runtime set installs (mostly waiting on the package index) while the wheel builds.
    runtime_args = [*pip, "--require-hashes", "-r", str(ROOT / "requirements" / "runtime.txt")]
    runtime = subprocess.Popen(runtime_args, cwd=tmp, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The wheel, built with the locked build backend from a copy of what the image's build sees
        # (.dockerignore): nothing is written into the checkout, where parallel workers would collide.
        src = tmp / "src"
        for name in ("pyproject.toml", "README.md"):
            src.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
        shutil.copytree(ROOT / "publisher", src / "publisher", ignore=shutil.ignore_patterns("__pycache__"))
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", str(dist), str(src)],
             cwd=tmp, env=dict(os.environ))
        out, err = runtime.communicate(timeout=540)
    finally:
        if runtime.poll() is None:
            runtime.kill()
            runtime.wait()
    assert runtime.returncode == 0, f"{runtime_args} failed:\n{out}\n{err}"
    wheel = next(dist.glob("ggp_publisher-*.whl"))
    _run([*pip, "--no-deps", str(wheel)], cwd=tmp, env=dict(os.environ))
    # Nothing of the checkout reaches it: not its PYTHONPATH (where the devnet may be), nor its settings.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PUBLISHER_", "VIRTUAL_ENV"))}
    work = tmp / "elsewhere"
    work.mkdir()
    return venv / "bin", env, work, wheel


@pytest.mark.slow
def test_wheel_carries_templates_and_profiles_and_no_devnet(installed):
    wheel = zipfile.ZipFile(installed[3])
    names = wheel.namelist()
    for needed in ("publisher/templates/index.html.j2", "publisher/templates/docs.html.j2",
                   "publisher/profiles/mainnet.json", "publisher/chain/custom_errors.json"):
        assert needed in names
    assert not any(n.startswith(("tests/", "benchmarks/", "devnet/", "ggp_devnet/", "publisher/devnet/")) for n in names)
    assert not any(n.endswith((".sol", ".mjs")) or n.endswith("artifacts.json") for n in names), names
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires and not any(r.startswith(("rlp", "ggp-devnet")) for r in requires), requires


def test_installed_runtime_has_no_test_tools_and_no_devnet(installed):
    bin_dir, env, work, _ = installed
    probe = ("import importlib.util as u, sys; "
             "sys.exit(any(u.find_spec(m) for m in ('web3', 'pytest', 'moto', 'ggp_devnet', 'rlp')))")
    _run([str(bin_dir / "python"), "-c", probe], cwd=work, env=env)
    where = _run([str(bin_dir / "python"), "-c", "import publisher; print(publisher.__file__)"], cwd=work, env=env)
    assert str(bin_dir.parent) in where.stdout and str(ROOT) not in where.stdout
    site = Path(where.stdout.strip()).parents[1]
    # (profiles/devnet.json stays: the network profile a build against a devnet's node reads.)
    stray = [p for p in site.rglob("*") if p.name in ("ggp_devnet", "devnet", "artifacts.json") or p.suffix == ".sol"]
    assert not stray and not (site / "publisher" / "devnet").exists(), stray


def test_installed_publisher_without_the_devnet_says_how_to_install_it(installed):
    bin_dir, env, work, _ = installed
    for args in (["build", "--scenario", "demo", "--out", "never"], ["devnet"]):
        got = subprocess.run([str(bin_dir / "publisher"), *args], cwd=work, env=env, capture_output=True, text=True, timeout=60)
        lines = got.stderr.strip().splitlines()
        assert got.returncode == 1 and len(lines) == 1 and "pip install -e ./devnet" in lines[0], (args, got.stderr)
    assert not (work / "never").exists()


def test_installed_publisher_builds_checks_serves_and_packages(installed, demo, demo_snapshot):
    """Against a real node (the devnet the tests run, its stand-ins for the third-party APIs) and
    offline from a snapshot saved of the same block: the same files."""
    bin_dir, env, work, _ = installed
    publisher = str(bin_dir / "publisher")
    env = {**env, "PUBLISHER_VALIDATOR_API_URL": demo.services["validator_api"],
           "PUBLISHER_PCHAIN_RPC_URL": demo.services["pchain_rpc"], "PUBLISHER_PRICE_API_URL": demo.services["price_api"],
           "SOURCE_DATE_EPOCH": "1800000000"}  # two builds of one block: the same bytes
    built = _run([publisher, "build", "--rpc-url", demo.url, "--out", "site"], cwd=work, env=env)
    assert "built" in built.stdout
    out = work / "site"
    assert (out / "index.html").is_file() and (out / "docs.html").is_file()
    assert json.loads((out / "status.json").read_text())["network"] == "devnet"

    demo_snapshot.save(work / "snapshot.json")
    offline = _run([publisher, "build", "--from-snapshot", "snapshot.json", "--out", "offline"], cwd=work, env=env)
    assert "built" in offline.stdout
    assert _files(work / "offline") == _files(out)

    checked = _run([publisher, "check", "site"], cwd=work, env=env)
    assert checked.stdout.startswith("ok")

    port = free_port()
    server = subprocess.Popen([publisher, "serve", "--dir", "site", "--port", str(port)], cwd=work, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
                break
            except requests.ConnectionError:
                assert server.poll() is None and time.monotonic() < deadline, server.communicate()[1]
                time.sleep(0.2)
        assert r.status_code == 200 and r.content == (out / "metrics.json").read_bytes()
    finally:
        server.terminate()
        server.wait(timeout=10)

    packaged = _run([publisher, "function", "package", "--out", "fn.zip"], cwd=work, env=env)
    assert "packaged" in packaged.stdout
    assert {"handler.py", "rewards.py"} <= set(zipfile.ZipFile(work / "fn.zip").namelist())


def test_installed_publisher_watches_and_publishes(installed, moto, demo):
    """What the watch task's image runs (Dockerfile, templates/aws-watch.yaml): the installed
    package following a devnet and publishing to S3, resuming the live price history."""
    import boto3

    bin_dir, env, work, _ = installed
    env = {**env, "AWS_ACCESS_KEY_ID": "AKIATESTPUBLISHER", "AWS_SECRET_ACCESS_KEY": "test-secret",
           "AWS_DEFAULT_REGION": "us-east-1", "PUBLISHER_VALIDATOR_API_URL": demo.services["validator_api"],
           "PUBLISHER_PCHAIN_RPC_URL": demo.services["pchain_rpc"], "PUBLISHER_PRICE_API_URL": demo.services["price_api"]}
    s3 = boto3.client("s3", endpoint_url=moto, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    s3.create_bucket(Bucket="api-installed")
    watch = [str(bin_dir / "publisher"), "watch", "--rpc-url", demo.url, "--bucket", "api-installed",
             "--endpoint-url", moto, "--runs", "1"]
    first = _run([*watch, "--out", "one"], cwd=work, env=env)
    assert "(start; head was" in first.stdout and "resumed" not in first.stdout
    live = json.loads(s3.get_object(Bucket="api-installed", Key="status")["Body"].read())
    assert live["block"]["number"] == json.loads((work / "one" / "status.json").read_text())["block"]["number"]
    second = _run([*watch, "--out", "two"], cwd=work, env=env)  # a new task: nothing on its disk
    assert "resumed" in second.stdout
    assert (work / "two" / "prices" / "history.json").read_bytes() == (work / "one" / "prices" / "history.json").read_bytes()
