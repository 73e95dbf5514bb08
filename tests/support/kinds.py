"""Which kind of test an item is, from what it uses, so test files need no markers of their own.

``devnet``: it (or a fixture in its closure, or a test helper either calls) starts anvil:
``ggp_devnet.running``/``running_live``, an ``Anvil``, ``find_anvil``, ``publisher devnet``
through ``DevnetCli``, the CLI with ``--scenario``, or Python source importing the devnet run in a
subprocess. ``browser``: it drives Chromium.
``node``: it runs Node.js tools (``node``, ``npm``, ``npx``). ``unit``: none of these.

The code is read, not run: names a function loads are resolved in its module and followed into
functions defined under tests/, so a helper that starts a devnet marks every test calling it. What
reading misses (a name built at run time) the guard catches: ``guard`` fails a ``unit`` test that
starts one of those programs, so a wrong classification shows up as a failure, never as a unit
run that quietly needs a chain.
"""
from __future__ import annotations

import inspect
import os
import shlex
import sys
import types
from pathlib import Path

TESTS = str(Path(__file__).resolve().parents[1])
KINDS = ("devnet", "browser", "node")
DEVNET_NAMES = {"running", "running_live", "Anvil", "find_anvil", "DevnetCli"}
BROWSER_NAMES = {"Chromium"}
DEVNET_STRINGS = {"--scenario"}
NODE_STRINGS = {"node", "npm", "npx"}
RUNNERS = {"run", "Popen", "which", "check_output", "check_call", "call"}
PROGRAMS = {"anvil": "devnet", "node": "node", "nodejs": "node", "npm": "node", "npx": "node",
            "chromium": "browser", "chromium-browser": "browser", "google-chrome": "browser"}


def _ours(obj) -> bool:
    code = getattr(obj, "__code__", None)
    return code is not None and code.co_filename.startswith(TESTS)


def _in_tests(obj) -> bool:
    """Defined in a file under tests/ (its modules import as ``support.…`` or ``tests.support.…``)."""
    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    return (getattr(module, "__file__", None) or "").startswith(TESTS)


def _known(obj) -> str | None:
    name = getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", "") or ""
    if name in DEVNET_NAMES and (module.startswith("ggp_devnet") or _in_tests(obj)):
        return "devnet"
    if name in BROWSER_NAMES and _in_tests(obj):
        return "browser"
    return None


def _named_kinds(code: types.CodeType) -> set[str]:
    """Kinds the code's names and strings give away where no global leads to them."""
    found = set()
    names = set(code.co_names)
    # A function-level import (`from ggp_devnet import running_live`) leaves no global.
    if names & DEVNET_NAMES and any(n.startswith(("ggp_devnet", "support.", "tests.support")) for n in names):
        found.add("devnet")
    if names & BROWSER_NAMES and any(n.endswith("support.browser") for n in names):
        found.add("browser")
    # `python -m publisher.cli devnet …` in a subprocess.
    strings = {c for c in code.co_consts if isinstance(c, str)}
    if "devnet" in strings and strings & {"publisher", "publisher.cli"}:
        found.add("devnet")
    # Python source run in a subprocess (`python -c …`) that imports the devnet.
    if any("import" in c and "ggp_devnet" in c for c in strings):
        found.add("devnet")
    return found


class Reader:
    """Kinds found in functions' code, memoized per code object."""

    def __init__(self) -> None:
        self.memo: dict[types.CodeType, frozenset[str]] = {}

    def of_function(self, fn) -> frozenset[str]:
        fn = inspect.unwrap(fn)
        code = getattr(fn, "__code__", None)
        if code is None or not code.co_filename.startswith(TESTS):
            return frozenset()
        return self._code(code, getattr(fn, "__globals__", {}))

    def _code(self, code: types.CodeType, scope: dict) -> frozenset[str]:
        if code in self.memo:
            return self.memo[code]
        self.memo[code] = frozenset()  # recursion guard
        found = self._constants(code, scope)
        for name in set(code.co_names):
            found |= self._object(scope.get(name), code, scope)
        found |= _named_kinds(code)
        self.memo[code] = frozenset(found)
        return self.memo[code]

    def _constants(self, code: types.CodeType, scope: dict) -> set[str]:
        """Kinds from the code's constants: the functions nested in it, and strings naming a
        devnet option or a Node.js program."""
        found: set[str] = set()
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                found |= self._code(const, scope)
            elif isinstance(const, str):
                if const in DEVNET_STRINGS:
                    found.add("devnet")
                elif const in NODE_STRINGS and RUNNERS & set(code.co_names):  # "node" as a program, not a key
                    found.add("node")
        return found

    def _object(self, obj, code: types.CodeType, scope: dict) -> frozenset[str]:
        if obj is None:
            return frozenset()
        if callable(obj) and not inspect.isclass(obj):
            try:
                obj = inspect.unwrap(obj)  # a @contextmanager helper: the generator function it wraps
            except ValueError:
                return frozenset()
        kind = _known(obj)
        if kind:
            return frozenset({kind})
        if isinstance(obj, types.ModuleType):  # `support.helper(...)`: the attributes the code names
            if not (getattr(obj, "__file__", None) or "").startswith(TESTS):
                return frozenset()
            return frozenset().union(*(self._object(getattr(obj, n, None), code, scope) for n in code.co_names
                                       if n in vars(obj)))
        if inspect.isclass(obj) and _in_tests(obj):
            return frozenset().union(*(self.of_function(f) for f in vars(obj).values() if inspect.isfunction(f)))
        if _ours(obj):
            return self._code(obj.__code__, obj.__globals__)
        return frozenset()


def kinds(item, reader: Reader) -> set[str]:
    """The kinds of one collected test: its explicit marks and what its code and fixtures use."""
    found = {k for k in KINDS if item.get_closest_marker(k)}
    found |= reader.of_function(getattr(item, "obj", None))
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in (info.name2fixturedefs.get(name, ()) if info else ()):
            found |= reader.of_function(fixturedef.func)
    return found & set(KINDS)


# ---- the guard ----------------------------------------------------------------------------------

current: str | None = None  # node id of the unit test running now


def _program(argv) -> str | None:
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = shlex.split(os.fsdecode(argv))
    args = [os.fsdecode(a) for a in argv or ()]
    if not args:
        return None
    if len(args) >= 3 and args[1] == "-c" and os.path.basename(args[0]) in ("sh", "bash", "dash"):
        return _program(args[2])  # a shell command line: the program it runs
    base = os.path.basename(args[0])
    if base in PROGRAMS or "node_modules" in args[0]:
        return PROGRAMS.get(base, "node_modules")
    if "--scenario" in args or ("devnet" in args and any("publisher" in a for a in args)):
        return "devnet"
    if "-c" in args and any("ggp_devnet" in a for a in args):  # python -c "…the devnet…"
        return "devnet"
    return None


def _hook(event: str, args: tuple) -> None:
    if current is None or event not in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.system"):
        return
    kind = _program(args[0] if event == "os.system" else args[1])
    if event == "subprocess.Popen" and kind is None and args[0]:
        kind = _program([args[0]])
    if kind:
        raise RuntimeError(f"{current} is classified unit but starts {kind} ({event}): mark it, or its module, "
                           f"with pytest.mark.{'devnet' if kind in ('devnet', 'node_modules') else kind}")


_installed = False


def install_guard() -> None:
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
