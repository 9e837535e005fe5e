"""Approvals and abandoned calls in the stream protocol (protocol 3), through real `bearagent` processes:
`run --stream-json --wait-approvals` ends its lines with the `approval.requested` a client answers from (the id is the
one `approvals answer` takes), the run's stream read back afterwards has the `approval.resolved` and the call's
result; a call abandoned by a resume is closed by an error `tool_result`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.domain.stream import (
    ApprovalRequestedEvent,
    ApprovalResolvedEvent,
    StreamEvent,
    ToolCallEvent,
    ToolResultEvent,
    encode_stream_event,
    parse_stream_event_json,
)
from bearagent.runtime.streaming import LogStream

MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write, Bash]")}
WRITE = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Done."
"""
LONG_BASH = """
turns:
  - text: "Long step."
    tool_calls: [{name: Bash, arguments: {command: "echo once >> effects.log; sleep 30"}}]
  - text: "Checked."
"""


def bearagent(args: list[str], home: Path, *, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        env={**os.environ, **isolated_env(home), "NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check is not None:
        assert done.returncode == check, (args, done.returncode, done.stdout, done.stderr)
    return done


def _stream_of(root: Path, home: Path, run_id: str) -> list[StreamEvent]:
    async def read() -> list[StreamEvent]:
        async with open_ws(root, home) as ws:
            return [parse_stream_event_json(encode_stream_event(e)) async for e in ws.stream_run(run_id)]

    return asyncio.run(read())


def test_stream_json_shows_the_approval_a_waiting_run_asks_for_and_the_answer_follows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = scripted_workspace(tmp_path / "ws", WRITE, agents=MAIN)
    args = ["run", "-w", str(root), "--permission-mode", "default", "--wait-approvals", "--stream-json", "write it"]
    done = bearagent(args, home, check=4)  # 4: the run waits
    lines = [parse_stream_event_json(line) for line in done.stdout.splitlines() if line.strip()]
    facts = [e for e in lines if e.type != "token"]
    assert [e.type for e in facts] == ["run.started", "step", "tool_call", "approval.requested"]
    call, asked = facts[2], facts[3]
    assert isinstance(call, ToolCallEvent) and isinstance(asked, ApprovalRequestedEvent)
    assert (asked.tool_call_id, asked.tool_name, asked.run_id) == (call.id, "Write", call.run_id)
    assert dict(asked.arguments) == {"file_path": "out.txt", "content": "made\n"}
    assert asked.reason and asked.suggested_rule and "allow_once" in asked.choices
    assert asked.seq is not None and call.seq is not None and asked.seq > call.seq
    run_id = str(asked.run_id)

    # what the line says is enough to answer it
    bearagent(["approvals", "answer", run_id, asked.approval_id, "allow", "-w", str(root)], home)
    assert (root / "out.txt").read_text() == "made\n"
    stream = [e for e in _stream_of(root, home, run_id) if e.type != "token"]
    assert [e.type for e in stream] == [
        "run.started",
        "step",
        "tool_call",
        "approval.requested",
        "approval.resolved",
        "tool_result",
        "step",
        "final",
        "run.succeeded",
    ]
    assert stream[3] == asked  # the stream read back from the log is the one printed live
    resolved, result = stream[4], stream[5]
    assert isinstance(resolved, ApprovalResolvedEvent) and isinstance(result, ToolResultEvent)
    assert (resolved.approval_id, resolved.decision, resolved.tool_call_id) == (
        asked.approval_id,
        "allow_once",
        call.id,
    )
    assert resolved.answered_by  # whoever answered (the local user)
    assert result.id == call.id and not result.is_error


def test_a_call_abandoned_by_a_resume_is_closed_in_the_stream(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = scripted_workspace(tmp_path / "ws", LONG_BASH, agents=MAIN)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bearagent", "run", "-w", str(root), "--permission-mode", "acceptEdits", "go"],
        env={**os.environ, **isolated_env(home)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not (root / "effects.log").exists():
        assert time.monotonic() < deadline, "the Bash call never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # the call had its effect; its outcome never reached the log
    proc.wait(timeout=30)
    (run,) = json.loads(bearagent(["runs", "list", "-w", str(root), "--json"], home).stdout)
    run_id = str(run["run_id"])
    assert run["status"] == "interrupted"
    before = _stream_of_unfinished(root, home, run_id)
    assert [e.type for e in before if e.type != "token"][-1] == "tool_call"  # the Bash call, never closed
    bearagent(["runs", "resume", run_id, "-w", str(root)], home)
    assert (root / "effects.log").read_text().split() == ["once"]
    stream = [e for e in _stream_of(root, home, run_id) if e.type != "token"]
    (call,) = [e for e in stream if isinstance(e, ToolCallEvent)]
    results = [e for e in stream if isinstance(e, ToolResultEvent)]
    assert len(results) == 1, "the abandoned call has one result, and the call was not run again"
    (closed,) = results
    assert (closed.id, closed.name, closed.is_error) == (call.id, "Bash", True)
    assert "outcome is unknown" in closed.result
    assert stream[-1].type == "run.succeeded"


def _stream_of_unfinished(root: Path, home: Path, run_id: str) -> list[StreamEvent]:
    """The stream of a run that is not over (`stream_run` would wait for its end): what the log has so far."""

    async def read() -> list[StreamEvent]:
        async with open_ws(root, home) as ws:
            stream = LogStream(ws.run_info(run_id).run_id)
            made = [out for e in runtime_of(ws).store.read_events(stream.run_id) for out in stream.committed(e)]
            return [parse_stream_event_json(encode_stream_event(e)) for e in made]

    return asyncio.run(read())
