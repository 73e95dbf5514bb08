"""``publisher check``'s own plumbing: which files of a directory it reads, and strict JSON."""
from __future__ import annotations

import json
import os

import pytest

from publisher.build.validate import load_dir, strict_loads


def test_load_dir_reads_every_visible_file_whole_and_nothing_else(tmp_path):
    big = os.urandom(600_000)  # more than one read
    (tmp_path / "stakers").mkdir()
    (tmp_path / "stakers" / "0xab.json").write_bytes(b"{}")
    (tmp_path / "prices.json").write_bytes(big)
    (tmp_path / "index.html").write_bytes(b"<html>")
    (tmp_path / ".build.json").write_bytes(b"hidden")
    (tmp_path / ".staging").mkdir()
    (tmp_path / ".staging" / "status.json").write_bytes(b"hidden")
    (tmp_path / "stakers" / ".tmp.json").write_bytes(b"hidden")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "x.json").write_bytes(b"{}")
    (tmp_path / "linked").symlink_to(outside, target_is_directory=True)  # not followed
    files = load_dir(tmp_path)
    assert files == {"/": b"<html>", "/prices": big, "/stakers/0xab": b"{}"}
    assert list(files) == ["/", "/prices", "/stakers/0xab"]  # path order, directories by their parts


@pytest.mark.parametrize("data", [b'{"a": [1, 2.5, "x"]}', '{"a": 1}', b"\xef\xbb\xbf{}", "\ufeff{}", b"[1,", b"NaN",
                                  b'{"a": Infinity}', b"-Infinity", '"\u00e9"'.encode("utf-16"), b"", b"\xff"])
def test_strict_loads_is_json_loads_without_nan_and_infinity(data):
    try:
        expected = json.loads(data)
    except ValueError as exc:
        with pytest.raises(ValueError) as err:
            strict_loads(data)
        assert str(err.value) == str(exc)
        return
    if any(c in str(data) for c in ("NaN", "Infinity")):
        with pytest.raises(ValueError, match="is not valid JSON"):
            strict_loads(data)
    else:
        assert strict_loads(data) == expected
