"""A misspelt guarding key in an agent file (issue 32): `tool:` for `tools:` used to give the agent every tool, Bash
and Write included, with a mere warning. Now the agent is skipped with an error naming the key, and a run refuses
(a skipped file must not let a wider agent of the same name run instead)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import CONFIG

from bearagent.cli import main


def _invoke(args: list[str], home: Path) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home), prog_name="bearagent")


@pytest.mark.parametrize(
    ("key", "guess"),
    [
        ("tool", "tools"),
        ("Tools", "tools"),
        ("disalowed_tools", "disallowed_tools"),
        ("permissionmode", "permissionMode"),
        ("allowed_tools", "tools"),  # not the nearest spelling, disallowed_tools, which would invert it
        ("allowed-tools", "tools"),
        ("allowedTools", "tools"),
    ],
)
def test_a_misspelt_guarding_key_skips_the_agent(tmp_path: Path, key: str, guess: str) -> None:
    root = tmp_path / "ws"
    write(root, ".bearagent/config.yaml", CONFIG)
    write(root, ".bearagent/script.yaml", 'turns:\n  - text: "hi"\n')
    value = "plan" if "mode" in key else "Read"
    write(root, ".claude/agents/main.md", f"---\ndescription: Main.\nmode: primary\n{key}: {value}\n---\nHi.\n")
    agents = _invoke(["agents", "list", "-w", str(root)], tmp_path / "home")
    assert "\nmain " not in agents.output  # skipped, not loaded with every tool
    doctor = _invoke(["doctor", "-w", str(root)], tmp_path / "home")
    assert doctor.exit_code == 2
    assert "the agent was skipped" in doctor.output
    assert f"did you mean {guess!r}" in doctor.output or f"rename {key!r} to {guess!r}" in doctor.output
    run = _invoke(["run", "-w", str(root), "-a", "main", "hello"], tmp_path / "home")
    assert run.exit_code != 0 and "hi" not in run.output.split("\n")
    assert "agent 'main' was not loaded" in run.output and f"{key!r}" in run.output


def test_an_unknown_key_that_guards_nothing_stays_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, ".bearagent/config.yaml", CONFIG)
    write(root, ".bearagent/script.yaml", 'turns:\n  - text: "hi"\n')
    write(root, ".claude/agents/main.md", "---\ndescription: Main.\nmode: primary\ncolour: blue\n---\nHi.\n")
    run = _invoke(["run", "-w", str(root), "hello"], tmp_path / "home")
    assert run.exit_code == 0, run.output
    assert "colour" in run.output and "hi" in run.output
