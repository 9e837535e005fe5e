"""SIGTERM and SIGHUP are handled like Ctrl-C, by real `bearagent` processes: the run in flight is cancelled and logs
RunCancelled, the tool call in flight is cancelled (its `sleep` process is gone), and the process exits 1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env
from tests.support.foreground import as_foreground
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

# Bash asks by default outside the sandbox, and nobody answers here: allow it.
ALLOW_BASH = CONFIG + 'permissions: {allow: ["Bash"]}\n'
AGENTS = {"main": agent_md("Main agent.", mode="primary", tools="[Bash]")}


def _workspace(tmp_path: Path) -> tuple[Path, str]:
    """A trusted workspace whose model runs one long `sleep` through Bash; returns it and the sleep's unique
    argument."""
    marker = f"30.{uuid.uuid4().int % 10**12:012d}"  # a valid duration no other process uses
    script = f"""
turns:
  - text: "Sleeping."
    tool_calls: [{{name: Bash, arguments: {{command: "sleep {marker}"}}}}]
  - text: "Woke up."
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=AGENTS, config=ALLOW_BASH)
    _bearagent(["trust", "-y", "-w", str(root)], tmp_path)  # an allow rule only applies in a trusted workspace
    return root, marker


def _sleepers(marker: str) -> list[int]:
    """Pids of live processes whose argv is `sleep <marker>`."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv[:2] == [b"sleep", marker.encode()] and state != "Z":
            found.append(int(entry.name))
    return found


def _wait_for(predicate: object, what: str, timeout: float = 30.0) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, **isolated_env(tmp_path), "NO_COLOR": "1"}


def _spawn(args: list[str], tmp_path: Path, *, stdin: int | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bearagent", *args],
        env=_env(tmp_path),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_foreground,
    )


def _bearagent(args: list[str], tmp_path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def _events(root: Path, tmp_path: Path) -> list[dict[str, object]]:
    return [
        json.loads(line) for line in _bearagent(["events", "last", "--json", "-w", str(root)], tmp_path).splitlines()
    ]


def _assert_cancelled_mid_tool(root: Path, tmp_path: Path, marker: str) -> None:
    events = _events(root, tmp_path)
    types = [e["event_type"] for e in events]
    assert types[-1] == "RunCancelled", types
    assert "ToolCallStarted" in types and "ToolCallCompleted" not in types
    failed = [e for e in events if e["event_type"] == "ToolCallFailed"]
    assert len(failed) == 1
    result = failed[0]["payload"]["result"]  # type: ignore[index]
    assert result["error"]["category"] == "cancelled"  # type: ignore[index]
    _wait_for(lambda: not _sleepers(marker), "the sleep of the cancelled Bash call to end", timeout=10)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_signal_cancels_bearagent_run_and_its_bash_call(tmp_path: Path, sig: signal.Signals) -> None:
    root, marker = _workspace(tmp_path)
    proc = _spawn(["run", "-w", str(root), "sleep for a while"], tmp_path)
    try:
        _wait_for(lambda: _sleepers(marker) or proc.poll() is not None, "the Bash call's sleep to start")
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, (out, err)
    assert "cancelled: the run was stopped" in err
    if sig != signal.SIGINT:
        assert sig.name in err
    assert "Traceback" not in err
    _assert_cancelled_mid_tool(root, tmp_path, marker)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_signal_cancels_the_interactive_sessions_run_and_leaves(tmp_path: Path, sig: signal.Signals) -> None:
    root, marker = _workspace(tmp_path)
    proc = _spawn(["-w", str(root)], tmp_path, stdin=subprocess.PIPE)
    try:
        assert proc.stdin is not None
        proc.stdin.write("sleep for a while\n")
        proc.stdin.flush()
        _wait_for(lambda: _sleepers(marker) or proc.poll() is not None, "the Bash call's sleep to start")
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, (out, err)
    assert "cancelled" in out
    assert "Traceback" not in err
    _assert_cancelled_mid_tool(root, tmp_path, marker)


def test_sigterm_at_the_interactive_prompt_leaves_with_code_one(tmp_path: Path) -> None:
    root, _ = _workspace(tmp_path)
    proc = _spawn(["-w", str(root)], tmp_path, stdin=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()  # printed before the prompt is read
        assert "BearAgent" in banner
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, (banner, out, err)
    assert "Traceback" not in err
