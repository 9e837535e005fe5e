"""`bearagent run --output-format text|json|stream-json`: Claude Code's headless shapes, read with the field names a
script written for `claude -p --output-format ...` reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.cli import main

MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}
SCRIPT = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - tool_calls: [{name: Read, arguments: {file_path: missing.md}}]
  - text: "All read."
"""


def invoke(args: list[str], home: Path) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home), prog_name="bearagent")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=MAIN)
    write(root, "notes.md", "hello notes\n")
    return root


def test_json_is_claude_codes_result_object(ws: Path, tmp_path: Path) -> None:
    result = invoke(["run", "-w", str(ws), "--output-format", "json", "read the notes"], tmp_path)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)  # the whole stdout is one object, as `claude -p --output-format json`
    assert data["type"] == "result" and data["subtype"] == "success" and data["is_error"] is False
    assert data["result"] == "All read."
    assert data["num_turns"] == 3
    assert isinstance(data["duration_ms"], int) and data["duration_ms"] >= 0
    assert isinstance(data["session_id"], str) and len(data["session_id"]) == 36
    assert isinstance(data["total_cost_usd"], float)
    assert set(data["usage"]) >= {"input_tokens", "output_tokens"}
    runs = invoke(["runs", "list", "-w", str(ws), "--json"], tmp_path)
    assert data["run_id"] in runs.output


def test_stream_json_is_claude_codes_message_stream(ws: Path, tmp_path: Path) -> None:
    result = invoke(["run", "-w", str(ws), "--output-format", "stream-json", "read the notes"], tmp_path)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines() if line.strip()]
    init, *messages, final = lines
    assert (init["type"], init["subtype"]) == ("system", "init")
    assert init["session_id"] == final["session_id"] and "Read" in init["tools"] and init["cwd"] == str(ws)
    assert final["type"] == "result" and final["subtype"] == "success" and final["result"] == "All read."
    assert all(m["session_id"] == init["session_id"] and m["parent_tool_use_id"] is None for m in messages)
    shapes = [(m["type"], m["message"]["content"][0]["type"]) for m in messages]
    assert shapes == [
        ("assistant", "text"),
        ("assistant", "tool_use"),
        ("user", "tool_result"),
        ("assistant", "tool_use"),
        ("user", "tool_result"),
        ("assistant", "text"),
    ]
    said, read, read_result, missing, missing_result, answer = (m["message"] for m in messages)
    assert said["role"] == "assistant" and said["content"][0]["text"] == "Reading."
    use = read["content"][0]
    assert use["name"] == "Read" and use["input"] == {"file_path": "notes.md"}
    block = read_result["content"][0]
    assert block["tool_use_id"] == use["id"] and "hello notes" in block["content"] and block["is_error"] is False
    assert missing_result["content"][0]["is_error"] is True
    assert missing_result["content"][0]["tool_use_id"] == missing["content"][0]["id"]
    assert answer["content"] == [{"type": "text", "text": "All read."}]


def test_text_prints_only_the_final_answer(ws: Path, tmp_path: Path) -> None:
    result = invoke(["run", "-w", str(ws), "--output-format", "text", "read the notes"], tmp_path)
    assert result.exit_code == 0, result.output
    assert result.stdout == "All read.\n"


def test_a_budget_stop_is_an_error_result(ws: Path, tmp_path: Path) -> None:
    args = ["run", "-w", str(ws), "--output-format", "json", "--max-model-iterations", "1", "read"]
    result = invoke(args, tmp_path)
    assert result.exit_code == 3, result.output
    data = json.loads(result.output)
    assert data["subtype"] == "error_max_turns" and data["is_error"] is True
    assert data["errors"] and "max_model_iterations" in " ".join(data["errors"]).replace(" ", "_").lower()


def test_output_format_excludes_bearagents_own_formats(ws: Path, tmp_path: Path) -> None:
    both = invoke(["run", "-w", str(ws), "--output-format", "json", "--json", "hi"], tmp_path)
    assert both.exit_code == 2 and "--output-format and --json exclude each other" in both.output
    bad = invoke(["run", "-w", str(ws), "--output-format", "yaml", "hi"], tmp_path)
    assert bad.exit_code == 2 and "'yaml' is not one of 'text', 'json', 'stream-json'" in bad.output


def test_stream_json_init_has_the_permission_mode_slash_commands_and_output_style(ws: Path, tmp_path: Path) -> None:
    write(ws, ".claude/commands/review.md", "---\ndescription: Review\n---\nReview $ARGUMENTS.\n")
    write(ws, ".claude/skills/tidy/SKILL.md", "---\nname: tidy\ndescription: Tidies.\n---\nTidy up.\n")
    write(ws, ".claude/settings.json", '{"outputStyle": "Explanatory"}')
    result = invoke(
        ["run", "-w", str(ws), "--permission-mode", "plan", "--output-format", "stream-json", "read the notes"],
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    init = json.loads(result.output.splitlines()[0])
    assert init["permissionMode"] == "plan"
    assert {"review", "tidy"} <= set(init["slash_commands"])
    assert init["output_style"] == "Explanatory"
