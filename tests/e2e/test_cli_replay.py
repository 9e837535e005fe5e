"""`bearagent replay RUN [--dry]` and `bearagent diff RUN_A RUN_B` through the CLI, on real workspaces with the
scripted provider: runs are made with `bearagent run`, then re-driven from their logs (no model called, read-only
tools re-executed, side-effecting ones not), checked, and compared."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.events import SEED_RUN_ID, seed_001_steps
from tests.support.run_ws import CONFIG, agent_md, scout_workspace, scripted_workspace

from bearagent.cli import main
from bearagent.store.sqlite import SqliteEventStore

MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Grep, Write, Bash]")}
READ_AND_GREP = """
turns:
  - text: "Reading."
    tool_calls:
      - {name: Read, arguments: {file_path: notes.md}}
      - {name: Grep, arguments: {pattern: hello, path: notes.md}}
    usage: {input_tokens: 100, output_tokens: 10}
  - text: "All read."
    usage: {input_tokens: 200, output_tokens: 5}
"""


def invoke(args: list[str], home: Path) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home), prog_name="bearagent")


def run_once(root: Path, home: Path, prompt: str = "read the notes") -> str:
    result = invoke(["run", "-w", str(root), "--json", prompt], home)
    assert result.exit_code == 0, result.output
    return str(json.loads(result.output)["run_id"])


def replay_json(root: Path, home: Path, run_id: str, *extra: str) -> tuple[int, dict[str, Any]]:
    result = invoke(["replay", run_id, "-w", str(root), "--json", *extra], home)
    assert result.exit_code in (0, 1), result.output
    text = result.stdout
    return result.exit_code, cast(dict[str, Any], json.loads(text))


def verdicts(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(s["step"], s["kind"], s["verdict"]) for s in report["steps"]]


def runs_in(root: Path) -> int:
    with SqliteEventStore(root / ".bearagent" / "state.db") as store:
        return len(store.list_runs(limit=1_000))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = scripted_workspace(tmp_path / "ws", READ_AND_GREP, agents=MAIN)
    write(root, "notes.md", "hello notes\nsecond line\n")
    return root


def test_a_run_with_read_and_grep_replays_and_every_step_matches(ws: Path, tmp_path: Path) -> None:
    run_id = run_once(ws, tmp_path)
    before = runs_in(ws)
    result = invoke(["replay", run_id[:8], "-w", str(ws)], tmp_path)
    assert result.exit_code == 0, result.output
    assert f"replay of run {run_id} · agent main · succeeded" in result.output
    assert "Read(notes.md)  match    re-executed (read-only)" in result.output
    assert "Grep(hello)     match    re-executed (read-only)" in result.output
    assert "5 steps: 5 match, 0 mismatch, 0 reused, 0 skipped · replayed run succeeded" in result.output
    assert runs_in(ws) == before  # the replay went to a scratch store, not the workspace's

    code, report = replay_json(ws, tmp_path, run_id)
    assert code == 0 and report["ok"] is True and report["mismatches"] == 0
    assert verdicts(report) == [
        ("1", "model", "match"),
        ("1.1", "tool", "match"),
        ("1.2", "tool", "match"),
        ("2", "model", "match"),
        ("end", "end", "match"),
    ]


def test_a_file_changed_since_the_run_is_a_mismatch_with_a_diff(ws: Path, tmp_path: Path) -> None:
    run_id = run_once(ws, tmp_path)
    write(ws, "notes.md", "goodbye notes\nsecond line\n")
    result = invoke(["replay", run_id, "-w", str(ws)], tmp_path)
    assert result.exit_code == 1, result.output
    assert "Read(notes.md)  mismatch  re-executed (read-only)" in result.output
    assert "mismatches:" in result.output
    assert "      -     1\thello notes" in result.output
    assert "      +     1\tgoodbye notes" in result.output
    assert f"the replay of run {run_id} does not match its log (2 mismatch(es))" in result.stderr

    code, report = replay_json(ws, tmp_path, run_id)
    assert code == 1 and report["ok"] is False
    read = report["steps"][1]
    assert read["verdict"] == "mismatch" and read["changes"][0]["field"] == "content"
    assert report["steps"][0]["verdict"] == "match"  # the model turn is the recorded one


def test_write_and_bash_are_not_executed_again_on_replay(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls:
      - {name: Write, arguments: {file_path: out/written.txt, content: "from the model\\n"}}
      - {name: Bash, arguments: {command: "echo ran >> out/bash.log"}}
  - text: "Done."
"""
    config = CONFIG + 'permissions: {allow: ["Bash"]}\nsandbox: off\n'
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    assert invoke(["trust", "-y", "-w", str(root)], tmp_path).exit_code == 0
    run_id = run_once(root, tmp_path, "write and run")
    assert (root / "out" / "bash.log").read_text() == "ran\n"
    (root / "out" / "written.txt").unlink()
    (root / "out" / "bash.log").write_text("untouched\n")

    code, report = replay_json(root, tmp_path, run_id)
    assert code == 0, report
    assert verdicts(report) == [
        ("1", "model", "match"),
        ("1.1", "tool", "reused"),
        ("1.2", "tool", "reused"),
        ("2", "model", "match"),
        ("end", "end", "match"),
    ]
    assert report["steps"][1]["note"] == "write tool: not executed, recorded result reused"
    assert report["steps"][2]["note"] == "execute tool: not executed, recorded result reused"
    assert not (root / "out" / "written.txt").exists()  # not written again
    assert (root / "out" / "bash.log").read_text() == "untouched\n"  # the command did not run again


