"""The documentation stays true to the repository: the generated tables equal what their generators
write now (the command and variable tables from the code, the performance tables from the committed
benchmark results), the README stays a short front door whose endpoint table is the registry's, and
every relative link in README.md and docs/ lands on a file (and heading) that exists."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from publisher.endpoints.registry import load_all

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import gendocs as readme  # noqa: E402  (the documentation generator lives beside the package, not in it)

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_LIMIT = 12 * 1024


def _report():
    """benchmarks/report.py, the performance tables' generator (not a package module)."""
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "benchmarks" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_report_says_how_fast_the_machine_ran_and_its_table_says_so_too(tmp_path):
    """A benchmark's report carries the machine's speed at its start and end (``record.speed``),
    and the table rendered from it states them: a slow hour is told from a slow commit."""
    spec = importlib.util.spec_from_file_location("bench_record", ROOT / "benchmarks" / "record.py")
    record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(record)
    record.write(tmp_path / "r.json", {"figure": 1}, [0.5])
    written = json.loads((tmp_path / "r.json").read_text())
    start, end = written["machine"]["speed_us"]
    assert 0 < start < 1000 and 0 < end < 1000
    assert f"`sum(range(100))` took {_report().num([start, end], '.2f')} µs" in _report().stamp(written)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_generated_tables_are_current():
    run = subprocess.run([sys.executable, "tools/gendocs.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_performance_tables_are_the_committed_results():
    """docs/performance.md's tables are what benchmarks/report.py renders from benchmarks/results/."""
    run = subprocess.run([sys.executable, "benchmarks/report.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_each_generated_section_is_in_its_one_file():
    """A table moved or copied by hand would keep its markers where no generator writes them."""
    homes = {name: where for name, (where, _) in {**readme.SECTIONS, **_report().sections()}.items()}
    for path in DOCS:
        for name in readme.markers(path.read_text(encoding="utf-8")):
            assert name in homes, f"{_rel(path)} holds a section {name} that nothing generates"
            assert homes[name] == _rel(path), f"{_rel(path)} holds {name}, which is written into {homes[name]}"


def test_every_results_file_has_its_table_and_says_where_it_comes_from():
    report = _report()
    files = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (ROOT / "benchmarks" / "results").glob("*.json")}
    assert set(files) == set(report.TABLES)
    for name, r in files.items():
        assert r["recorded"]["source"] in ("measured", "transcribed"), name
        assert r["command"].startswith("python benchmarks/") and r["recorded"]["date"], name
        if r["recorded"]["source"] == "transcribed":
            assert r["recorded"]["from"].startswith("README.md at "), name


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode()) <= README_LIMIT, f"README.md is {len(text.encode())} bytes; keep it within 12 KB (details go to docs/)"
    commands = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    assert [line.split("#")[0].strip() for line in commands.splitlines()] == ["make demo", "make test"]


def test_readme_endpoint_table_is_the_registry():
    """Every documented endpoint has its row in the README's table, and no row names another."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## What it serves\n", 1)[1].split("\n## ", 1)[0]
    listed = set()
    for line in section.splitlines():
        if line.startswith("| `/"):
            listed |= set(re.findall(r"`(/[^`]*)`", line.split("|")[1]))
    registered = {path for path, ep in load_all().items() if ep.documented}
    assert listed == registered, (f"README.md's endpoint table lacks {sorted(registered - listed)} "
                                  f"and lists {sorted(listed - registered)}, which the registry does not have")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _unfenced(path.read_text(encoding="utf-8")), re.M):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(f"{slug}-{n}" if n else slug)
    return out


def _unfenced(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _prose(text: str) -> str:
    """``text`` without fenced code blocks, inline code and HTML comments, where nothing is a link."""
    text = re.sub(r"<!--.*?-->", "", _unfenced(text), flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def _links(text: str) -> list[str]:
    prose = _prose(text)
    inline = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose)
    reference = re.findall(r"^\s*\[[^\]]+\]:\s*(\S+)", prose, re.M)
    return inline + reference


@pytest.mark.parametrize("path", DOCS, ids=_rel)
def test_relative_links_resolve(path):
    broken = []
    for target in _links(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{target} (no {file})")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target} (no heading #{anchor} in {_rel(dest)})")
    assert not broken, f"{_rel(path)}: {broken}"


def test_the_link_checker_sees_links_and_anchors():
    assert _links("see [a](docs/a.md#b), `[not](x)`, and\n[ref]: ../c.md\n```\n[no](y)\n```\n") == ["docs/a.md#b", "../c.md"]
    assert _slug("Publishing each block: `publisher watch`") == "publishing-each-block-publisher-watch"
    assert _slug("What `/status` shows when a source is degraded") == "what-status-shows-when-a-source-is-degraded"
