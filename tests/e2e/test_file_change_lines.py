"""Each tool call's file changes in the terminal, through a real run: a Bash call that creates, edits and deletes
files in the sandbox gets a `files:` line naming each change under its tool line, before its result."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.cli import main
from bearagent.cli.file_change_lines import MAX_NAMED, describe
from bearagent.domain.run_events import FileChange, FileState
from bearagent.sandbox.probe import find_bwrap


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or find_bwrap(None) is None, reason="Bash runs in the sandbox: bubblewrap"
)
def test_a_bash_calls_file_changes_are_named_under_its_line(tmp_path: Path) -> None:
    bash = {"name": "Bash", "arguments": {"command": "rm gone.txt && echo new > made.txt && echo more >> kept.txt"}}
    script = json.dumps({"turns": [{"tool_calls": [bash]}, {"text": "all done"}]})
    root = scripted_workspace(tmp_path / "ws", script, agents={"main": agent_md("Main.", mode="primary")})
    write(root, "gone.txt", "bye\n")
    write(root, "kept.txt", "one\n")
    result = CliRunner().invoke(main, ["run", "-w", str(root), "change files"], env=isolated_env(tmp_path / "home"))
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "files:" in x)
    assert "created made.txt" in line and "deleted gone.txt" in line and "modified kept.txt" in line
    assert result.output.index("files:") < result.output.index("all done")


def test_a_long_list_is_cut_and_counted() -> None:
    state = FileState(kind="file", mode=0o644)
    changes = [FileChange(path=f"f{i}.txt", after=state) for i in range(MAX_NAMED + 3)]
    text = describe(changes, unrecorded=2)
    assert text.startswith("created f0.txt, created f1.txt") and text.endswith("and 5 more")
    assert describe([FileChange(path="x", before=state)]) == "deleted x"
