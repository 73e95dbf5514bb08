"""The two trees behind ``out`` and the record each holds.

``out`` is a symbolic link to one of two sibling trees, ``.out.a`` and ``.out.b``. A build writes
the tree ``out`` does not point at, then flips the link with one rename: a reader sees the previous
tree or the new one, never a missing or half-written ``out/``. Each finished tree holds a record,
``.build.json``: for every file its sha256, size, the key of the inputs it was made from (None when
rendered without one), for an aggregate the digest of its content without ``meta``, and the
modification time and inode the file had when the build wrote (or linked) it. It is the
incremental build's memory of the previous run and the manifest ``publisher publish`` trusts.

A file is only vouched for while it still is what its record says. Carried files are hard links
shared by both trees, so an edit in place changes both: before a file is carried, linked or kept,
its size, modification time and inode are compared with its record (``holds``), and a file written
within ``RACY_NS`` of its record is hashed besides, since an edit in the same tick of the file
system's clock keeps the modification time. ``changes`` lists how a whole tree differs from its
record, for ``publisher check`` and ``publisher publish``.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from json.encoder import encode_basestring_ascii as _quote
from pathlib import Path
from typing import NamedTuple

from .. import jsonin
from ..endpoints.registry import file_for, url_for
from ..errors import PublisherError

RECORD = ".build.json"
RECORD_FORMAT = "ggp-publisher-build/3"
# A file whose recorded modification time is this close before its record's (or later) is hashed to
# be verified: file systems stamp times by a clock tick (a few milliseconds, seconds on some), and
# an edit within the tick of the build's write would keep the stamp.
RACY_NS = 2_000_000_000

class Entry(NamedTuple):
    """One file of a record; on disk, a JSON array of these fields in this order."""

    sha256: str
    size: int
    inputs_key: str | None  # the incremental layer's key of what the file was made from
    content_key: str | None  # an aggregate's content, its block stamp left out
    mtime_ns: int
    inode: int


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def trees(out: Path) -> tuple[Path | None, Path]:
    """(the tree readers see now, or None; the tree this build writes)."""
    a, b = out.parent / f".{out.name}.a", out.parent / f".{out.name}.b"
    if out.is_symlink():
        live = out.resolve()
        return (live if live.is_dir() else None), (b if live.name == a.name else a)
    return (out if out.is_dir() else None), a


@dataclass(frozen=True)
class Record:
    """A finished tree's ``.build.json``, as read."""

    files: dict[str, Entry]  # URL path -> entry
    run: str | None
    racy_from: int  # ns: a file recorded as modified at or after this is hashed to be verified


class Records:
    """The records this process wrote or read last, by the sha256 of their bytes. A watch reads
    both trees' records every turn, tens of thousands of entries each, and parsing them would be
    most of a quiet turn's build; their bytes are still read and hashed, so a record changed by
    any means is parsed again."""

    KEEP = 2  # one per tree

    def __init__(self, *, rebuilds: bool = True) -> None:
        self.by_sha: dict[str, tuple[dict[str, Entry], str | None]] = {}
        # Whether a next build in this process reads what is kept below for it; a process that
        # builds once keeps none of it (at 100 000 stakers the member texts alone are 60 MB held at
        # the build's peak).
        self.rebuilds = rebuilds
        # The last record encoded (``record_chunks``), the live tree's in a watch: the entries of
        # the files a build keeps are that record's very entries, so their members are its text.
        self.encoded: Encoded | None = None
        # The folders of the last record written to each tree (``_folders``), with its paths: a
        # build one block later most often has the very same paths.
        self.folders: dict[str, tuple[frozenset[str], dict[str, set[str]]]] = {}

    def get(self, sha: str) -> tuple[dict[str, Entry], str | None] | None:
        return self.by_sha.get(sha)

    def put(self, sha: str, files: dict[str, Entry], run: str | None) -> None:
        self.by_sha.pop(sha, None)
        self.by_sha[sha] = (files, run)
        while len(self.by_sha) > self.KEEP:
            del self.by_sha[next(iter(self.by_sha))]


