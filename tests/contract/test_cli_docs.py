"""docs/cli.md is generated from the click help: it must match the code."""

from __future__ import annotations

import re
from pathlib import Path

import click

from bearagent.cli import main
from bearagent.cli.docs import render_cli_docs
from bearagent.cli.main import LAZY_COMMANDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_cli_reference_is_up_to_date() -> None:
    expected = render_cli_docs(main)
    current = DOC.read_text(encoding="utf-8")
    assert current == expected, "docs/cli.md is stale: run `uv run python scripts/gen_cli_docs.py` and commit it"


def test_cli_reference_covers_every_command() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in LAZY_COMMANDS:
        assert f"## `bearagent {name}" in text


ROOT = Path(__file__).resolve().parents[2]
# `bearagent <command> <sub>...` as a hint, a message or a page spells it: the words after a command group name
_NAMED = re.compile(r"\bbearagent((?: [a-z][a-z0-9-]*)+)")


def named_commands_that_do_not_exist(text: str) -> list[str]:
    """Each `bearagent GROUP WORD` in `text` whose GROUP is a command group without a subcommand WORD (prose such
    as "bearagent process" starts with no command and is left alone)."""
    ctx = click.Context(main)
    missing: list[str] = []
    for match in _NAMED.finditer(text):
        command: click.Command = main
        for depth, word in enumerate(match.group(1).split()):
            if not isinstance(command, click.Group):
                break
            sub = command.get_command(ctx, word)
            if sub is None:
                if depth > 0:
                    missing.append(match.group(0))
                break
            command = sub
    return missing


def test_a_command_a_hint_or_a_page_names_exists() -> None:
    # hints named `bearagent runs inspect` and `bearagent runs cancel`, which did not exist
    files = [*(ROOT / "src" / "bearagent").rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    found = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in files
        for name in named_commands_that_do_not_exist(path.read_text(encoding="utf-8"))
    }
    assert not found, sorted(found)
    assert named_commands_that_do_not_exist("see `bearagent runs inspect RUN`") == ["bearagent runs inspect"]
    assert named_commands_that_do_not_exist("stop the other bearagent process; bearagent runs list") == []
