"""Build the rewards function's deployable zip: the handler and the formula module, nothing else.

The zip is byte-for-byte reproducible (fixed timestamps and permissions, sorted entries), so an
unchanged function is an unchanged artifact. Lambda handler setting: ``handler.handler``.
"""
from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

HANDLER = "handler.handler"
_ROOT = Path(__file__).resolve().parent.parent
SOURCES = {
    "handler.py": _ROOT / "function" / "handler.py",
    "rewards.py": _ROOT / "compute" / "rewards.py",
}
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry


def zip_bytes() -> bytes:
    """The zip's content, built in memory."""
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in sorted(SOURCES):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, so the mode below is honoured
            info.external_attr = 0o100644 << 16
            zf.writestr(info, SOURCES[name].read_bytes(), compresslevel=9)
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