def read_record(tree: Path | None, known: Records | None = None) -> Record | None:
    if tree is None:
        return None
    try:
        fd = os.open(tree / RECORD, os.O_RDONLY)
        try:
            written = os.fstat(fd).st_mtime_ns
            with os.fdopen(os.dup(fd), "rb") as f:
                data = f.read()
        finally:
            os.close(fd)
        digest = sha256(data) if known is not None else ""
        hit = known.get(digest) if known is not None else None
        if hit is not None:
            return Record(hit[0], hit[1], written - RACY_NS)
        doc = jsonin.loads(data)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != RECORD_FORMAT or not isinstance(doc.get("files"), dict):
        return None
    if not all(type(e) is list and len(e) == 6 for e in doc["files"].values()):
        return None
    make = Entry._make
    record = Record({path: make(e) for path, e in doc["files"].items()}, doc.get("run"), written - RACY_NS)
    if known is not None:
        known.put(digest, record.files, record.run)
    return record


def read_file(name: str) -> bytes:
    # os.read on a raw descriptor: half the system calls of open().read() (no buffer, no isatty).
    fd = os.open(name, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 18):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def holds(name: str, entry: Entry, racy_from: int) -> bool:
    """Whether the file ``name`` is still what ``entry`` records: the same size, modification time
    and inode, and for a file the record cannot tell by its time (``RACY_NS``), the same sha256."""
    try:
        st = os.stat(name)
    except OSError:
        return False
    if st.st_size != entry.size or st.st_mtime_ns != entry.mtime_ns or st.st_ino != entry.inode:
        return False
    if entry.mtime_ns < racy_from:
        return True
    try:
        return sha256(read_file(name)) == entry.sha256
    except OSError:
        return False


def list_files(folder: str, prefix: str = "", out: list[str] | None = None) -> list[str]:
    """Relative names of the files under ``folder``: dotfiles and dot-directories skipped,
    symlinked directories not followed."""
    out = [] if out is None else out
    # os.scandir: the file type comes with the listing, without a stat per file as Path.rglob does.
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                list_files(entry.path, prefix + entry.name + "/", out)
            elif entry.is_file():
                out.append(prefix + entry.name)
    return out


def changes(root: Path, record: Record, data: Mapping[str, bytes] | None = None) -> list[str]:
    """How the tree at ``root`` differs from its record, one line per file, in path order: a file
    changed since the build wrote it, missing, or not written by the build. With ``data`` (every
    file's bytes by URL path, as ``publisher check`` reads them) each file is judged by its sha256;
    without, by ``holds``, and where that fails by its sha256 (a copied tree has other inodes and
    the same bytes)."""
    on_disk = data.keys() if data is not None else {url_for(rel) for rel in list_files(os.fspath(root))}
    out = []
    for url in sorted(on_disk | record.files.keys()):
        entry = record.files.get(url)
        if entry is None:
            out.append(f"{url} is not a file the build wrote (its record does not list it)")
        elif url not in on_disk:
            out.append(f"{url} is missing (the build wrote it)")
        elif data is not None:
            if sha256(data[url]) != entry.sha256:
                out.append(f"{url} changed since it was built")
        else:
            name = f"{root}/{file_for(url)}"
            if not holds(name, entry, record.racy_from):
                try:
                    same = sha256(read_file(name)) == entry.sha256
                except OSError:
                    same = False
                if not same:
                    out.append(f"{url} changed since it was built")
    return out


