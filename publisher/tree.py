"""The two trees behind ``out`` and the record each holds.

``out`` is a symbolic link to one of two sibling trees, ``.out.a`` and ``.out.b``. A build writes
the tree ``out`` does not point at, then flips the link with one rename: a reader sees the previous
tree or the new one, never a missing or half-written ``out/``. Each finished tree holds a record,
``.build.json``: for every file its sha256, size, the key of the inputs it was made from (None when
rendered without one) and, for an aggregate, the digest of its content without ``meta``. It is the
incremental build's memory of the previous run and the manifest ``publisher publish`` trusts.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from .endpoints.registry import file_for

RECORD = ".build.json"
RECORD_FORMAT = "ggp-publisher-build/2"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def trees(out: Path) -> tuple[Path | None, Path]:
    """(the tree readers see now, or None; the tree this build writes)."""
    a, b = out.parent / f".{out.name}.a", out.parent / f".{out.name}.b"
    if out.is_symlink():
        live = out.resolve()
        return (live if live.is_dir() else None), (b if live.name == a.name else a)
    return (out if out.is_dir() else None), a


def read_record(tree: Path | None) -> dict | None:
    if tree is None:
        return None
    try:
        doc = json.loads((tree / RECORD).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != RECORD_FORMAT or not isinstance(doc.get("files"), dict):
        return None
    return doc


class TreeWriter:
    """Writes a tree that is not live. ``holds`` (the tree's own record, when it has one) names
    what it already holds: a file whose sha256 is unchanged is not touched, and the tree is not
    emptied first. A file is unlinked before it is replaced: it may be a hard link shared with the
    live tree."""

    def __init__(self, tree: Path, holds: dict[str, list] | None = None):
        if holds is None and tree.exists():
            shutil.rmtree(tree)  # unknown content: start afresh
        tree.mkdir(parents=True, exist_ok=True)
        os.chmod(tree, 0o755)
        (tree / RECORD).unlink(missing_ok=True)  # until finished, the tree vouches for nothing
        self.tree = tree
        self.root = str(tree)  # plain strings: tens of thousands of files, pathlib's overhead shows
        self.holds = holds or {}
        self.folders: set[str] = set()
        self.written = 0

    def _target(self, path: str) -> str:
        f = f"{self.root}/{file_for(path)}"
        if path in self.holds:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f)
        else:
            folder = os.path.dirname(f)
            if folder not in self.folders:
                os.makedirs(folder, exist_ok=True)
                self.folders.add(folder)
        return f

    def _same(self, path: str, sha: str) -> bool:
        held = self.holds.get(path)
        return held is not None and held[0] == sha

    def write(self, path: str, data: bytes, sha: str) -> None:
        if not self._same(path, sha):
            fd = os.open(self._target(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            self.written += 1

    def link(self, path: str, source: Path, sha: str) -> None:
        """Hard-link ``path`` from the tree ``source`` (the live one)."""
        if not self._same(path, sha):
            os.link(f"{source}/{file_for(path)}", self._target(path))
            self.written += 1

    def finish(self, record: dict) -> None:
        for path in self.holds.keys() - record["files"].keys():
            (self.tree / file_for(path)).unlink(missing_ok=True)
        (self.tree / RECORD).write_bytes(json.dumps(record, separators=(",", ":"), sort_keys=True).encode())


def flip(out: Path, tree: Path) -> None:
    """Point ``out`` at ``tree`` with one rename."""
    tmp = out.parent / f".{out.name}.link-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    os.symlink(tree.name, tmp)
    if out.is_dir() and not out.is_symlink():
        # Once, when out/ is still a plain directory: it becomes the other tree (two renames).
        other = out.parent / f".{out.name}.{'b' if tree.name.endswith('.a') else 'a'}"
        if other.exists():
            shutil.rmtree(other)
        os.rename(out, other)
    os.replace(tmp, out)


class TreeFiles(Mapping):
    """URL path -> bytes of a built tree, read only when asked: the guards read a few files."""

    def __init__(self, root: Path, extra: dict[str, bytes] | None = None):
        self.root, self.extra = root, extra or {}

    def __getitem__(self, path: str) -> bytes:
        if path in self.extra:
            return self.extra[path]
        try:
            return (self.root / file_for(path)).read_bytes()
        except OSError:
            raise KeyError(path) from None

    def __iter__(self):
        raise TypeError("a tree's files are read by path")

    def __len__(self) -> int:
        raise TypeError("a tree's files are read by path")


def write_files(out_dir: str | Path, files: Mapping[str, bytes]) -> None:
    """Write given files as the tree behind ``out_dir``, unvalidated and without a record (so
    nothing trusts them): for directories made by hand."""
    out = Path(os.path.abspath(out_dir))
    out.parent.mkdir(parents=True, exist_ok=True)
    _, tree = trees(out)
    writer = TreeWriter(tree)
    try:
        for path, data in files.items():
            writer.write(path, data, sha256(data))
        flip(out, tree)
    except BaseException:
        shutil.rmtree(tree, ignore_errors=True)
        raise
