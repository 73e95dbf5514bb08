"""Keeps the documentation's generated sections in step with the code: `python tools/gendocs.py`
rewrites them, and with `--check` fails when a committed file differs from what it would write (a
test runs it). A section sits between `<!-- NAME:start -->` and `<!-- NAME:end -->` in the one file
named for it in SECTIONS; benchmarks/report.py writes the performance tables the same way."""
from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import click

from publisher.config import env_table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's publisher, whichever one the interpreter has installed


def command_table() -> str:
    """One row per `publisher` command: its usage line and the first line of its help."""
    from publisher.cli import main

    rows = ["| command | options | what it does |", "|---|---|---|"]

    def walk(cmd: click.Command, ctx: click.Context) -> None:
        if isinstance(cmd, click.Group):
            for name in sorted(cmd.commands):
                sub = cmd.commands[name]
                walk(sub, click.Context(sub, info_name=name, parent=ctx))
            return
        args = " ".join(p.make_metavar(ctx) for p in cmd.params if isinstance(p, click.Argument))
        options = ", ".join(f"`{p.opts[0]}`" for p in cmd.params if isinstance(p, click.Option) and p.name != "help")
        rows.append(f"| `{ctx.command_path}{' ' + args if args else ''}` | {options or '—'} | {cmd.get_short_help_str(limit=200)} |")

    walk(main, click.Context(main, info_name="publisher"))
    return "\n".join(rows) + "\n"


# Section name -> (the file it lives in, relative to the repository, and what writes its body).
Sections = Mapping[str, tuple[str, Callable[[], str]]]
SECTIONS: Sections = {
    "command-table": ("docs/operating.md", command_table),
    "env-table": ("docs/operating.md", env_table),
}


def _pattern(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- {re.escape(name)}:start -->\n).*?(<!-- {re.escape(name)}:end -->)", re.S)


def replace_section(text: str, name: str, body: str, where: str) -> str:
    """``text`` with the section ``name`` holding ``body``; the section must be there exactly once."""
    pattern = _pattern(name)
    found = len(pattern.findall(text))
    if found != 1:
        raise SystemExit(f"{where} has {found or 'no'} <!-- {name}:start --> … <!-- {name}:end --> blocks, not one")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)


def rendered(sections: Sections, root: Path = ROOT) -> dict[Path, tuple[str, str]]:
    """Each file holding a section: (its text now, its text with every section written anew)."""
    files: dict[Path, tuple[str, str]] = {}
    for name, (where, make) in sections.items():
        path = root / where
        if path not in files:
            text = path.read_text(encoding="utf-8")
            files[path] = (text, text)
        current, wanted = files[path]
        files[path] = (current, replace_section(wanted, name, make(), where))
    return files


def markers(text: str) -> list[str]:
    """The names of the generated sections ``text`` holds."""
    return re.findall(r"<!-- ([\w:.-]+):start -->", text)


def main(sections: Sections = SECTIONS, argv: list[str] | None = None, root: Path = ROOT) -> None:
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    stale = []
    for path, (current, wanted) in rendered(sections, root).items():
        if wanted == current:
            continue
        if check:
            stale.append(path.relative_to(root).as_posix())
        else:
            path.write_text(wanted, encoding="utf-8")
    if stale:
        sys.exit(f"generated tables out of date in {', '.join(stale)}: run `make docs`")


if __name__ == "__main__":
    main()
