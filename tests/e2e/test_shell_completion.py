"""Shell completion (issue 32): the one-line installs docs/terminal.md gives work, through real `bearagent`
processes: each shell's script is printed, and a completion request completes commands and options."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env

DOCS = Path(__file__).resolve().parents[2] / "docs" / "terminal.md"


def _complete(tmp_path: Path, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "from bearagent.cli import main; main(prog_name='bearagent')"],
        env={**isolated_env(tmp_path / "home"), "PYTHONPATH": os.environ.get("PYTHONPATH", ""), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete -o"), ("zsh", "compdef"), ("fish", "complete")])
def test_each_shell_gets_its_script_and_the_docs_give_its_line(tmp_path: Path, shell: str, marker: str) -> None:
    script = _complete(tmp_path, _BEARAGENT_COMPLETE=f"{shell}_source")
    assert marker in script and "_BEARAGENT_COMPLETE" in script
    assert f"_BEARAGENT_COMPLETE={shell}_source bearagent" in DOCS.read_text(encoding="utf-8")


def test_commands_and_options_complete(tmp_path: Path) -> None:
    commands = _complete(tmp_path, _BEARAGENT_COMPLETE="bash_complete", COMP_WORDS="bearagent ses", COMP_CWORD="1")
    assert "sessions" in commands
    options = _complete(
        tmp_path, _BEARAGENT_COMPLETE="bash_complete", COMP_WORDS="bearagent run --allowed", COMP_CWORD="2"
    )
    assert "--allowed-tools" in options
