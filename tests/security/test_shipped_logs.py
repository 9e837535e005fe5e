"""A shipped log is input, not authority (issue 28, item 2).

A cloned repository can ship `.bearagent/state.db`. A queued or interrupted run in it says what it may do when a
process of this user executes it: pre-approved tools, model, budgets, caller. Such a record is executed only when
its RunCreated carries this user's seal (`trust/run_seals.py`): a run planted with another user's key, a record edited
after it was sealed, a seal moved from another run, or a record with no seal (written before seals) is refused, by
`bearagent runs resume`, by `bearagent worker` and by a resuming `bearagent serve`. The attacker's run pre-approves
`Write`, which this user's `permission_mode: default` would otherwise ask for (and, with nobody to answer, deny).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest
from tests.server.test_http_api import start
from tests.support.config_ws import isolated_env
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import RunId
from bearagent.domain.run_events import RunCreatedV3
from bearagent.service.run_types import RunOptions
from bearagent.trust.run_seals import sealed_request
from bearagent.trust.seals import Sealer

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
WRITE = """
turns:
  - text: "Planting."
    tool_calls: [{name: Write, arguments: {file_path: planted.txt, content: "owned\\n"}}]
  - text: "Done."
"""
SLOW_WRITE = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "Thinking slowly."
    delay_ms: 4000
    tool_calls: [{name: Write, arguments: {file_path: planted.txt, content: "owned\\n"}}]
  - text: "Done."
"""
AGENTS = {"main": agent_md("Main.", mode="primary", tools="[Read, Write]")}
ASKING = CONFIG + "permission_mode: default\n"


def workspace(root: Path, script: str = WRITE) -> Path:
    return scripted_workspace(root, script, agents=AGENTS, config=ASKING)


def _enqueue(root: Path, home: Path, *, allowed: tuple[str, ...] = ("Write",)) -> str:
    async def go() -> str:
        async with open_ws(root, home) as ws:
            run = await runtime_of(ws).enqueue("plant it", RunOptions(allowed_tools=allowed))
            return str(run.run_id)

    return asyncio.run(go())


def _run_row(db: Path, run_id: str) -> dict[str, object]:
    with sqlite3.connect(db) as conn:
        (data,) = conn.execute("SELECT data FROM run_projections WHERE run_id = ?", (run_id,)).fetchone()
    return json.loads(data)


