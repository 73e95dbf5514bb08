"""The packages' modules (the publisher's and the devnet's) import one another in one direction,
type-checking imports included: the only circle is the endpoint registry's (``registry.load_all``
imports the endpoint modules, which register with it)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGES = (ROOT / "publisher", ROOT / "devnet" / "ggp_devnet")
REGISTRY_CIRCLE = "publisher.endpoints."


def modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for f in package.rglob("*.py"):
            parts = list(f.relative_to(package.parent).with_suffix("").parts)
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def imports(name: str, f: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules ``name`` imports: at module level, in a function, or for type checking
    only (``if TYPE_CHECKING:``): a module that names another's types depends on it as much."""
    tree = ast.parse(f.read_text())
    package = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            mod = ".".join([*base, *([node.module] if node.module else [])])
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in known]
            targets = subs if len(subs) == len(node.names) else [mod, *subs]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rsplit(".", 1)[0] if "." in t else ""
            if t and t != name:
                out.add(t)
    return out


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = _pop_through(stack, v)
            if len(component) > 1:
                found.append(component)

    for v in edges:
        if v not in index:
            visit(v)
    return found


def _pop_through(stack: list[str], v: str) -> set[str]:
    """The modules on the stack down to ``v``, taken off it."""
    component = set()
    while True:
        w = stack.pop()
        component.add(w)
        if w == v:
            return component


def test_no_import_circle_outside_the_endpoint_registry():
    known = modules()
    edges = {name: imports(name, f, known) for name, f in known.items()}
    assert "publisher.build.pipeline" in edges["publisher.build.incremental"]  # the walk sees imports
    assert "publisher.snapshot" in edges["publisher.compute.params"]  # and those for type checking only
    others = [sorted(c) for c in circles(edges) if not all(m.startswith(REGISTRY_CIRCLE) for m in c)]
    assert others == []


# What a command loads: the devnet only where a command starts one, the chain reader only where a
# command reads a chain, and eth_abi and eth_utils (a third of a second to import) never: the
# reader's own codec covers every type the protocol's views return.
_PROBE = """
import sys
from publisher.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(sorted(m for m in ("eth_abi", "eth_utils", "ggp_devnet", "publisher.chain.reader") if m in sys.modules))
sys.exit(code)
"""


def _loaded(args, cwd) -> str:
    """The last line _PROBE prints: which of those modules the command ``args`` loaded."""
    import subprocess
    import sys

    got = subprocess.run([sys.executable, "-c", _PROBE, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                         timeout=120, env={"PATH": "/usr/bin:/bin", "SOURCE_DATE_EPOCH": "1800000000",
                                           "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_MAX_ATTEMPTS": "1"})
    lines = got.stdout.strip().splitlines()
    assert lines, (args, got.stderr[-500:])
    return lines[-1]


def test_commands_that_read_no_chain_load_none_of_its_libraries(built, demo_snapshot, tmp_path):
    snap = tmp_path / "snap.json"
    demo_snapshot.save(snap)
    for args in (["check", built], ["build", "--from-snapshot", snap, "--out", tmp_path / "out"],
                 ["publish", "--dir", built, "--bucket", "b", "--dry-run", "--endpoint-url", "http://127.0.0.1:9"]):
        assert _loaded(args, tmp_path) == "[]", args


def test_a_build_from_a_node_loads_the_reader_and_no_abi_library(demo, tmp_path):
    assert _loaded(["build", "--rpc-url", demo.url, "--out", tmp_path / "out"], tmp_path) == "['publisher.chain.reader']"