def test_dry_checks_a_valid_log_and_lists_its_steps(ws: Path, tmp_path: Path) -> None:
    run_id = run_once(ws, tmp_path)
    result = invoke(["replay", run_id, "-w", str(ws), "--dry"], tmp_path)
    assert result.exit_code == 0, result.output
    assert f"run {run_id} · agent main · succeeded · 15 events: the log is a valid run" in result.output
    assert "Read(notes.md) → ok:" in result.output
    assert "end   end           succeeded: All read." in result.output
    write(ws, "notes.md", "changed\n")  # --dry executes nothing: a changed file is no mismatch
    dry = invoke(["replay", run_id, "-w", str(ws), "--dry", "--json"], tmp_path)
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.stdout)
    assert report["valid"] is True and report["status"] == "succeeded" and report["events"] == 15
    assert [s["step"] for s in report["steps"]] == ["1", "1.1", "1.2", "2", "end"]


def test_dry_on_a_log_with_an_event_removed_names_the_run_and_the_sequence(ws: Path, tmp_path: Path) -> None:
    run_id = run_once(ws, tmp_path)
    with sqlite3.connect(ws / ".bearagent" / "state.db") as db:
        db.execute("DELETE FROM events WHERE run_id = ? AND sequence = 7", (run_id,))
    result = invoke(["replay", run_id, "-w", str(ws), "--dry"], tmp_path)
    assert result.exit_code == 1, result.output
    assert "the log is NOT a valid run" in result.stdout
    assert (
        f"error: the log of run {run_id} is not a valid run: event 7 is missing: the log goes from 6 to 8"
        in result.stderr
    )
    assert "fix: the log was changed outside BearAgent" in result.stderr
    replayed = invoke(["replay", run_id, "-w", str(ws)], tmp_path)  # a replay refuses it the same way
    assert replayed.exit_code == 1
    assert "not replayed: the log is not a valid run" in replayed.stdout
    assert f"run {run_id} is not a valid run: event 7 is missing" in replayed.stderr


def test_an_unknown_run_is_a_usage_error(ws: Path, tmp_path: Path) -> None:
    run_once(ws, tmp_path)
    result = invoke(["replay", "abcdef12", "-w", str(ws)], tmp_path)
    assert result.exit_code == 2
    assert "error: " in result.stderr and "fix: " in result.stderr
    assert invoke(["diff", "abcdef12", "last", "-w", str(ws)], tmp_path).exit_code == 2


