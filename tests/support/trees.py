"""A published tree made by hand, for tests that need a previous run's `out/`."""
from __future__ import annotations

import os
from pathlib import Path

from publisher.build.tree import TreeWriter, flip, sha256, trees


def copy_of(files: dict[str, bytes], directory):
    """The files (URL path -> bytes) as the tree behind ``directory``, without a record (as a
    directory made by hand)."""
    out = Path(os.path.abspath(directory))
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = TreeWriter(trees(out)[1])
    for path, data in files.items():
        writer.write(path, data, sha256(data))
    flip(out, writer.tree)
    return directory