class TreeWriter:
    """Writes a tree that is not live. ``held`` (the tree's own record, when it has one) names
    what it already holds: a file still as recorded with the sha256 wanted is not touched, and the
    tree is not emptied first. A file is unlinked before it is replaced: it may be a hard link
    shared with the live tree. ``write`` and ``link`` return the file's (mtime_ns, inode) for its
    record."""

    def __init__(self, tree: Path, held: Record | None = None):
        if held is None and tree.exists():
            shutil.rmtree(tree)  # unknown content: start afresh
        tree.mkdir(parents=True, exist_ok=True)
        os.chmod(tree, 0o755)
        (tree / RECORD).unlink(missing_ok=True)  # until finished, the tree vouches for nothing
        self.tree = tree
        self.root = str(tree)  # plain strings: tens of thousands of files, pathlib's overhead shows
        self.holds = held.files if held else {}
        self.racy_from = held.racy_from if held else 0
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

    def _kept(self, path: str, sha: str) -> tuple[int, int] | None:
        """(mtime_ns, inode) of the file the tree holds at ``path`` if it is still the recorded
        one with this sha256."""
        held = self.holds.get(path)
        if held is None or held.sha256 != sha or not holds(f"{self.root}/{file_for(path)}", held, self.racy_from):
            return None
        return held.mtime_ns, held.inode

    def write(self, path: str, data: bytes, sha: str) -> tuple[int, int]:
        kept = self._kept(path, sha)
        if kept is not None:
            return kept
        fd = os.open(self._target(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            st = os.fstat(fd)
        finally:
            os.close(fd)
        self.written += 1
        return st.st_mtime_ns, st.st_ino

    def link(self, path: str, source: Path, entry: Entry, racy_from: int) -> tuple[int, int] | None:
        """Hard-link ``path`` from the tree ``source`` (the live one), whose record has ``entry``
        for it (``racy_from``: that record's), unless this tree already holds the file. The source's
        file is linked only while it is still the one recorded (``holds``; an edit by hand is not
        carried): None when it is not. A file both trees share is looked at once."""
        kept = self._kept(path, entry.sha256)
        if kept is not None:
            return kept
        name = f"{source}/{file_for(path)}"
        if not holds(name, entry, racy_from):
            return None
        target = self._target(path)
        try:
            os.link(name, target)
        except FileExistsError:
            # Put there since the tree's record: by hand, or by another worker of this build making
            # the same path (which the build's merge refuses by name). Replaced, as ``write`` does.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)
            try:
                os.link(name, target)
            except FileExistsError:
                raise PublisherError(f"two responses for {path}: written twice at once") from None
        self.written += 1
        return entry.mtime_ns, entry.inode

    def finish(self, record: dict, known: Records | None = None) -> None:
        """Write the tree's record (``known`` remembers it, see ``Records``)."""
        if self.holds:  # what the tree held and no longer should, and anything else put there
            _sweep(self.root, _folders_of(record["files"], known, self.tree.name))
        digest = hashlib.sha256()
        with open(self.tree / RECORD, "wb") as f:
            for chunk in record_chunks(record, known):
                digest.update(chunk)
                f.write(chunk)
        if known is not None:
            known.put(digest.hexdigest(), record["files"], record["run"])


def _folders_of(files: dict[str, Entry], known: Records | None, tree: str) -> dict[str, set[str]]:
    """``_folders`` of these URL paths' files, the last ones ``known`` made for ``tree`` when the
    paths are the same."""
    last = known.folders.get(tree) if known is not None else None
    if last is not None and files.keys() == last[0]:
        return last[1]
    folders = _folders(file_for(path) for path in files)
    if known is not None and known.rebuilds:
        known.folders[tree] = (frozenset(files), folders)
    return folders


def _folders(names: Iterable[str]) -> dict[str, set[str]]:
    """Relative folder -> the entries it holds (files and folders), for these relative file names."""
    folders: dict[str, set[str]] = {"": set()}
    for name in names:
        folder, _, base = name.rpartition("/")
        while (held := folders.get(folder)) is None:  # a folder first met: its parent holds it
            folders[folder] = {base}
            folder, _, base = folder.rpartition("/")
        held.add(base)
    return folders


def _sweep(root: str, folders: dict[str, set[str]]) -> None:
    """Remove every entry under ``root`` that ``folders`` does not name, dot-names aside: each
    folder listed once and compared as a set (a tree holds tens of thousands of files, a walk
    looking at each cost more than the rest of a small build's finish)."""
    for folder, held in folders.items():
        where = f"{root}/{folder}" if folder else root
        for name in set(os.listdir(where)) - held:
            if name.startswith("."):
                continue
            extra = f"{where}/{name}"
            if os.path.isdir(extra) and not os.path.islink(extra):
                shutil.rmtree(extra)
            else:
                os.unlink(extra)


@dataclass(frozen=True)
class Encoded:
    """A record's files as ``record_chunks`` wrote them: the paths in order, each one's entry and
    member text."""

    paths: list[str]
    names: frozenset[str]
    entries: list[Entry]
    texts: list[str]


_CHUNK = 4096  # members joined and encoded at a time: a record at 250 000 files is about 50 MB


def record_chunks(record: dict, known: Records | None = None) -> Iterator[bytes]:
    """``json.dumps(record, separators=(",", ":"), sort_keys=True)`` encoded, in pieces, so that
    the whole text is never held."""
    paths, entries, texts = _members(record["files"], known)
    for i, name in enumerate(sorted(record)):
        head = ("{" if i == 0 else ",") + json.dumps(name) + ":"
        if name != "files":
            yield (head + json.dumps(record[name], separators=(",", ":"), sort_keys=True)).encode()
            continue
        yield (head + "{").encode()
        members = iter(texts) if texts is not None else map(_member, paths, entries)
        sep = ""
        while chunk := list(islice(members, _CHUNK)):
            yield (sep + ",".join(chunk)).encode()
            sep = ","
        yield b"}"
    yield b"}"


def _members(files: dict[str, Entry], known: Records | None) -> tuple[list[str], list[Entry], list[str] | None]:
    """The files' paths in order, their entries and, where ``known`` keeps them, their member
    texts: each taken from the last record it encoded where the entry is the same (the very entry,
    most often: a file kept from the live tree). None: made as they are written."""
    last = known.encoded if known is not None else None
    if last is not None and len(files) == len(last.paths) and files.keys() == last.names:
        # The same paths: the last record's order, and a member made again only where its entry moved.
        paths, names, texts = last.paths, last.names, list(last.texts)
        entries = list(map(files.__getitem__, paths))
        for i in [i for i, (e, was) in enumerate(zip(entries, last.entries, strict=True)) if e is not was]:
            if entries[i] != last.entries[i]:
                texts[i] = _member(paths[i], entries[i])
    else:
        paths, names = sorted(files), frozenset(files)
        entries = [files[p] for p in paths]
        if known is None or not known.rebuilds:
            return paths, entries, None
        had = dict(zip(last.paths, zip(last.entries, last.texts, strict=True), strict=True)) if last is not None else {}
        texts = [hit[1] if (hit := had.get(path)) is not None and hit[0] == entry else _member(path, entry)
                 for path, entry in zip(paths, entries, strict=True)]
    assert known is not None  # the last record is one it kept
    known.encoded = Encoded(paths, names, entries, texts)
    return paths, entries, texts


def _member(path: str, e: Entry) -> str:
    """``"path":[...]`` as json.dumps writes it (strings escaped by its own function)."""
    text = [_quote(path), ":[", _quote(e.sha256), ",", str(e.size)]
    for key in (e.inputs_key, e.content_key):
        text += (",", "null" if key is None else _quote(key))
    text += (",", str(e.mtime_ns), ",", str(e.inode), "]")
    return "".join(text)


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


def points_at(out: Path, tree: Path) -> bool:
    """Whether the link ``out`` names ``tree`` (the live tree)."""
    try:
        return os.readlink(out) == tree.name
    except OSError:
        return False


class TreeFiles(Mapping):
    """URL path -> bytes of a built tree, read only when asked: the guards read a few files. With
    the tree's ``record``, only files with their recorded sha256: an edited one is not the run's."""

    def __init__(self, root: Path, extra: dict[str, bytes] | None = None, record: Record | None = None):
        self.root, self.extra, self.record = root, extra or {}, record

    def __getitem__(self, path: str) -> bytes:
        if path in self.extra:
            return self.extra[path]
        entry = self.record.files.get(path) if self.record else None
        if self.record and entry is None:
            raise KeyError(path)
        try:
            data = read_file(f"{self.root}/{file_for(path)}")
        except OSError:
            raise KeyError(path) from None
        if entry is not None and sha256(data) != entry.sha256:
            raise KeyError(path)
        return data

    def __iter__(self):
        raise TypeError("a tree's files are read by path")

    def __len__(self) -> int:
        raise TypeError("a tree's files are read by path")
