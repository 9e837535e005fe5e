"""`bearagent runs export RUN --format atif|markdown|jsonl` through the CLI on real runs of the scripted provider:
the ATIF document validates with Harbor's own model and validator, a subagent's run is embedded and referenced from
the call that started it, the Markdown shows the conversation with hostile content made inert, JSONL is the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.harbor_atif import uv_missing_reason, validate_atif
from tests.support.run_ws import SCOUT_AGENTS, scripted_workspace

from bearagent.cli import main

SCRIPT = """
turns:
  - text: "Let me ask the scout."
    tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "read the notes", description: look}}]
    usage: {input_tokens: 120, output_tokens: 12}
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
    usage: {input_tokens: 50, output_tokens: 5}
  - text: "scout: the notes say hello"
    usage: {input_tokens: 60, output_tokens: 6}
  - text: "All done: ```the notes``` say hello \\u001b[31mred"
    usage: {input_tokens: 200, output_tokens: 20}
"""
AGENTS = SCOUT_AGENTS


def invoke(args: list[str], home: Path) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home), prog_name="bearagent")


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path, str]:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    write(root, "notes.md", "hello notes\n```\nfence inside\n")
    home = tmp_path / "home"
    result = invoke(["run", "-w", str(root), "--json", "what do the notes say?"], home)
    assert result.exit_code == 0, result.output
    return root, home, str(json.loads(result.stdout)["run_id"])


def test_atif_export_validates_with_harbor_and_embeds_the_subagent(recorded: tuple[Path, Path, str]) -> None:
    reason = uv_missing_reason()
    if reason:
        pytest.skip(reason)
    root, home, run_id = recorded
    out = root.parent / "trajectory.json"
    result = invoke(["runs", "export", run_id, "-w", str(root), "--format", "atif", "-o", str(out)], home)
    assert result.exit_code == 0, result.output
    ok, report = validate_atif(out)
    assert ok, report
    doc = cast(dict[str, Any], json.loads(out.read_text(encoding="utf-8")))
    assert doc["schema_version"] == "ATIF-v1.7"
    assert doc["trajectory_id"] == run_id
    steps = doc["steps"]
    assert [s["source"] for s in steps] == ["user", "agent", "agent"]
    assert steps[0]["message"] == "what do the notes say?"
    task = steps[1]["tool_calls"][0]
    assert task["function_name"] == "Task"
    result_entry = steps[1]["observation"]["results"][0]
    assert result_entry["source_call_id"] == task["tool_call_id"]
    child_id = result_entry["subagent_trajectory_ref"][0]["trajectory_id"]
    (child,) = doc["subagent_trajectories"]
    assert child["trajectory_id"] == child_id
    child_steps = child["steps"]
    assert child_steps[0] == {**child_steps[0], "source": "user", "message": "read the notes"}
    read_call = child_steps[1]["tool_calls"][0]
    assert read_call["function_name"] == "Read"
    assert "hello notes" in child_steps[1]["observation"]["results"][0]["content"]
    metrics = doc["final_metrics"]
    assert metrics["total_prompt_tokens"] == 320
    assert metrics["total_completion_tokens"] == 32
    assert metrics["total_steps"] == 3
    assert steps[1]["metrics"] == {**steps[1]["metrics"], "prompt_tokens": 120, "completion_tokens": 12}


def test_markdown_export_shows_the_conversation_inert(recorded: tuple[Path, Path, str]) -> None:
    root, home, run_id = recorded
    result = invoke(["runs", "export", run_id, "-w", str(root), "--format", "markdown"], home)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith(f"# Run {run_id}")
    assert "## User\n\nwhat do the notes say?" in text
    assert "**Tool call** `Task`" in text
    assert "### Subagent run" in text and "**Tool call** `Read`" in text
    # The file's own ``` fence cannot close the block that shows it, and the terminal escape is shown, not sent.
    assert "````\n     1\thello notes\n     2\t```\n     3\tfence inside\n````" in text
    assert "\x1b" not in text and "\\x1b[31mred" in text


def test_jsonl_export_is_the_log_and_a_bad_reference_is_a_clear_error(recorded: tuple[Path, Path, str]) -> None:
    root, home, run_id = recorded
    result = invoke(["runs", "export", run_id, "-w", str(root), "--format", "jsonl"], home)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["sequence"] for line in lines] == list(range(1, len(lines) + 1))
    assert lines[0]["event_type"] == "RunCreated" and lines[-1]["event_type"] == "RunSucceeded"
    events = invoke(["events", run_id, "-w", str(root), "--json"], home)
    assert result.stdout == events.stdout

    missing = invoke(["runs", "export", "nosuchrun", "-w", str(root)], home)
    assert missing.exit_code != 0
    assert "nosuchrun" in missing.output and "bearagent runs list" in missing.output

    bad_dir = invoke(["runs", "export", run_id, "-w", str(root), "-o", str(root / "no" / "such" / "f.md")], home)
    assert bad_dir.exit_code != 0
    assert "does not exist" in bad_dir.output and "fix:" in bad_dir.output

    unknown = invoke(["runs", "export", run_id, "-w", str(root), "--format", "yaml"], home)
    assert unknown.exit_code != 0
    assert (
        "no export format named 'yaml' (formats: atif, markdown, jsonl" in unknown.output and "fix:" in unknown.output
    )
    clash = invoke(["runs", "export", run_id, "-w", str(root), "--format", "atif", "--otlp"], home)
    assert clash.exit_code != 0 and "--otlp and --format atif ask for two formats" in clash.output
