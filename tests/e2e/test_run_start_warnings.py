"""Allowlists mean what they say: a misspelt key is a warning at the start of `run` (not only in `doctor`), and the
same warning of many files (`model: sonnet` in 140 agent files) is one line with a count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.config_ws import write

from bearagent.config.diag_summary import MAX_RUN_START_LINES, group_diagnostics, run_start_lines
from bearagent.domain.diagnostics import Diagnostic

BEARAGENT = str(Path(sys.executable).parent / "bearagent")


def bear(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / "bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
        "NO_COLOR": "1",
    }
    return subprocess.run([BEARAGENT, *args], cwd=ws, env=env, capture_output=True, text=True, timeout=60, check=False)


def _project(root: Path, home: Path, files: int = 140) -> Path:
    write(home, "bearagent/script.yaml", "turns:\n  - text: done\n")
    write(
        home,
        "bearagent/config.yaml",
        f"default_model: s\nmodels:\n  s: {{provider: scripted, script: {home / 'bearagent' / 'script.yaml'}}}\n",
    )
    for i in range(files):
        write(root, f".claude/agents/agent-{i:03d}.md", f"---\ndescription: Agent {i}.\nmodel: sonnet\n---\nbody\n")
    write(root, ".claude/agents/typo.md", "---\ndescription: Typo.\ntool: Read\n---\nbody\n")
    return root


def test_a_misspelt_key_and_a_folded_alias_warning_at_the_start_of_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = _project(tmp_path / "ws", home)
    result = bear(ws, home, "run", "hello")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    # a misspelt guarding key skips that agent (issue 32: it used to run with every tool): counted at the start
    assert "note: 1 error(s) in 1 file(s) (those files were skipped): `bearagent doctor` lists them" in lines
    alias = [line for line in lines if "'sonnet'" in line]
    assert len(alias) == 1 and "(140 files: .claude/agents/agent-000.md, .claude/agents/agent-001.md, " in alias[0]
    assert "and 137 more)" in alias[0]

    doctor = bear(ws, home, "doctor")
    assert doctor.returncode == 2  # the skipped agent file is an error
    assert "unknown key 'tool' in agent file (did you mean 'tools'?)" in doctor.stdout
    assert sum("'sonnet' is a Claude Code alias" in line for line in doctor.stdout.splitlines()) == 1
    assert "(140 files:" in doctor.stdout and "140 warning(s)" in doctor.stdout


def test_the_run_start_summary_is_bounded_and_counts_skipped_files() -> None:
    diags = [
        Diagnostic(severity="warning", code=f"x.{i}", message=f"problem {i}", source=f"/ws/f{i}.md") for i in range(20)
    ]
    diags.append(Diagnostic(severity="error", code="config.yaml_syntax", message="bad", source="/ws/bad.md"))
    lines = run_start_lines(diags, Path("/ws"))
    assert lines[0] == "f0.md: warning: problem 0"
    assert len(lines) == MAX_RUN_START_LINES + 2
    assert lines[-2] == f"… and {20 - MAX_RUN_START_LINES} more warnings: `bearagent doctor` lists them"
    assert lines[-1].startswith("note: 1 error(s) in 1 file(s)")
    same = [
        Diagnostic(
            severity="warning", code="a", message=f"agent 'n{i}': same thing", source=f"/ws/{i}", subject=f"n{i}"
        )
        for i in range(3)
    ]
    groups = group_diagnostics(same)
    assert len(groups) == 1 and groups[0].count == 3 and groups[0].message == "same thing"


def test_the_list_commands_fold_the_same_warning_too(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = _project(tmp_path / "ws", home, files=5)
    for i in range(5):
        write(ws, f".claude/agents/agent-{i:03d}.md", f"---\ndescription: Agent {i}.\ncolor: red\n---\nbody\n")
    listed = bear(ws, home, "agents", "list")
    assert listed.returncode == 0, listed.stderr
    lines = [line for line in listed.stdout.splitlines() if "'color'" in line]
    assert len(lines) == 1 and "(5 files: " in lines[0] and "and 2 more)" in lines[0]
