"""Keeps README.md's generated sections in step with the code: `python -m publisher.readme` rewrites
them, and a test fails when the committed README differs from what this would write."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from .config import env_table

README = Path(__file__).resolve().parents[1] / "README.md"


def command_table() -> str:
    """One row per `publisher` command: its usage line and the first line of its help."""
    from .cli import main

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


SECTIONS = {"env-table": env_table, "command-table": command_table}


def render(text: str) -> str:
    for name, make in SECTIONS.items():
        pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no <!-- {name}:start --> … <!-- {name}:end --> block")
        text = pattern.sub(lambda m: m.group(1) + make() + m.group(2), text)  # noqa: B023
    return text


def main() -> None:
    current = README.read_text(encoding="utf-8")
    wanted = render(current)
    if "--check" in sys.argv[1:]:
        sys.exit(0 if wanted == current else "README.md's generated tables are out of date: run `make docs`")
    README.write_text(wanted, encoding="utf-8")


if __name__ == "__main__":
    main()
