"""Bash with real subprocesses: cwd, no stdin, exit codes, output caps, timeouts and cancellation end every process
the command started, in the sandbox (the default) and without it (`sandbox: off`, under the reaper).

Inside the sandbox `$!` is a PID of the sandbox's own PID namespace, so survivors are looked for by a unique marker
in their argv (`exec -a MARKER sleep ...`) across the host's /proc."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from tests.support.host_probes import processes_with
from tests.support.tools import call, context_for, native_gate, request

from bearagent.domain._base import JsonValue
from bearagent.domain.tools import ToolResult
from bearagent.tools.gate import ToolGate
from bearagent.tools.policy import ToolPolicy

OFF: dict[str, JsonValue] = {"sandbox": {"mode": "off"}}
MODES = pytest.mark.parametrize("settings", [{}, OFF], ids=["sandboxed", "unsandboxed"])


def _gate() -> ToolGate:
    # the tool itself is under test here, not the policy: the sandbox flag only lets the calls through the gate
    return native_gate(ToolPolicy(mode="bypassPermissions", shell_sandboxed=True))


def bash(root: Path, command: str, settings: dict[str, JsonValue] | None = None, **extra: object) -> ToolResult:
    return asyncio.run(call(root, "Bash", {"command": command, **extra}, gate=_gate(), **(settings or {})))


def _marker() -> str:
    return f"bearagent-test-{uuid.uuid4().hex[:12]}"


def _wait_gone(marker: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not processes_with(marker):
            return True
        time.sleep(0.05)
    return False


def _sleeper(marker: str, seconds: int = 1000) -> str:
    """A shell snippet that starts `sleep` with `marker` as its argv[0]."""
    return f"bash -c 'exec -a {marker} sleep {seconds}'"


@MODES
def test_runs_in_the_workspace_root_with_no_stdin(tmp_path: Path, settings: dict[str, JsonValue]) -> None:
    result = bash(tmp_path, "pwd; cat; echo done", settings)
    assert result.status == "succeeded"
    assert result.data is not None
    assert result.data["stdout"] == f"{tmp_path}\ndone\n"
    assert result.data["exit_code"] == 0 and result.data["interrupted"] is False


@MODES
def test_exit_code_and_stderr(tmp_path: Path, settings: dict[str, JsonValue]) -> None:
    result = bash(tmp_path, "echo out; echo err >&2; exit 3", settings)
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


@MODES
def test_timeout_kills_the_whole_tree_including_grandchildren(tmp_path: Path, settings: dict[str, JsonValue]) -> None:
    marker = _marker()
    command = f"({_sleeper(marker)} & wait) & {_sleeper(marker + '-main')}"
    started = time.monotonic()
    result = bash(tmp_path, command, settings, timeout=500)
    assert time.monotonic() - started < 60  # the timeout ended it, not the sleepers (1000 s)
    assert result.status == "failed" and result.error is not None and result.error.category == "timeout"
    assert result.data is not None and result.data["interrupted"] is True
    assert "timed out after 500 ms" in result.content
    assert _wait_gone(marker), "a grandchild survived the timeout"


@MODES
def test_background_children_are_ended_when_the_command_finishes(
    tmp_path: Path, settings: dict[str, JsonValue]
) -> None:
    marker = _marker()
    result = bash(tmp_path, f"{_sleeper(marker)} & echo started", settings)
    assert result.status == "succeeded" and "started" in result.content
    assert _wait_gone(marker)


@MODES
def test_setsid_daemons_are_ended_too(tmp_path: Path, settings: dict[str, JsonValue]) -> None:
    """`setsid` leaves the process group and a double fork leaves the shell's tree: neither survives the call."""
    marker = _marker()
    command = f"(setsid {_sleeper(marker)} &) ; (setsid bash -c '{_sleeper(marker)} &' &) ; sleep 0.3; echo spawned"
    result = bash(tmp_path, command, settings)
    assert result.status == "succeeded" and "spawned" in result.content
    assert _wait_gone(marker), f"survivors: {processes_with(marker)}"


@MODES
def test_cancellation_kills_the_tree(tmp_path: Path, settings: dict[str, JsonValue]) -> None:
    marker = _marker()
    started = tmp_path / "started"

    async def main() -> None:
        command = f"(setsid {_sleeper(marker)} &); touch {started}; {_sleeper(marker)}"
        task = asyncio.create_task(
            _gate().call(request("Bash", {"command": command}), context_for(tmp_path, **settings))
        )
        for _ in range(200):
            if started.exists() and len(processes_with(marker)) >= 2:
                break
            await asyncio.sleep(0.05)
        assert len(processes_with(marker)) >= 2
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert _wait_gone(marker), f"survivors: {processes_with(marker)}"


def test_timeout_argument_is_validated(tmp_path: Path) -> None:
    result = bash(tmp_path, "true", timeout=10_000_000)
    assert result.error is not None and result.error.category == "validation"
    assert "timeout" in result.content


def test_the_description_tells_the_model_about_the_sandbox() -> None:
    from bearagent.tools.bash import SPEC

    assert "inside a sandbox" in SPEC.description
    assert "no network" in SPEC.description and "only in the workspace" in SPEC.description
