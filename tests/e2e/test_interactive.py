"""The interactive session in a real pseudo-terminal: prompt, streamed answer, agent switch, Ctrl-C, exit."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pexpect
import pytest
from tests.support.foreground import as_foreground
from tests.support.pty_session import session_env, spawn_session

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
turns:
  - text: "Hello from the scripted model."
  - text: "This answer comes too late."
    delay_ms: 30000
  - text: "Planning is done."
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(
        REPO / "examples" / "quickstart",
        ws,
        ignore=shutil.ignore_patterns("state.db*", "outputs", "locks", "transcripts"),
    )
    (ws / ".bearagent" / "scripts" / "intro.yaml").write_text(SCRIPT, encoding="utf-8")
    return ws


def _spawn(ws: Path, home: Path) -> pexpect.spawn[str]:
    return spawn_session(ws, session_env(home), preexec_fn=as_foreground)  # Ctrl-C is pressed


def _wait_for_running_run(workspace: Path, timeout_s: float = 20.0) -> None:
    from bearagent.store.sqlite import SqliteEventStore

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        store = SqliteEventStore(workspace / ".bearagent" / "state.db")
        try:
            running = store.list_runs(status="running", limit=5)
            if running and any(a.status == "running" for a in store.list_activities(running[0].run_id)):
                return
        finally:
            store.close()
        time.sleep(0.05)
    raise AssertionError("the second run never started")


def test_prompt_stream_switch_cancel_and_exit(workspace: Path, tmp_path: Path) -> None:
    child = _spawn(workspace, tmp_path / "home")
    try:
        child.expect("writer>")
        child.sendline("say hello")
        child.expect("Hello from the scripted model.")
        child.expect("succeeded")
        child.expect("writer>")

        child.sendline("/agents")
        child.expect("plan")
        child.expect("writer>")
        child.sendline("/agent plan")
        child.expect("agent: plan")
        child.expect("plan>")

        child.sendline("take your time")
        _wait_for_running_run(workspace)  # the slow turn is being streamed: its run is stored and running
        child.sendcontrol("c")
        child.expect("cancelled")
        child.expect("plan>")

        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)

    from bearagent.store.sqlite import SqliteEventStore

    store = SqliteEventStore(workspace / ".bearagent" / "state.db")
    runs = store.list_runs(limit=10)
    assert [r.status for r in runs] == ["cancelled", "succeeded"]
    assert runs[0].agent_name == "plan"
    assert runs[0].session_id == runs[1].session_id  # one session across prompts


def test_unknown_slash_command_and_unknown_agent_are_explained(workspace: Path, tmp_path: Path) -> None:
    child = _spawn(workspace, tmp_path / "home")
    try:
        child.expect("writer>")
        child.sendline("/frobnicate")
        child.expect("unknown command /frobnicate; /help lists the commands")
        child.sendline("/agent nobody")
        child.expect("no agent named 'nobody'; primary agents: ")
        child.expect("writer>")
        child.sendline("/agent writr")  # the registry's one wording of "no agent named X", with its did-you-mean
        child.expect_exact("no agent named 'writr' (did you mean 'writer'?); primary agents: ")
        child.expect("writer>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


def test_slash_commands_and_an_ask_permission_answered_in_the_terminal(workspace: Path, tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "echo approved-by-a-human"}}]
  - text: "ran it"
"""
    (workspace / ".bearagent" / "scripts" / "intro.yaml").write_text(script, encoding="utf-8")
    config = workspace / ".bearagent" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "permissions: {ask: [Bash]}\n", encoding="utf-8")
    agent = workspace / ".bearagent" / "agents" / "writer.md"
    agent.write_text(
        agent.read_text(encoding="utf-8").replace(
            "tools: [Read, Write, Glob, Grep, Skill]", "tools: [Read, Bash, Skill]"
        )
    )
    home = tmp_path / "home"
    from tests.support.config_ws import isolated_env, load

    from bearagent.trust import trust, workspace_trust_surface

    trust(workspace, workspace_trust_surface(load(workspace, home)), env=isolated_env(home))
    child = _spawn(workspace, home)
    try:
        child.expect("writer>")
        child.sendline("/skills")
        child.expect("summarize")
        child.expect("writer>")
        child.sendline("/tools")
        child.expect("Bash")
        child.expect("writer>")
        child.sendline("run the command")
        child.expect("needs approval")
        child.expect(r"allow \[y\]es once")
        child.sendline("y")
        child.expect("approved-by-a-human")
        child.expect("succeeded")
        child.expect("writer>")
        child.sendline("/cost")
        child.expect("1 run · 2 model calls")
        child.expect("writer>")
        child.sendline("/clear")
        child.expect("new session")
        child.sendline("/cost")  # /clear starts the count again (issue 32: it kept the old token count)
        child.expect("0 runs · 0 model calls · 0 tool calls · 0 in \\+ 0 out tokens")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
