"""The production path: a wheel of the project, installed from the hash-locked runtime set into a
fresh virtualenv outside the checkout, runs every command the scheduled publish and an operator
need, from another working directory."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import requests

from publisher.devnet.anvil import find_anvil, free_port

ROOT = Path(__file__).resolve().parents[1]


def _run(args, cwd, env, timeout=300):
    run = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, f"{args} failed:\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin dir, environment, working directory) of a fresh install of the wheel."""
    tmp = tmp_path_factory.mktemp("installed")
    dist = tmp / "dist"
    # The wheel, built from the checkout with the locked build backend the test set installed.
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", str(dist), str(ROOT)],
         cwd=tmp, env=dict(os.environ))
    wheel = next(dist.glob("ggp_publisher-*.whl"))
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp, env=dict(os.environ))
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "--require-hashes", "-r", str(ROOT / "requirements" / "runtime.txt")], cwd=tmp, env=dict(os.environ), timeout=540)
    _run([*pip, "--no-deps", str(wheel)], cwd=tmp, env=dict(os.environ))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PUBLISHER_", "VIRTUAL_ENV"))}
    env["PUBLISHER_ANVIL"] = find_anvil()  # the pinned node from the checkout's node_modules
    work = tmp / "elsewhere"
    work.mkdir()
    return venv / "bin", env, work, wheel


def test_wheel_carries_templates_profiles_and_artifacts(installed):
    names = zipfile.ZipFile(installed[3]).namelist()
    for needed in ("publisher/templates/index.html.j2", "publisher/templates/docs.html.j2",
                   "publisher/profiles/mainnet.json", "publisher/devnet/artifacts.json"):
        assert needed in names
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)


def test_installed_runtime_has_no_test_tools(installed):
    bin_dir, env, work, _ = installed
    probe = "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) for m in ('web3', 'pytest', 'moto')))"
    _run([str(bin_dir / "python"), "-c", probe], cwd=work, env=env)
    where = _run([str(bin_dir / "python"), "-c", "import publisher; print(publisher.__file__)"], cwd=work, env=env)
    assert str(bin_dir.parent) in where.stdout and str(ROOT) not in where.stdout


def test_installed_publisher_builds_checks_serves_and_packages(installed):
    bin_dir, env, work, _ = installed
    publisher = str(bin_dir / "publisher")
    built = _run([publisher, "build", "--out", "site"], cwd=work, env=env)
    assert "built" in built.stdout
    out = work / "site"
    assert (out / "index.html").is_file() and (out / "docs.html").is_file()
    assert json.loads((out / "status.json").read_text())["network"] == "devnet"

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
