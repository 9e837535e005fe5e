"""`bearagent run`, `runs list`, `inspect`, `events` and `action run` through click's runner: output formats,
exit codes and error messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.foreground import as_foreground
from tests.support.run_ws import CONFIG, agent_md, scout_workspace, scripted_workspace

from bearagent.cli import main
from bearagent.domain.stream import FinalEvent, RunStartedEvent, RunSucceededEvent, parse_stream_event_json

MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}


def invoke(args: list[str], home: Path, *, input: str | None = None, **env: str) -> Result:
    runner = CliRunner()
    return runner.invoke(main, args, env=isolated_env(home, **env), input=input, prog_name="bearagent")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    script = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "All read."
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    write(root, "notes.md", "hello notes\n")
    return root


def test_run_streams_and_exits_zero(ws: Path, tmp_path: Path) -> None:
    result = invoke(["run", "-w", str(ws), "read the notes"], tmp_path)
    assert result.exit_code == 0, result.output
    assert "Reading." in result.output
    assert "Read(notes.md)" in result.output
    assert "All read." in result.output
    assert "succeeded · 2 model calls · 1 tool call" in result.output
    assert "\x1b[" not in result.output  # no colour off a terminal


def test_run_json_prints_the_final_record(ws: Path, tmp_path: Path) -> None:
    result = invoke(["run", "-w", str(ws), "--json", "read the notes"], tmp_path)
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert set(record) == {"run_id", "session_id", "agent", "status", "final", "usage", "error"}
    assert record["status"] == "succeeded"
    assert record["final"] == "All read."
    assert record["agent"] == "main"
    assert record["error"] is None
    assert set(record["usage"]) == {
        "model_iterations",
        "tool_calls",
        "input_tokens",
        "output_tokens",
        "cost_microusd",
        "wall_time_ms",
    }
    assert record["usage"]["model_iterations"] == 2


def test_run_stream_json_is_the_stream_protocol(ws: Path, tmp_path: Path) -> None:
    result = invoke(["run", "-w", str(ws), "--stream-json", "read the notes"], tmp_path)
    assert result.exit_code == 0, result.output
    events = [parse_stream_event_json(line) for line in result.output.splitlines() if line.strip()]
    assert isinstance(events[0], RunStartedEvent)
    assert isinstance(events[-1], RunSucceededEvent)
    assert events[-1].steps == 2
    kinds = [e.type for e in events]
    assert "tool_call" in kinds and "tool_result" in kinds and "token" in kinds
    final = [e for e in events if isinstance(e, FinalEvent)]
    assert final[0].content == "All read."


def test_prompt_from_stdin(ws: Path, tmp_path: Path) -> None:
    result = invoke(["run", "-w", str(ws), "--json", "-"], tmp_path, input="read the notes from stdin\n")
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.output)["run_id"]
    events = invoke(["events", run_id[:8], "-w", str(ws), "--json"], tmp_path)
    first = json.loads(events.output.splitlines()[0])
    assert first["payload"]["goal"] == "read the notes from stdin\n"


def test_failed_run_exits_one_with_what_and_how(tmp_path: Path) -> None:
    script = """
turns:
  - error: {category: authentication, message: "the API key was rejected"}
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    result = invoke(["run", "-w", str(root), "hi"], tmp_path)
    assert result.exit_code == 1
    assert "error: the API key was rejected" in result.output
    assert "fix: check the API key variable" in result.output


def test_budget_stop_exits_three(ws: Path, tmp_path: Path) -> None:
    result = invoke(["run", "-w", str(ws), "--max-tool-calls", "0", "--json", "read"], tmp_path)
    assert result.exit_code == 3, result.output
    record = json.loads(result.output)
    assert record["status"] == "failed"
    assert record["error"]["category"] == "budget"
    assert record["error"]["code"] == "budget.max_tool_calls"


