"""Bash with real subprocesses: cwd, no stdin, exit codes, output caps, timeouts and cancellation kill the group."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from tests.support.tools import call, context_for, native_gate, request

from bearagent.domain.tools import ToolResult


def bash(root: Path, command: str, **extra: object) -> ToolResult:
    return asyncio.run(call(root, "Bash", {"command": command, **extra}))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_dead(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_runs_in_the_workspace_root_with_no_stdin(tmp_path: Path) -> None:
    result = bash(tmp_path, "pwd; cat; echo done")
    assert result.status == "succeeded"
    assert result.data is not None
    assert result.data["stdout"] == f"{tmp_path}\ndone\n"
    assert result.data["exit_code"] == 0 and result.data["interrupted"] is False


def test_exit_code_and_stderr(tmp_path: Path) -> None:
    result = bash(tmp_path, "echo out; echo err >&2; exit 3")
    assert result.status == "failed" and result.error is not None and result.error.code == "tool.nonzero_exit"
    assert result.data is not None and result.data["exit_code"] == 3
    assert result.data["stderr"] == "err\n"
    assert result.content == "out\nstderr:\nerr\n[Exit code 3]"


def test_output_is_capped_with_a_note(tmp_path: Path) -> None:
    result = bash(tmp_path, "seq 1 200000")
    assert result.status == "succeeded" and result.truncated
    assert "bytes of output cut" in result.content
    assert result.content.startswith("1\n2\n3\n")
    assert result.content.rstrip().endswith("200000")
    assert len(result.content) < 40_000


def test_timeout_kills_the_whole_group_including_grandchildren(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    command = f"(sleep 1000 & echo $! > {pidfile}; wait) & sleep 1000"
    started = time.monotonic()
    result = bash(tmp_path, command, timeout=500)
    assert time.monotonic() - started < 5
    assert result.status == "failed" and result.error is not None and result.error.category == "timeout"
    assert result.data is not None and result.data["interrupted"] is True
    assert "timed out after 500 ms" in result.content
    grandchild = int(pidfile.read_text())
    assert _wait_dead(grandchild), "grandchild survived the timeout"


def test_background_children_are_ended_when_the_command_finishes(tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    result = bash(tmp_path, f"sleep 1000 & echo $! > {pidfile}; echo started")
    assert result.status == "succeeded" and "started" in result.content
    assert _wait_dead(int(pidfile.read_text()))


def test_cancellation_kills_the_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "c.pid"

    async def main() -> None:
        task = asyncio.create_task(
            native_gate().call(
                request("Bash", {"command": f"sleep 1000 & echo $! > {pidfile}; wait"}), context_for(tmp_path)
            )
        )
        for _ in range(100):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert _wait_dead(int(pidfile.read_text()))


def test_timeout_argument_is_validated(tmp_path: Path) -> None:
    result = bash(tmp_path, "true", timeout=10_000_000)
    assert result.error is not None and result.error.category == "validation"
    assert "timeout" in result.content
