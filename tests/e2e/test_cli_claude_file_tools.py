"""MultiEdit, LS, NotebookRead and NotebookEdit through a real `bearagent run`: a scripted model calls them by
Claude Code's names and schemas; the files change on disk, the results reach the model, a permission rule written
for Claude Code and the workspace's control files stop the calls they should."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.cli import main

MAIN = {"main": agent_md("Main agent.", mode="primary")}
NOTEBOOK: dict[str, object] = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {},
    "cells": [
        {"id": "setup", "cell_type": "code", "metadata": {}, "execution_count": 1, "source": "x = 1", "outputs": []}
    ],
}


def invoke(args: list[str], home: Path) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home), prog_name="bearagent")


def _call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_the_claude_code_file_tools_run_through_bearagent_run(tmp_path: Path) -> None:
    turns = [
        _call(
            "MultiEdit",
            file_path="app.py",
            edits=[
                {"old_string": "DEBUG = True", "new_string": "DEBUG = False"},
                {"old_string": "port = 1", "new_string": "port = 8080", "replace_all": True},
            ],
        ),
        _call("LS", path=".", ignore=["*.log"]),
        _call("NotebookEdit", notebook_path="nb/a.ipynb", cell_id="setup", new_source="x = 2"),
        _call(
            "NotebookEdit",
            notebook_path="nb/a.ipynb",
            cell_id="setup",
            new_source="# Notes",
            cell_type="markdown",
            edit_mode="insert",
        ),
        _call("NotebookRead", notebook_path="nb/a.ipynb"),
        _call("MultiEdit", file_path="locked.py", edits=[{"old_string": "a", "new_string": "b"}]),
        _call("MultiEdit", file_path=".claude/settings.json", edits=[{"old_string": "{}", "new_string": "[]"}]),
        {"text": "done"},
    ]
    config = CONFIG + 'permissions: {deny: ["MultiEdit(locked.py)"]}\n'
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": turns}), agents=MAIN, config=config)
    write(root, "app.py", "DEBUG = True\nport = 1\nother_port = 1\n")
    write(root, "debug.log", "noise\n")
    write(root, "locked.py", "a\n")
    write(root, ".claude/settings.json", "{}")
    write(root, "nb/a.ipynb", json.dumps(NOTEBOOK))

    result = invoke(["run", "-w", str(root), "--json", "tidy up"], tmp_path)
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["status"] == "succeeded" and record["final"] == "done"

    assert (root / "app.py").read_text() == "DEBUG = False\nport = 8080\nother_port = 8080\n"
    cells = json.loads((root / "nb/a.ipynb").read_text())["cells"]
    assert [(c["cell_type"], "".join(c["source"])) for c in cells] == [("code", "x = 2"), ("markdown", "# Notes")]
    assert (root / "locked.py").read_text() == "a\n"
    assert (root / ".claude/settings.json").read_text() == "{}"

    events = invoke(["events", record["run_id"][:8], "-w", str(root), "--json"], tmp_path)
    assert events.exit_code == 0, events.output
    outcomes = [
        (e["event_type"], e["payload"]["result"])
        for e in map(json.loads, events.output.splitlines())
        if e["event_type"] in ("ToolCallCompleted", "ToolCallFailed")
    ]
    assert [(kind, r["tool_name"]) for kind, r in outcomes] == [
        ("ToolCallCompleted", "MultiEdit"),
        ("ToolCallCompleted", "LS"),
        ("ToolCallCompleted", "NotebookEdit"),
        ("ToolCallCompleted", "NotebookEdit"),
        ("ToolCallCompleted", "NotebookRead"),
        ("ToolCallFailed", "MultiEdit"),
        ("ToolCallFailed", "MultiEdit"),
    ]
    listing = outcomes[1][1]["content"]
    assert "app.py" in listing and "nb/" in listing and "debug.log" not in listing
    assert '<cell id="setup" index="0" type="code">\nx = 2\n</cell>' in outcomes[4][1]["content"]
    assert "MultiEdit(locked.py)" in outcomes[5][1]["content"]
    assert ".claude/settings.json" in outcomes[6][1]["content"] and "control file" in outcomes[6][1]["content"]


def test_the_terminal_names_each_new_tools_argument() -> None:
    from bearagent.cli.render import preview_arguments
    from bearagent.domain._base import frozen_json

    shown: dict[str, dict[str, object]] = {
        "MultiEdit": {"file_path": "app.py", "edits": []},
        "NotebookEdit": {"notebook_path": "nb/a.ipynb", "new_source": "x"},
        "LS": {"path": "src"},
        "WebSearch": {"query": "bear facts"},
        "BashOutput": {"bash_id": "bash_1"},
        "KillShell": {"shell_id": "bash_2"},
    }
    assert {name: preview_arguments(frozen_json(args)) for name, args in shown.items()} == {
        "MultiEdit": "app.py",
        "NotebookEdit": "nb/a.ipynb",
        "LS": "src",
        "WebSearch": "bear facts",
        "BashOutput": "bash_1",
        "KillShell": "bash_2",
    }