def test_every_budget_flag_reaches_the_run(ws: Path, tmp_path: Path) -> None:
    flags = [
        "--max-model-iterations",
        "7",
        "--max-tool-calls",
        "6",
        "--max-tokens",
        "5000",
        "--max-cost-microusd",
        "4000",
        "--max-wall-time-ms",
        "300000",
    ]
    result = invoke(["run", "-w", str(ws), "--json", *flags, "read"], tmp_path)
    assert result.exit_code == 0, result.output
    inspected = invoke(["inspect", "last", "-w", str(ws), "--json"], tmp_path)
    limits = json.loads(inspected.output)["run"]["budget_limits"]
    assert limits == {
        "max_model_iterations": 7,
        "max_tool_calls": 6,
        "max_tokens": 5000,
        "max_cost_microusd": 4000,
        "max_wall_time_ms": 300000,
    }


def test_unknown_agent_lists_the_available_ones(ws: Path, tmp_path: Path) -> None:
    result = invoke(["run", "-w", str(ws), "-a", "nobody", "hi"], tmp_path)
    assert result.exit_code == 2
    assert "error: no agent named 'nobody'" in result.output
    assert "fix: available agents:" in result.output
    assert "main" in result.output


def test_missing_api_key_names_the_variable_and_the_entry(tmp_path: Path) -> None:
    config = """
default_agent: main
default_model: gpt
models:
  gpt: {provider: openai, api: chat, model: gpt-5-mini, api_key_env: BEAR_TEST_OPENAI_KEY}
"""
    root = scripted_workspace(tmp_path / "ws", "turns: []\n", agents=MAIN, config=config)
    result = invoke(["run", "-w", str(root), "hi"], tmp_path)
    assert result.exit_code == 2, result.output
    assert "BEAR_TEST_OPENAI_KEY" in result.output
    assert "gpt" in result.output
    assert "fix:" in result.output


def test_untrusted_workspace_with_hooks_refuses_and_says_how_to_trust(tmp_path: Path) -> None:
    config = (
        CONFIG
        + """
hooks:
  PreToolUse:
    - matcher: Read
      hooks: [{type: command, command: "true"}]
"""
    )
    root = scripted_workspace(tmp_path / "ws", "turns:\n  - text: hi\n", agents=MAIN, config=config)
    result = invoke(["run", "-w", str(root), "hi"], tmp_path)
    assert result.exit_code == 2, result.output
    assert "bearagent trust" in result.output
    trusted = invoke(["trust", "-w", str(root)], tmp_path)
    assert trusted.exit_code == 0, trusted.output
    again = invoke(["run", "-w", str(root), "hi"], tmp_path)
    assert again.exit_code == 0, again.output


def test_conflicting_flags_are_usage_errors(ws: Path, tmp_path: Path) -> None:
    both = invoke(["run", "-w", str(ws), "--json", "--stream-json", "hi"], tmp_path)
    assert both.exit_code == 2
    assert "--json and --stream-json exclude each other" in both.output
    sessions = invoke(["run", "-w", str(ws), "--continue", "--session", "x", "hi"], tmp_path)
    assert sessions.exit_code == 2
    bad_session = invoke(["run", "-w", str(ws), "--session", "not-a-uuid", "hi"], tmp_path)
    assert bad_session.exit_code == 2
    assert "is not a session id" in bad_session.output
    empty = invoke(["run", "-w", str(ws), "   "], tmp_path)
    assert empty.exit_code == 2
    assert "the prompt is empty" in empty.output


