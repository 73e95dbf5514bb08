"""What `make demo` and the commands of docs/devnet.md rely on: the demo target passes its scenario
through and rebuilds out/ whatever an earlier command left there, and a build that would drop the
price history another run left in its directory names the ways out (another --out, or --force)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ggp_devnet.scenarios import names

from publisher.build.validate import compare_accumulated

ROOT = Path(__file__).resolve().parent.parent


def _make_demo(*args: str) -> list[list[str]]:
    """The commands `make demo` would run (`make -n`: printed, none run), each split into words."""
    got = subprocess.run(["make", "-n", "--no-print-directory", "demo", *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    return [shlex.split(line) for line in got.stdout.splitlines() if line.strip()]


def _publisher(commands: list[list[str]], name: str) -> list[str]:
    found = [c for c in commands if c[0].endswith("/publisher") and c[1] == name]
    assert len(found) == 1, commands
    return found[0]


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("scenario", [None, "wound-down", "scale-1k"])
def test_make_demo_builds_the_scenario_it_is_given_and_serves_it(scenario):
    commands = _make_demo(*([f"SCENARIO={scenario}"] if scenario else []))
    build, serve = _publisher(commands, "build"), _publisher(commands, "serve")
    assert _option(build, "--scenario") == (scenario or "demo") in names()
    # Whatever an earlier command of the guide left in out/ (another scenario, a watch's later
    # block), the demo replaces it: the change bounds against that run are lifted, nothing else.
    assert "--force" in build and "--rpc-url" not in build
    assert _option(build, "--out") == _option(serve, "--dir") == "out"
    assert commands.index(build) < commands.index(serve)


def test_readme_names_the_scenario_variable_next_to_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Two commands on a fresh machine\n", 1)[1].split("\n## ", 1)[0]
    assert "`make demo SCENARIO=wound-down`" in section
    assert "SCENARIO ?= demo" in (ROOT / "Makefile").read_text(encoding="utf-8")


def _tree(directory: Path) -> dict[str, str]:
    root = directory.resolve()
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}


def _cli(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBLISHER_")}
    env["SOURCE_DATE_EPOCH"] = "1800000000"
    return subprocess.run([sys.executable, "-m", "publisher.cli", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_build_that_would_drop_the_history_there_names_another_out_and_force(demo_snapshot, tmp_path):
    """The guide's case: `make demo` built out/, then a build of another chain into the same out/
    (here the demo's snapshot with one day of history, as a younger chain has) is refused, leaves
    out/ as it was, and its one line says how to keep that history or replace it."""
    full, short, out = tmp_path / "full.json", tmp_path / "short.json", tmp_path / "out"
    demo_snapshot.save(full)
    dataclasses.replace(demo_snapshot, price_history=demo_snapshot.price_history[-1:]).save(short)
    assert _cli("build", "--from-snapshot", full, "--out", out).returncode == 0
    n = len(json.loads((out / "prices" / "history.json").read_text())["points"])
    before = _tree(out)

    got = _cli("build", "--from-snapshot", short, "--out", out)
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 1 and len(lines) == 1, got.stderr[-2000:]
    assert lines[0].startswith(f"error: refusing to write {out}: /prices/history would shrink from {n} to 1 entries")
    assert "--out DIR" in lines[0] and "--force" in lines[0]
    assert _tree(out) == before

    # Each way out it names works: another directory, or --force over this one.
    assert _cli("build", "--from-snapshot", short, "--out", tmp_path / "out-other").returncode == 0
    assert _cli("build", "--from-snapshot", short, "--out", out, "--force").returncode == 0
    assert len(json.loads((out / "prices" / "history.json").read_text())["points"]) == 1


def _history(*points: dict) -> dict[str, bytes]:
    return {"/prices/history": json.dumps({"points": list(points)}).encode()}


@pytest.mark.parametrize(("new", "says"), [
    (_history({"date": "2026-01-02", "p": 2}), "would shrink from 2 to 1 entries"),
    (_history({"date": "2026-06-01", "p": 1}, {"date": "2026-06-02", "p": 2}), "would drop 2 entries"),
    (_history({"date": "2026-01-01", "p": 9}, {"date": "2026-01-02", "p": 2}), "would rewrite 1 entries"),
])
def test_every_history_refusal_names_the_ways_out(new, says):
    old = _history({"date": "2026-01-01", "p": 1}, {"date": "2026-01-02", "p": 2})
    [problem] = compare_accumulated(old, new)
    assert problem.startswith(f"/prices/history {says}")
    assert "--out DIR" in problem and "--force" in problem


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_installs_the_devnet_beside_the_runtime_set():
    """The devnet is a distribution of its own (devnet/): `make demo` (through `make setup`) installs
    it after the runtime set, its dependencies from their own lock, before the build starts it."""
    got = subprocess.run(["make", "-n", "-B", "--no-print-directory", "demo"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)  # -B: every step, whatever this checkout has installed already
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()

    def first(*words: str) -> int:
        return next(i for i, line in enumerate(lines) if all(w in line.split() for w in words))

    runtime, editable = first("requirements/runtime.txt"), first("-e", ".")
    devnet_lock, devnet = first("requirements/devnet.txt"), first("--no-deps", "-e", "./devnet")
    build = first("build", "--scenario")
    assert runtime < editable < devnet_lock < devnet < build, lines
    assert "--require-hashes" in lines[devnet_lock].split()