def test_a_run_with_an_agent_switch_replays_with_the_planned_agent(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: SwitchAgent, arguments: {agent: builder, reason: "time to build"}}]
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "builder here"
"""
    agents = {
        "main": agent_md("Plans.", mode="primary", tools="[Read]", switch="[builder]"),
        "builder": agent_md("Builds.", body="You are the builder.", mode="primary", tools="[Read, Write]"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    write(root, "notes.md", "hello\n")
    run_id = run_once(root, tmp_path, "plan then build")
    code, report = replay_json(root, tmp_path, run_id)
    assert code == 0, report
    assert [(s["step"], s["name"], s["verdict"]) for s in report["steps"]] == [
        ("1", "main", "match"),
        ("1.1", "SwitchAgent", "match"),
        ("2", "builder", "match"),  # re-planned for the builder, as the recorded run was
        ("2.1", "Read", "match"),
        ("3", "builder", "match"),
        ("end", "succeeded", "match"),
    ]


def test_a_run_with_a_subagent_replays_the_parent_and_then_the_child_from_its_log(tmp_path: Path) -> None:
    root = scout_workspace(tmp_path / "ws")
    run_id = run_once(root, tmp_path, "go")
    code, report = replay_json(root, tmp_path, run_id)
    assert code == 0, report
    assert verdicts(report) == [
        ("1", "model", "match"),
        ("1.1", "tool", "reused"),  # the Task's recorded result; the child ran once, when recorded
        ("2", "model", "match"),
        ("end", "end", "match"),
    ]
    (child,) = report["children"]
    assert child["agent"] == "scout" and child["ok"] is True
    assert verdicts(child) == [
        ("1", "model", "match"),
        ("1.1", "tool", "match"),
        ("2", "model", "match"),
        ("end", "end", "match"),
    ]

    alone = invoke(["replay", child["run_id"], "-w", str(root)], tmp_path)  # a child replays on its own too
    assert alone.exit_code == 0, alone.output
    assert f"replay of run {child['run_id']} · agent scout · succeeded" in alone.output

    write(root, "notes.md", "other notes\n")  # the child's Read now differs: the whole replay does
    code, report = replay_json(root, tmp_path, run_id)
    assert code == 1
    assert report["mismatches"] == 0 and report["children"][0]["mismatches"] == 1
    text = invoke(["replay", run_id, "-w", str(root)], tmp_path)
    assert text.exit_code == 1
    assert f"child run {report['children'][0]['run_id']} · agent scout · succeeded" in text.stdout
    dry = json.loads(invoke(["replay", run_id, "-w", str(root), "--dry", "--json"], tmp_path).stdout)
    assert dry["children"][0]["valid"] is True


def test_a_retried_model_attempt_is_reported_not_re_driven(tmp_path: Path) -> None:
    script = """
turns:
  - error: {category: rate_limit, message: "slow down", retryable: true, retry_after_s: 0.01}
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "done"
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    write(root, "notes.md", "hello\n")
    run_id = run_once(root, tmp_path)
    code, report = replay_json(root, tmp_path, run_id)
    assert code == 0, report
    assert verdicts(report)[:2] == [("1", "attempt", "skipped"), ("1", "model", "match")]
    assert report["steps"][0]["note"] == "failed (rate_limit.scripted) and was tried again: not re-driven"


