"""docs/cli.md is generated from the click help: it must match the code."""

from __future__ import annotations

from pathlib import Path

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