def _types(db: Path, run_id: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [
            t for (t,) in conn.execute("SELECT event_type FROM events WHERE run_id = ? ORDER BY sequence", (run_id,))
        ]


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_worker_refuses_a_queued_run_planted_with_another_users_key(tmp_path: Path) -> None:
    clone = workspace(tmp_path / "clone")
    own = workspace(tmp_path / "own")
    planted = _enqueue(clone, tmp_path / "mallory")  # the attacker's machine, the attacker's key
    mine = _enqueue(own, tmp_path / "alice")  # the control: alice's own queued run, same request
    env = isolated_env(tmp_path / "alice")
    worker = subprocess.Popen(
        [BEARAGENT, "worker", "-w", str(clone), "-w", str(own), "--poll", "0.1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # generous: a loaded CI machine starts a worker slowly
        wait_for(lambda: _run_row(clone / ".bearagent/state.db", planted)["status"] != "queued", 120, "the planted run")
        wait_for(lambda: _run_row(own / ".bearagent/state.db", mine)["status"] == "succeeded", 120, "alice's own run")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    row = _run_row(clone / ".bearagent/state.db", planted)
    assert row["status"] == "failed"
    error = cast(dict[str, object], row["error"])
    assert str(error["code"]).endswith("unsealed_run")
    assert "not executed" in str(error["message"])
    assert not (clone / "planted.txt").exists(), "the planted pre-approval wrote nothing"
    assert (own / "planted.txt").read_text() == "owned\n", "alice's own sealed run uses its pre-approval"


def _tamper_created(db: Path, run_id: str, change: Callable[[dict[str, object]], object]) -> None:
    with sqlite3.connect(db) as conn:
        (payload,) = conn.execute(
            "SELECT payload FROM events WHERE run_id = ? AND event_type = 'RunCreated'", (run_id,)
        ).fetchone()
        created = json.loads(payload)
        change(created)
        conn.execute(
            "UPDATE events SET payload = ? WHERE run_id = ? AND event_type = 'RunCreated'",
            (json.dumps(created), run_id),
        )


def _request(created: dict[str, object]) -> dict[str, object]:
    request = created["request"]
    assert isinstance(request, dict)
    return request  # pyright: ignore[reportUnknownVariableType]


def _budget(created: dict[str, object]) -> dict[str, object]:
    budgets = created["budget_limits"]
    assert isinstance(budgets, dict)
    return budgets  # pyright: ignore[reportUnknownVariableType]


TAMPERS: dict[str, Callable[[dict[str, object], str], object]] = {
    "allowed_tools": lambda c, _: _request(c).update(allowed_tools=["Write"]),
    "model": lambda c, _: _request(c).update(model_override="scripted"),
    "caller": lambda c, _: _request(c).update(initiator_ref="admin"),
    "budget": lambda c, _: _budget(c).update(max_tool_calls=999_999),
    "goal": lambda c, _: c.update(goal="do something else"),
    "no_seal": lambda c, _: _request(c).pop("seal"),
    "seal_of_another_run": lambda c, other: _request(c).update(seal=other),
}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_a_sealed_record_edited_afterwards_is_refused(tmp_path: Path, tamper: str) -> None:
    root = workspace(tmp_path / "ws")
    home = tmp_path / "alice"
    run_id = _enqueue(root, home, allowed=())
    other = _enqueue(root, home, allowed=("Write",))
    db = root / ".bearagent" / "state.db"
    with sqlite3.connect(db) as conn:
        (payload,) = conn.execute(
            "SELECT payload FROM events WHERE run_id = ? AND event_type = 'RunCreated'", (other,)
        ).fetchone()
    other_seal = str(json.loads(payload)["request"]["seal"])
    _tamper_created(db, run_id, lambda created: TAMPERS[tamper](created, other_seal))

    async def start_it() -> BearAgentError:
        async with open_ws(root, home) as ws:
            with pytest.raises(BearAgentError) as caught:
                await runtime_of(ws).start_queued(RunId(run_id))
            return caught.value

    error = asyncio.run(start_it())
    assert error.info.code.endswith("unsealed_run")
    assert f"bearagent runs cancel {run_id}" in (error.hint or "")
    if tamper == "no_seal":
        assert "recorded before BearAgent sealed run records" in error.info.message
    assert not (root / "planted.txt").exists()
    assert _types(db, run_id) == ["RunCreated"], "nothing ran"


def _interrupted_by(root: Path, home: Path) -> str:
    """A real `bearagent run` of `home`'s user killed with SIGKILL in its slow second model call: an interrupted
    run in the workspace's log, recorded with that user's key."""
    db = root / ".bearagent" / "state.db"
    proc = subprocess.Popen(
        [BEARAGENT, "run", "-w", str(root), "plant it"],
        env=isolated_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def read_once() -> bool:
        if not db.exists():  # connecting would create an empty file, which BearAgent refuses as a shipped store
            return False
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                return (
                    conn.execute("SELECT 1 FROM events WHERE event_type = 'ToolCallCompleted'").fetchone() is not None
                )
        except sqlite3.Error:
            return False

    try:
        wait_for(read_once, 120, "the first tool call")
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    with sqlite3.connect(db) as conn:
        (run_id,) = conn.execute("SELECT run_id FROM run_projections WHERE parent_run_id IS NULL").fetchone()
    return str(run_id)


def _preapprove_write(db: Path, run_id: str, sealer: Sealer) -> None:
    """What the attacker can do to her own log before shipping it: pre-approve Write, and seal that with her key."""
    with sqlite3.connect(db) as conn:
        (payload,) = conn.execute(
            "SELECT payload FROM events WHERE run_id = ? AND event_type = 'RunCreated'", (run_id,)
        ).fetchone()
        created = RunCreatedV3.model_validate(json.loads(payload))
        request = sealed_request(
            sealer,
            RunId(run_id),
            session_id=created.session_id,
            goal=created.goal,
            agent_name=created.agent_name,
            budgets=created.budget_limits,
            trigger_type=created.trigger_type,
            trigger_ref=created.trigger_ref,
            request=created.request.model_copy(update={"allowed_tools": ("Write",)}),
        )
        data = json.loads(payload)
        data["request"] = request.model_dump(mode="json")
        conn.execute(
            "UPDATE events SET payload = ? WHERE run_id = ? AND event_type = 'RunCreated'", (json.dumps(data), run_id)
        )


@pytest.mark.slow
def test_an_interrupted_run_of_another_user_is_refused_by_runs_resume_and_a_resuming_server(tmp_path: Path) -> None:
    clone = workspace(tmp_path / "clone", SLOW_WRITE)
    (clone / "notes.md").write_text("notes\n")
    mallory = tmp_path / "mallory"
    run_id = _interrupted_by(clone, mallory)
    db = clone / ".bearagent" / "state.db"
    _preapprove_write(db, run_id, Sealer(mallory / "bearagent"))  # and sealed again with her own key

    # the server of the user who cloned it (its home is tmp_path/"home") resumes interrupted runs on start
    server = start(tmp_path, config=f"workspaces:\n  - {{id: ws, path: {clone}}}\nruns: {{resume_on_start: true}}\n")
    try:
        wait_for(lambda: _run_row(db, run_id)["status"] == "interrupted", 120, "the dead run marked interrupted")
        time.sleep(3.0)  # its worker scans at once and every 0.5 s: a resume would have begun by now
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)
    assert "RunResumed" not in _types(db, run_id), "the server did not execute the planted run"

    done = subprocess.run(
        [BEARAGENT, "runs", "resume", run_id, "-w", str(clone)],
        env=isolated_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "not executed" in done.stderr and "not verify with your key" in done.stderr, done.stderr
    assert "bearagent run" in done.stderr, "the message says what to do"
    assert "Traceback" not in done.stderr
    assert "RunResumed" not in _types(db, run_id)
    assert not (clone / "planted.txt").exists()

    # the control: the user who recorded it resumes it (her seal verifies)
    again = subprocess.run(
        [BEARAGENT, "runs", "resume", run_id, "-w", str(clone), "--json"],
        env=isolated_env(mallory),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(again.stdout)["status"] == "succeeded", again.stderr
    assert os.path.exists(clone / "planted.txt")