def test_a_failed_run_replays_to_the_same_failure(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - error: {category: authentication, message: "the API key was rejected"}
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    write(root, "notes.md", "hello\n")
    assert invoke(["run", "-w", str(root), "go"], tmp_path).exit_code == 1
    code, report = replay_json(root, tmp_path, "last")
    assert code == 0, report
    assert report["recorded_status"] == "failed" and report["replayed_status"] == "failed"
    assert verdicts(report)[-2:] == [("2", "model", "match"), ("end", "end", "match")]


def test_the_seed_001_worked_example_replays_as_a_v2_run(tmp_path: Path) -> None:
    script = """
turns:
  - text: "Reading the file."
    tool_calls: [{name: Read, arguments: {file_path: docs/project.md}}]
    usage: {input_tokens: 420, output_tokens: 28}
  - tool_calls: [{name: Write, arguments: {file_path: outputs/intro.md, content: "BearAgent summary\\n"}}]
    usage: {input_tokens: 620, output_tokens: 40}
  - text: "Wrote outputs/intro.md."
    usage: {input_tokens: 180, output_tokens: 12}
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    write(root, "docs/project.md", "# Project\nBearAgent is local-first.\nEvents record facts.\n")
    result = invoke(
        [
            "run",
            "-w",
            str(root),
            "--json",
            "--max-model-iterations=3",
            "--max-tool-calls=2",
            "--max-tokens=5000",
            "Read docs/project.md and write a summary to outputs/intro.md",
        ],
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.output)["run_id"]
    (root / "outputs" / "intro.md").write_text("edited by hand\n")
    code, report = replay_json(root, tmp_path, run_id)
    assert code == 0, report
    assert verdicts(report) == [
        ("1", "model", "match"),
        ("1.1", "tool", "match"),
        ("2", "model", "match"),
        ("2.1", "tool", "reused"),
        ("3", "model", "match"),
        ("end", "end", "match"),
    ]
    assert (root / "outputs" / "intro.md").read_text() == "edited by hand\n"


def test_a_v1_log_the_seed_001_worked_example_still_replays(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", READ_AND_GREP, agents=MAIN)  # main has today's Read and Write
    (root / ".bearagent").mkdir(exist_ok=True)
    with SqliteEventStore(root / ".bearagent" / "state.db") as store:
        store.append_many([step.event for step in seed_001_steps()])  # RunCreated v1 ... RunSucceeded v1
    run_id = str(SEED_RUN_ID)
    dry = invoke(["replay", run_id, "-w", str(root), "--dry"], tmp_path)
    assert dry.exit_code == 0, dry.output
    assert "(agent not recorded) · succeeded · 18 events: the log is a valid run" in dry.stdout
    assert "(text not recorded)" in dry.stdout

    code, report = replay_json(root, tmp_path, run_id)
    assert code == 0, report
    assert verdicts(report) == [
        ("1", "model", "match"),
        ("1.1", "tool", "reused"),
        ("2", "model", "match"),
        ("2.1", "tool", "reused"),
        ("3", "model", "match"),
        ("end", "end", "match"),
    ]
    assert report["steps"][1]["note"] == "v1 log: the arguments were not recorded, recorded outcome reused"
    assert any(note.startswith("recorded with v1 events") for note in report["notes"])


def test_diff_of_two_runs_with_one_different_tool_result(ws: Path, tmp_path: Path) -> None:
    first = run_once(ws, tmp_path)
    write(ws, "notes.md", "hello there\nsecond line\n")
    second = run_once(ws, tmp_path)
    result = invoke(["diff", first, second, "-w", str(ws)], tmp_path)
    assert result.exit_code == 1, result.output
    assert f"A {first} · agent main · succeeded" in result.output
    assert "1.1   tool   changed  Read(notes.md) → ok:" in result.output
    assert "      -     1\thello notes" in result.output and "      +     1\thello there" in result.output
    assert "1 of 5 steps differ" in result.output  # Grep lists the file that matched: the same in both

    report = json.loads(invoke(["diff", first, second, "-w", str(ws), "--json"], tmp_path).stdout)
    assert report["same"] is False
    changed = [(r["step"], [c["field"] for c in r["changes"]]) for r in report["rows"] if r["status"] != "same"]
    assert changed == [("1.1", ["content"])]
    read = report["rows"][1]
    assert read["a"]["content"] == "     1\thello notes\n     2\tsecond line"
    assert read["b"]["content"] == "     1\thello there\n     2\tsecond line"
    assert read["a"]["tool_call_id"] != read["b"]["tool_call_id"]  # ids differ between runs: not compared

    same = invoke(["diff", first, first, "-w", str(ws)], tmp_path)
    assert same.exit_code == 0
    assert "the runs are the same step by step (5 steps)" in same.output


def test_replay_and_diff_show_terminal_escapes_instead_of_running_them(tmp_path: Path) -> None:
    script = """
turns:
  - text: "\\e]0;pwned\\a"
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "done \\e[2J"
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    write(root, "notes.md", "clean\n")
    first = run_once(root, tmp_path)
    (root / "notes.md").write_text("\x1b[31mred\x1b[0m\n")
    second = run_once(root, tmp_path)
    for args in (["replay", first], ["diff", first, second], ["replay", first, "--dry"]):
        result = invoke([*args, "-w", str(root)], tmp_path)
        assert "\x1b" not in result.output, args
        assert "\x07" not in result.output, args
    replayed = invoke(["replay", first, "-w", str(root)], tmp_path)
    assert "␛[31mred␛[0m" in replayed.output


def test_hooks_are_not_fired_on_replay_and_what_they_decided_is_taken_from_the_log(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: secret.md}}]
  - text: "first answer"
  - text: "tests pass"
"""
    config = (
        CONFIG
        + """
hooks:
  UserPromptSubmit:
    - hooks: [{type: command, command: .bearagent/hooks/prompt.sh}]
  PreToolUse:
    - matcher: Read
      hooks: [{type: command, command: .bearagent/hooks/guard.sh}]
  Stop:
    - hooks: [{type: command, command: .bearagent/hooks/stop.sh}]