def test_continue_and_session_reuse_the_conversation(tmp_path: Path) -> None:
    script = """
turns:
  - text: "one"
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    first = json.loads(invoke(["run", "-w", str(root), "--json", "first"], tmp_path).output)
    # a new process replays the script from its start, so the answer is "one" again, in the same session
    second = json.loads(invoke(["run", "-w", str(root), "--json", "--continue", "second"], tmp_path).output)
    assert second["session_id"] == first["session_id"]
    third = json.loads(
        invoke(["run", "-w", str(root), "--json", "--session", first["session_id"], "x"], tmp_path).output
    )
    assert third["session_id"] == first["session_id"]
    listed = json.loads(invoke(["runs", "list", "-w", str(root), "--json"], tmp_path).output)
    assert [r["session_id"] for r in listed] == [first["session_id"]] * 3


def test_runs_list_inspect_and_events(ws: Path, tmp_path: Path) -> None:
    empty = invoke(["runs", "list", "-w", str(ws)], tmp_path)
    assert "error: no runs have been stored" in empty.output
    assert empty.exit_code == 2
    run = json.loads(invoke(["run", "-w", str(ws), "--json", "read the notes"], tmp_path).output)
    listed = invoke(["runs", "list", "-w", str(ws)], tmp_path)
    assert run["run_id"][:8] in listed.output
    assert "succeeded" in listed.output
    inspected = invoke(["inspect", "last", "-w", str(ws)], tmp_path)
    assert inspected.exit_code == 0, inspected.output
    for needle in ("status    succeeded", "agent     main", "model iterations", "tool calls", "Read", "activities"):
        assert needle in inspected.output
    steps_table = inspected.output[inspected.output.index("steps") :]
    assert "model_call" in steps_table and "tool_call" in steps_table and "Read" in steps_table
    steps = json.loads(invoke(["inspect", "last", "-w", str(ws), "--json"], tmp_path).output)["steps"]
    assert [(s["seq"], s["step_type"]) for s in steps] == [(1, "model_call"), (2, "tool_call"), (3, "model_call")]
    assert steps[1]["name"] == "Read" and steps[1]["status"] == "succeeded" and steps[1]["agent_name"] == "main"
    lines = invoke(["events", run["run_id"], "-w", str(ws), "--json"], tmp_path).output.splitlines()
    envelopes = [json.loads(line) for line in lines]
    assert [e["sequence"] for e in envelopes] == list(range(1, len(envelopes) + 1))
    assert set(envelopes[0]) == {
        "event_id",
        "run_id",
        "sequence",
        "event_type",
        "schema_version",
        "occurred_at",
        "causation_id",
        "correlation_id",
        "payload",
    }
    followed = invoke(["events", "last", "-w", str(ws), "--follow"], tmp_path)
    assert followed.exit_code == 0
    assert "RunSucceeded.v2" in followed.output
    unknown = invoke(["inspect", "ffffffff", "-w", str(ws)], tmp_path)
    assert unknown.exit_code == 2
    assert "no run id starts with 'ffffffff'" in unknown.output


def test_action_run_with_key_value_inputs(tmp_path: Path) -> None:
    script = """
turns:
  - text: "introduced"
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    write(
        root,
        ".bearagent/actions/intro.md",
        "---\ndescription: Introduce a doc\nagent: main\ninputs:\n  type: object\n  properties:\n"
        "    doc: {type: string}\n    words: {type: integer}\n  required: [doc]\n---\nIntroduce $doc in $words words.\n",
    )
    result = invoke(["action", "run", "intro", "doc=docs/a.md", "words=50", "-w", str(root), "--json"], tmp_path)
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    events = invoke(["events", record["run_id"], "-w", str(root), "--json"], tmp_path).output.splitlines()
    created = json.loads(events[0])["payload"]
    assert created["goal"] == "Introduce docs/a.md in 50 words."
    assert created["trigger_type"] == "manual_action"
    bad = invoke(["action", "run", "intro", "oops", "-w", str(root)], tmp_path)
    assert bad.exit_code == 2
    assert "is not key=value" in bad.output
    missing = invoke(["action", "run", "nope", "-w", str(root)], tmp_path)
    assert missing.exit_code == 2
    assert "no action named 'nope'" in missing.output


def test_debug_adds_a_traceback(ws: Path, tmp_path: Path) -> None:
    plain = invoke(["run", "-w", str(ws), "-a", "nobody", "hi"], tmp_path)
    assert "Traceback" not in plain.output
    debug = invoke(["run", "-w", str(ws), "-a", "nobody", "--debug", "hi"], tmp_path)
    assert "Traceback" in debug.output


