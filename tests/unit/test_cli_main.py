"""The command table of `bearagent`: every entry resolves, and --help imports none of the command modules."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from bearagent.cli import main
from bearagent.cli.main import LAZY_COMMANDS


@pytest.mark.parametrize("name", sorted(LAZY_COMMANDS))
def test_every_lazy_command_resolves_to_a_click_command_of_that_name(name: str) -> None:
    ctx = click.Context(main)
    command = main.get_command(ctx, name)
    assert isinstance(command, click.Command)
    assert command.name == name


def test_help_lists_every_command_without_importing_them() -> None:
    code = (
        "import sys\n"
        "from bearagent.cli import main\n"
        "try:\n    main(['--help'], prog_name='bearagent')\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('bearagent.cli.') and m not in "
        "('bearagent.cli.main',))\n"
        "heavy = sorted(m for m in ('openai', 'anthropic', 'mcp', 'httpx', 'pydantic') if m in sys.modules)\n"
        "print('LOADED', loaded)\nprint('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    for name in LAZY_COMMANDS:
        assert f"  {name} " in out
    assert "LOADED []" in out
    assert "HEAVY []" in out
