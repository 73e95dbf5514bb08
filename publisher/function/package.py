"""Build the function's deployable zip: the handler and the modules it computes with (the
rewards formula, the withdrawal queue's line) with their bytecode, nothing else.

Lambda extracts the zip into a read-only directory, where no interpreter can cache what it
compiles: a zip of sources alone is compiled again on every cold start. So each module's bytecode
ships beside it, in ``__pycache__`` where the import system looks, compiled by this interpreter
for its own version (``RUNTIME``, which the stack's ``Runtime`` must name) with unchecked-hash
invalidation: the zip's timestamps are fixed and deployed files never change, so nothing needs
checking. Another Python version ignores that bytecode and compiles the ``.py`` as before.

The zip is byte-for-byte reproducible (fixed timestamps and permissions, sorted entries), so an
unchanged function is an unchanged artifact. Lambda handler setting: ``handler.handler``.
"""
from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..errors import PublisherError

HANDLER = "handler.handler"
RUNTIME = f"python{sys.version_info.major}.{sys.version_info.minor}"  # the Lambda runtime the bytecode is for
_ROOT = Path(__file__).resolve().parent.parent
SOURCES = {
    "handler.py": _ROOT / "function" / "handler.py",
    "rewards.py": _ROOT / "compute" / "rewards.py",
    "line.py": _ROOT / "compute" / "line.py",
}
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry


# Compiles in a fresh interpreter without site: marshal's output depends on which strings the
# process has interned or shared, so bytecode compiled inside a busy process (a test run, say)
# differs from a fresh one's. Arguments: source, target, name in tracebacks, repeated.
_COMPILE = """
import py_compile, sys
args = sys.argv[1:]
for src, cfile, name in zip(args[::3], args[1::3], args[2::3]):
    py_compile.compile(src, cfile=cfile, dfile=name, doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
"""


def entries() -> dict[str, bytes]:
    """Every file of the zip by name: the sources and their bytecode in ``__pycache__``."""
    out = {name: source.read_bytes() for name, source in SOURCES.items()}
    with tempfile.TemporaryDirectory(prefix="function-pyc-") as tmp:
        args = []
        for name, source in SOURCES.items():
            # The name in tracebacks is the bare file name; the importer puts in the real path on load.
            args += [str(source), str(Path(tmp) / f"{name}c"), name]
        run = subprocess.run([sys.executable, "-I", "-S", "-c", _COMPILE, *args], capture_output=True, text=True)
        if run.returncode != 0:
            lines = run.stderr.strip().splitlines()
            raise PublisherError(f"cannot compile the function's modules: {lines[-1] if lines else run.returncode}")
        for name in SOURCES:
            out[importlib.util.cache_from_source(name)] = (Path(tmp) / f"{name}c").read_bytes()
    return out


def zip_bytes() -> bytes:
    """The zip's content, built in memory."""
    buf = io.BytesIO()
    files = entries()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, so the mode below is honoured
            info.external_attr = 0o100644 << 16
            zf.writestr(info, files[name], compresslevel=9)
    return buf.getvalue()


def build_zip(out_path: str | os.PathLike) -> tuple[Path, int]:
    """Write the zip to ``out_path`` atomically; returns (path, size in bytes)."""
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = zip_bytes()
    fd, tmp = tempfile.mkstemp(prefix=".function-", suffix=".zip", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out, len(data)
