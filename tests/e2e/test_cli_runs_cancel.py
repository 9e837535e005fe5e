"""`bearagent runs cancel RUN` through real `bearagent` processes: a waiting run ends cancelled at once and never
runs its tool; a run a terminal's `bearagent run` executes is not stopped from outside (a clear error naming what to
do), and once that process is killed the interrupted run is cancelled; a run `bearagent serve` executes is stopped by
the server's worker on the request the command records; a subagent's run, an ended run and an unknown one are clear
errors. Hints that named `bearagent runs cancel` before it existed now name this command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.server.test_http_api import start
from tests.support.config_ws import isolated_env
from tests.support.run_ws import CONFIG, agent_md, scout_workspace, scripted_workspace

pytestmark = pytest.mark.slow

WRITE = """
turns:
  - text: "Writing the notes now."
    tool_calls: [{name: Write, arguments: {file_path: notes.txt, content: "release notes\\n"}}]
  - text: "Done."
"""
# held until the test creates .bearagent/release (beside the script)
HELD = """
turns:
  - text: "Waiting for the release."
    wait_for_file: release
    wait_timeout_ms: 120000
"""
MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}


def _cli(root: Path, env: Mapping[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        cwd=root,
        env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _runs(root: Path, env: Mapping[str, str]) -> list[dict[str, Any]]:
    listed = _cli(root, env, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    runs: list[dict[str, Any]] = json.loads(listed.stdout)
    return runs


def _until_running(root: Path, env: Mapping[str, str]) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not (root / ".bearagent" / "state.db").exists():
            # the terminal's `bearagent run` has not created the store yet (a slow start under load): `runs list`
            # would rightly answer "no runs have been stored"
            time.sleep(0.3)
            continue
        running = [r["run_id"] for r in _runs(root, env) if r["status"] == "running"]
        if running:
            return str(running[0])
        time.sleep(0.3)
    raise AssertionError("the run never showed as running")


def _waiting_for_write(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    """A workspace whose run waits for the approval of its Write (`bearagent run --wait-approvals` exits 4), the
    user environment (home `tmp_path/home`) and the run's id."""
    root = scripted_workspace(tmp_path / "ws", WRITE, agents=MAIN, config=CONFIG + "permission_mode: default\n")
    env = isolated_env(tmp_path / "home")
    waiting = _cli(root, env, "run", "--json", "--wait-approvals", "write the notes")
    assert waiting.returncode == 4, waiting.stdout + waiting.stderr
    return root, env, str(json.loads(waiting.stdout)["run_id"])


def test_a_waiting_run_is_cancelled_at_once_and_never_runs_its_tool(tmp_path: Path) -> None:
    root, env, run_id = _waiting_for_write(tmp_path)
    listed = _cli(root, env, "approvals", "list", "--json")
    (approval,) = [a["approval_id"] for a in json.loads(listed.stdout) if a["run_id"] == run_id]

    done = _cli(root, env, "runs", "cancel", run_id[:8])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"run {run_id} cancelled (it was waiting)"
    (run,) = _runs(root, env)
    assert run["status"] == "cancelled"
    listed = _cli(root, env, "approvals", "list", "--json")
    assert [a for a in json.loads(listed.stdout) if a["run_id"] == run_id] == []
    events = _cli(root, env, "events", run_id, "--json")
    (cancelled,) = [json.loads(line) for line in events.stdout.splitlines() if '"RunCancelled"' in line]
    assert "bearagent runs cancel" in cancelled["payload"]["reason"]
    answered = _cli(root, env, "approvals", "answer", run_id, approval, "allow")
    assert answered.returncode != 0, answered.stdout
    assert not (root / "notes.txt").exists(), "the cancelled run's Write never ran"

    again = _cli(root, env, "runs", "cancel", run_id)
    assert again.returncode == 1
    assert f"run {run_id} already ended (cancelled)" in again.stderr and "fix: nothing to cancel" in again.stderr
    unknown = _cli(root, env, "runs", "cancel", "ffffffff")
    assert unknown.returncode == 2 and "ffffffff" in unknown.stderr and "bearagent runs list" in unknown.stderr


def test_a_terminals_run_is_not_stopped_from_outside_and_is_cancelled_once_its_process_is_gone(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", HELD, agents=MAIN)
    env = isolated_env(tmp_path / "home")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bearagent", "run", "wait"],
        cwd=root,
        env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        run_id = _until_running(root, env)
        still = _cli(root, env, "runs", "cancel", "last", "--wait", "1")
        assert still.returncode == 1, still.stdout + still.stderr
        assert f"run {run_id} is still running after 1 s" in still.stderr
        assert "stop it there (Ctrl-C)" in still.stderr and proc.poll() is None
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    done = _cli(root, env, "runs", "cancel", "last")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"run {run_id} cancelled (it was interrupted)"
    (root / ".bearagent" / "release").write_text("")
    assert [r["status"] for r in _runs(root, env)] == ["cancelled"]
    resumed = _cli(root, env, "runs", "resume", run_id)
    assert resumed.returncode != 0 and [r["status"] for r in _runs(root, env)] == ["cancelled"]


def test_a_run_the_server_executes_is_stopped_by_its_worker(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", HELD, agents=MAIN)
    server = start(tmp_path, config=f"workspaces:\n  - {{id: held, path: {root}}}\n")
    try:
        with server.client() as c:
            sid = c.post("/v1/workspaces/held/sessions", json={}).json()["id"]
            run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "wait"}).json()["run_id"]
            env = isolated_env(tmp_path / "cli-home")
            assert _until_running(root, env) == run_id
            done = _cli(root, env, "runs", "cancel", run_id, "--wait", "60")
            assert done.returncode == 0, done.stdout + done.stderr
            assert done.stdout.strip() == f"run {run_id} cancelled by the process that executed it"
            assert c.get(f"/v1/runs/{run_id}").json()["status"] == "cancelled"
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)