"""
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    write(root, "secret.md", "the secret\n")
    hook = "#!/bin/sh\ncat > /dev/null\necho {name} >> hooks.log\n"
    write(
        root,
        ".bearagent/hooks/prompt.sh",
        hook.format(name="prompt")
        + """echo '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "Replay day."}}'\n""",
        executable=True,
    )
    write(
        root,
        ".bearagent/hooks/guard.sh",
        hook.format(name="guard") + "echo 'no secrets' >&2\nexit 2\n",
        executable=True,
    )
    write(
        root,
        ".bearagent/hooks/stop.sh",
        hook.format(name="stop")
        + "[ -f stopped.once ] && exit 0\ntouch stopped.once\necho 'run the tests' >&2\nexit 2\n",
        executable=True,
    )
    assert invoke(["trust", "-y", "-w", str(root)], tmp_path).exit_code == 0
    run_id = run_once(root, tmp_path, "go")
    fired = (root / "hooks.log").read_text()
    assert fired.split() == ["prompt", "guard", "stop", "stop"]

    code, report = replay_json(root, tmp_path, run_id)
    assert code == 0, report
    assert verdicts(report) == [
        ("1", "model", "match"),
        ("1.1", "tool", "reused"),
        ("2", "model", "match"),  # a Stop hook kept the agent going: the replay goes on the same way
        ("3", "model", "match"),
        ("end", "end", "match"),
    ]
    assert report["steps"][1]["note"].startswith("a hook decided this call")
    assert any("hooks are not fired on replay" in note for note in report["notes"])
    assert (root / "hooks.log").read_text() == fired  # no hook ran


def test_a_tool_the_agent_no_longer_has_is_a_mismatch(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Grep, arguments: {pattern: hello}}]
  - text: "done"
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    write(root, "notes.md", "hello\n")
    run_id = run_once(root, tmp_path)
    write(root, ".bearagent/agents/main.md", agent_md("Main agent.", mode="primary", tools="[Read]"))
    code, report = replay_json(root, tmp_path, run_id)
    assert code == 1
    grep = report["steps"][1]
    assert (grep["verdict"], grep["note"]) == ("mismatch", "refused by the loop before any tool ran")
    assert [c["field"] for c in grep["changes"]] == ["is_error", "content"]
    assert "there is no tool named 'Grep'" in grep["changes"][1]["b"]


def test_a_child_run_without_events_is_a_note_not_a_failed_replay(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "look", description: look}}]
  - text: "scout done"
  - text: "All done."
"""
    agents = {
        "main": agent_md("Main agent.", mode="primary", tools="[Read, Task]", subagents="[scout]"),
        "scout": agent_md("Finds things.", mode="subagent", tools="[Read]"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    run_id = run_once(root, tmp_path, "go")
    with sqlite3.connect(root / ".bearagent" / "state.db") as db:  # as if cancelled before its first commit
        db.execute(
            "DELETE FROM events WHERE run_id IN (SELECT run_id FROM run_projections WHERE parent_run_id = ?)", (run_id,)
        )
    code, report = replay_json(root, tmp_path, run_id)
    assert code == 0, report
    assert report["children"] == []
    assert any("was started but has no events" in note for note in report["notes"])
    dry = invoke(["replay", run_id, "-w", str(root), "--dry"], tmp_path)
    assert dry.exit_code == 0 and "note: child run" in dry.output


def test_a_run_killed_during_bash_and_resumed_replays_without_running_bash_again(tmp_path: Path) -> None:
    script = """
turns:
  - text: "Long step."
    tool_calls: [{name: Bash, arguments: {command: "echo once >> effects.log; sleep 30"}}]
  - tool_calls: [{name: Read, arguments: {file_path: effects.log}}]
  - text: "Checked."
"""
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Bash]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    env = {**os.environ, **isolated_env(tmp_path), "NO_COLOR": "1"}
    cli = [sys.executable, "-m", "bearagent"]
    proc = subprocess.Popen(
        [*cli, "run", "-w", str(root), "--permission-mode", "acceptEdits", "go"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not (root / "effects.log").exists():
        assert time.monotonic() < deadline, "the Bash call never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # a real process, killed in the middle of its Bash call
    proc.wait(timeout=30)
    listed = subprocess.run([*cli, "runs", "list", "-w", str(root), "--json"], env=env, capture_output=True, text=True)
    run_id = str(json.loads(listed.stdout)[0]["run_id"])
    resume = subprocess.run([*cli, "runs", "resume", run_id, "-w", str(root)], env=env, capture_output=True, text=True)
    assert resume.returncode == 0, resume.stdout + resume.stderr

    code, report = replay_json(root, tmp_path, run_id)
    assert code == 0, report
    assert report["recorded_status"] == "succeeded"
    assert verdicts(report) == [
        ("1", "model", "match"),
        ("1.1", "tool", "reused"),  # abandoned by the resume: its outcome is unknown, never run again
        ("2", "model", "match"),
        ("2.1", "tool", "match"),  # the Read of effects.log, run again
        ("3", "model", "match"),
        ("end", "end", "match"),
    ]
    assert report["steps"][1]["note"] == "execute tool: not executed, recorded result reused"
    assert any("interrupted 1 time(s)" in note for note in report["notes"])
    assert (root / "effects.log").read_text().split() == ["once"]