def test_model_flag_picks_another_entry(tmp_path: Path) -> None:
    config = """
default_agent: main
default_model: first
models:
  first: {provider: scripted, script: first.yaml}
  second: {provider: scripted, script: second.yaml}
"""
    root = scripted_workspace(tmp_path / "ws", "turns: []\n", agents=MAIN, config=config)
    write(root, ".bearagent/first.yaml", "turns:\n  - text: from the first model\n")
    write(root, ".bearagent/second.yaml", "turns:\n  - text: from the second model\n")
    default = json.loads(invoke(["run", "-w", str(root), "--json", "hi"], tmp_path).output)
    assert default["final"] == "from the first model"
    chosen = json.loads(invoke(["run", "-w", str(root), "--json", "-m", "workspace/second", "hi"], tmp_path).output)
    assert chosen["final"] == "from the second model"
    unknown = invoke(["run", "-w", str(root), "-m", "workspace/third", "hi"], tmp_path)
    assert unknown.exit_code == 2
    assert "third" in unknown.output


def test_runs_list_filters_by_session_status_and_limit(tmp_path: Path) -> None:
    script = """
turns:
  - text: "ok"
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    first = json.loads(invoke(["run", "-w", str(root), "--json", "one"], tmp_path).output)
    invoke(["run", "-w", str(root), "--json", "two"], tmp_path)
    invoke(["run", "-w", str(root), "--json", "--max-model-iterations", "0", "three"], tmp_path)

    def listed(*args: str) -> list[dict[str, object]]:
        result = invoke(["runs", "list", "-w", str(root), "--json", *args], tmp_path)
        assert result.exit_code == 0, result.output
        value = json.loads(result.output)
        assert isinstance(value, list)
        return value  # pyright: ignore[reportUnknownVariableType]

    assert len(listed()) == 3
    assert len(listed("--limit", "1")) == 1
    assert [r["status"] for r in listed("--status", "failed")] == ["failed"]
    assert [r["session_id"] for r in listed("--session", first["session_id"])] == [first["session_id"]]
    bad = invoke(["runs", "list", "-w", str(root), "--session", "nope"], tmp_path)
    assert bad.exit_code == 2
    assert "is not a session id" in bad.output


def test_ctrl_c_cancels_the_run_and_exits_one(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from bearagent.store.sqlite import SqliteEventStore

    script = """
turns:
  - text: "never finished"
    delay_ms: 30000
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    env = {**os.environ, **isolated_env(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bearagent", "run", "-w", str(root), "wait for it"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=as_foreground,
        text=True,
    )
    db = root / ".bearagent" / "state.db"
    deadline = time.monotonic() + 30
    running = False
    while time.monotonic() < deadline and not running:
        time.sleep(0.05)
        if db.exists():
            store = SqliteEventStore(db)
            try:  # the model call is in flight (not only the run started): the cancel then closes it
                runs = store.list_runs(status="running", limit=1)
                running = bool(runs) and any(a.status == "running" for a in store.list_activities(runs[0].run_id))
            finally:
                store.close()
    assert running, "the run's model call never started"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, (out, err)
    assert "cancelled" in err
    store = SqliteEventStore(db)
    run = store.list_runs(limit=1)[0]
    assert run.status == "cancelled"
    assert [e.event_type for e in store.read_events(run.run_id)][-2:] == ["ModelCallFailed", "RunCancelled"]


def test_a_subagents_tool_calls_are_nested_under_its_task(tmp_path: Path) -> None:
    root = scout_workspace(tmp_path / "ws")
    result = invoke(["run", "-w", str(root), "go"], tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    task = next(i for i, line in enumerate(lines) if line.startswith("● Task("))
    nested = next(i for i, line in enumerate(lines) if "● Read(notes.md)" in line)
    assert task < nested and lines[nested].startswith("    ● Read(notes.md)")  # under the Task, one level in
    assert lines[nested + 1].startswith("      └ ")
    assert "scout: the notes say hello" not in "\n".join(lines[task:nested])  # the child's text is its result
    assert "All done." in result.output