def test_a_subagents_run_is_cancelled_through_its_parent(tmp_path: Path) -> None:
    root = scout_workspace(tmp_path / "ws")
    env = isolated_env(tmp_path / "home")
    ran = _cli(root, env, "run", "ask the scout")
    assert ran.returncode == 0, ran.stderr
    runs = _runs(root, env)
    (child,) = [r for r in runs if r["parent_run_id"]]
    refused = _cli(root, env, "runs", "cancel", child["run_id"])
    assert refused.returncode == 2
    assert f"run {child['run_id']} is a subagent's run" in refused.stderr
    assert f"bearagent runs cancel {child['parent_run_id']}" in refused.stderr


def test_a_run_that_changes_under_every_try_is_a_clear_error_and_stays_as_it_was(tmp_path: Path) -> None:
    # the store's conditional commit refuses a cancel written on top of a stale read; a run that moved on at each of
    # the tries (here: every read is one event behind) is refused with a clear error, and nothing is appended
    import asyncio

    from tests.support.config_ws import load

    from bearagent.app.stores import open_store, writer_over
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.ids import RunId, Uuid4IdGenerator
    from bearagent.domain.state import RunProjection
    from bearagent.ports import SystemClock, WorkspaceStore
    from bearagent.service.cancelling import cancel_from_outside

    root, env, waiting_id = _waiting_for_write(tmp_path)
    run_id = RunId(waiting_id)
    loaded = load(root, tmp_path / "home")
    store = open_store(loaded, create=False)

    class BehindByOne:
        """The real store, but its run reads are one event behind the log."""

        def __init__(self, real: WorkspaceStore) -> None:
            self.real = real

        async def fetch_run(self, wanted: RunId) -> RunProjection | None:
            run = await self.real.fetch_run(wanted)
            return None if run is None else run.model_copy(update={"last_sequence": run.last_sequence - 1})

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

    stale: Any = BehindByOne(store)
    try:
        with pytest.raises(BearAgentError) as refused:
            asyncio.run(
                cancel_from_outside(
                    stale, writer_over(loaded, store), SystemClock(), Uuid4IdGenerator(), run_id, "test", wait_s=0
                )
            )
    finally:
        store.close()
    assert refused.value.info.code == "conflict.run_changing" and "try again" in str(refused.value.hint)
    assert [r["status"] for r in _runs(root, env)] == ["waiting"]


def test_a_refusal_that_is_not_a_race_is_reported_as_it_is_and_not_retried(tmp_path: Path) -> None:
    # only a conflict (the run moved on) is worth another read and try; any other refusal of the cancel's append (here
    # the store going away) is the answer, at the first try, and the run stays as it was
    import asyncio

    from tests.support.config_ws import load

    from bearagent.app.stores import open_store, writer_over
    from bearagent.domain.errors import BearAgentError, ErrorInfo
    from bearagent.domain.ids import RunId, Uuid4IdGenerator
    from bearagent.ports import SystemClock
    from bearagent.runtime.run_writer import RunWriter
    from bearagent.service.cancelling import cancel_from_outside

    root, env, waiting_id = _waiting_for_write(tmp_path)
    run_id = RunId(waiting_id)
    loaded = load(root, tmp_path / "home")
    store = open_store(loaded, create=False)
    tries: list[int] = []

    class StoreGone:
        """The real writer, but every append fails as a store that went away does."""

        def __init__(self, real: RunWriter) -> None:
            self.real = real

        async def append_many(self, *args: Any, **kwargs: Any) -> Any:
            tries.append(1)
            raise BearAgentError(ErrorInfo.of("storage", "unreachable", "the store went away"), hint="start it again")

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

    gone: Any = StoreGone(writer_over(loaded, store))
    try:
        with pytest.raises(BearAgentError) as refused:
            asyncio.run(cancel_from_outside(store, gone, SystemClock(), Uuid4IdGenerator(), run_id, "test", wait_s=0))
    finally:
        store.close()
    assert refused.value.info.code == "storage.unreachable", refused.value.info.code
    assert tries == [1]
    assert [r["status"] for r in _runs(root, env)] == ["waiting"]
