"""`bearagent run --allowed-tools` (Claude Code's `--allowedTools`, issue 32): rules allowed without asking for one
run, through real `bearagent` processes. Deny rules still win, and a malformed rule is refused before the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.config_ws import isolated_env
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

SCRIPT = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: notes.txt, content: "hello\\n"}}]
  - text: "Done."
"""
AGENTS = {"main": agent_md("Main.", mode="primary", tools="[Read, Write]")}


def _run(root: Path, home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearagent", "run", *flags, "write the notes"],
        cwd=root,
        env={**isolated_env(home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_allowed_tools_allow_without_asking_for_this_run_only(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS, config=CONFIG + "permission_mode: default\n")
    asked = _run(root, tmp_path / "home")
    assert not (root / "notes.txt").exists(), asked.stdout  # no terminal to ask: denied
    allowed = _run(root, tmp_path / "home", "--allowed-tools", "Read,Write(notes.txt)")
    assert allowed.returncode == 0, allowed.stderr
    assert (root / "notes.txt").read_text() == "hello\n"
    (root / "notes.txt").unlink()
    again = _run(root, tmp_path / "home", "--allowedTools", "Read")  # Claude Code's spelling; Write not in it
    assert not (root / "notes.txt").exists(), again.stdout


def test_a_deny_rule_still_wins_and_a_malformed_rule_is_refused(tmp_path: Path) -> None:
    config = CONFIG + "permission_mode: default\npermissions:\n  deny: [Write]\n"
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS, config=config)
    denied = _run(root, tmp_path / "home", "--allowed-tools", "Write")
    assert not (root / "notes.txt").exists(), denied.stdout
    bad = _run(root, tmp_path / "home", "--allowed-tools", "Bash(*")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "Traceback" not in bad.stderr and "Bash(*" in bad.stderr
