"""Bash `run_in_background`, BashOutput and KillShell through real runs: the shell starts in the sandbox (or under
the reaper with `sandbox: off`), a later turn reads its new output (filtered), KillShell ends it; shells are bounded
per session, end with the session, and none survives a `kill -9` of `bearagent run`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.host_probes import processes_with, wait_for_processes
from tests.support.run_ws import agent_md, scripted_workspace
from tests.support.sandbox_marks import needs_sandbox
from tests.support.tools import native_gate, request

from bearagent.cli import main
from bearagent.domain.ids import RunId
from bearagent.ports import ToolContext
from bearagent.tools.background import MAX_SHELLS, end_session_shells
from bearagent.tools.policy import ToolPolicy

pytestmark = needs_sandbox("background shells are tested in the sandbox: Linux and bubblewrap (scripts/ci-extras.sh)")
MAIN = {"main": agent_md("Main agent.", mode="primary")}
BEARAGENT = str(Path(sys.executable).parent / "bearagent")
UNSANDBOXED = 'sandbox: off\npermissions: {allow: ["Bash"]}\n'
WAIT_FOR_STARTED = "for i in $(seq 600); do [ -e started ] && break; sleep 0.1; done; echo waited"
"""A foreground Bash call that waits (up to 60 s, generous for a loaded machine) for the background one to start."""


def _call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _script(*turns: Mapping[str, object]) -> str:
    return json.dumps({"turns": [*turns, {"text": "done"}]})


def _invoke(args: list[str], home: Path) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home), prog_name="bearagent")


def _gone(marker: str, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not processes_with(marker)


def _results(root: Path, home: Path, output: str) -> list[dict[str, object]]:
    run_id = json.loads(output)["run_id"]
    events = _invoke(["events", run_id[:8], "-w", str(root), "--json"], home)
    assert events.exit_code == 0, events.output
    return [
        e["payload"]["result"]
        for e in map(json.loads, events.output.splitlines())
        if e["event_type"] in ("ToolCallCompleted", "ToolCallFailed")
    ]


@pytest.mark.parametrize("user_config", [None, UNSANDBOXED], ids=["sandboxed", "under-the-reaper"])
def test_start_read_filter_and_kill_a_background_shell(tmp_path: Path, user_config: str | None) -> None:
    if user_config is not None:
        write(tmp_path / "bearagent", "config.yaml", user_config)
    marker = f"bg-{uuid.uuid4().hex[:10]}"
    command = f"echo line1; echo line2; echo oops >&2; touch started; exec -a {marker} sleep 120"
    script = _script(
        _call("Bash", command=command, run_in_background=True, description="a long job"),
        _call("Bash", command=WAIT_FOR_STARTED),
        _call("BashOutput", bash_id="bash_1", filter="line2|oops"),
        _call("BashOutput", bash_id="bash_1"),
        _call("KillShell", shell_id="bash_1"),
        _call("BashOutput", bash_id="bash_1"),
        _call("BashOutput", bash_id="bash_7"),
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    result = _invoke(["run", "-w", str(root), "--json", "go"], tmp_path)
    assert result.exit_code == 0, result.output
    started, waited, filtered, empty, killed, after, unknown = _results(root, tmp_path, result.output)
    assert started["status"] == "succeeded" and "bash_1" in str(started["content"])
    where = "in the sandbox" if user_config is None else "under the reaper"
    assert where in str(started["content"])
    assert "waited" in str(waited["content"])
    assert "<status>running</status>" in str(filtered["content"])
    assert "<stdout>\nline2\n</stdout>" in str(filtered["content"]) and "line1" not in str(filtered["content"])
    assert "<stderr>\noops\n</stderr>" in str(filtered["content"])
    assert "(no new output)" in str(empty["content"])  # the filtered read consumed the rest
    assert killed["status"] == "succeeded" and "Killed shell bash_1" in str(killed["content"])
    assert "<status>killed</status>" in str(after["content"])
    assert unknown["status"] == "failed" and "no background shell 'bash_7'" in str(unknown["content"])
    assert "bash_1" in str(unknown["content"])
    assert _gone(marker)


def test_a_shell_still_running_ends_with_the_session(tmp_path: Path) -> None:
    marker = f"bg-{uuid.uuid4().hex[:10]}"
    script = _script(
        _call("Bash", command=f"touch started; exec -a {marker} sleep 120", run_in_background=True),
        _call("Bash", command=WAIT_FOR_STARTED),
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    result = _invoke(["run", "-w", str(root), "--json", "go"], tmp_path)
    assert result.exit_code == 0, result.output
    assert (root / "started").exists()
    assert _gone(marker), "the background shell outlived its session"


def test_background_shells_are_bounded_per_session(tmp_path: Path) -> None:
    owner = RunId.new()
    context = ToolContext(workspace_root=tmp_path, run_id=owner)
    gate = native_gate(ToolPolicy(shell_sandboxed=True))  # the context's default settings: the sandbox

    def start() -> str:
        call = request("Bash", {"command": "exec sleep 120", "run_in_background": True})
        return asyncio.run(gate.call(call, context)).content

    try:
        for i in range(MAX_SHELLS):
            assert f"bash_{i + 1}" in start()
        refused = start()
        assert f"at most {MAX_SHELLS} may run at once" in refused and "KillShell" in refused
        other = ToolContext(workspace_root=tmp_path, run_id=RunId.new())
        foreign = asyncio.run(gate.call(request("KillShell", {"shell_id": "bash_1"}), other))
        assert foreign.status == "failed" and "no background shell" in foreign.content
        bad = asyncio.run(gate.call(request("BashOutput", {"bash_id": "bash_1", "filter": "("}), context))
        assert bad.error is not None and bad.error.code == "validation.invalid_filter"
    finally:
        assert end_session_shells(str(owner)) == MAX_SHELLS


@pytest.mark.parametrize("user_config", [None, UNSANDBOXED], ids=["sandboxed", "under-the-reaper"])
def test_sigkill_of_bearagent_run_leaves_no_background_process(tmp_path: Path, user_config: str | None) -> None:
    if user_config is not None:
        write(tmp_path / "bearagent", "config.yaml", user_config)
    marker = f"bg-{uuid.uuid4().hex[:10]}"
    script = _script(
        _call(
            "Bash",
            command=f"(setsid bash -c 'exec -a {marker}-daemon sleep 120' &); exec -a {marker} sleep 120",
            run_in_background=True,
        ),
        _call("Bash", command="sleep 120"),
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    proc = subprocess.Popen(
        [BEARAGENT, "run", "-w", str(root), "go"],
        env={**isolated_env(tmp_path), "NO_COLOR": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_processes(
            marker,
            proc,
            "bearagent run ended before the background shell started",
            "the background processes never appeared",
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert _gone(marker), "a background process survived SIGKILL of bearagent"
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_finished_shell_reports_its_exit_code_and_all_its_output(tmp_path: Path) -> None:
    owner = RunId.new()
    context = ToolContext(workspace_root=tmp_path, run_id=owner)
    gate = native_gate(ToolPolicy(shell_sandboxed=True))
    command = "for i in $(seq 2000); do echo line-$i; done; echo to-stderr >&2; exit 3"
    started = asyncio.run(gate.call(request("Bash", {"command": command, "run_in_background": True}), context))
    assert started.status == "succeeded", started.content
    seen = ""
    deadline = time.monotonic() + 60  # generous: only a bound on a loaded machine, not a speed claim
    try:
        while True:
            read = asyncio.run(gate.call(request("BashOutput", {"bash_id": "bash_1"}), context))
            assert read.data is not None
            seen += read.content
            if read.data["status"] != "running" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert read.data["status"] == "completed" and read.data["exit_code"] == 3
        assert "<exit_code>3</exit_code>" in read.content
        assert "line-1\n" in seen and "line-2000" in seen and "to-stderr" in seen
        finished = asyncio.run(gate.call(request("KillShell", {"shell_id": "bash_1"}), context))
        assert "had already ended (completed, exit code 3)" in finished.content
    finally:
        end_session_shells(str(owner))
