"""A planted run is input, not authority, on a PostgreSQL store too (issue 28, item 2).

The SQLite variants (`test_shipped_logs.py`) plant a run in a shipped `state.db`. Here the log is a schema of a
PostgreSQL database that several users' processes reach (a team's store): mallory, who can write to it, enqueues a run
with her own key, or edits a run alice sealed so that it pre-approves `Write`. Alice's `bearagent worker` and
`bearagent runs resume`, on the same store, refuse both (`unsealed_run`, nothing executed), while a run alice sealed
herself executes. Each user's store comes from their own user config (`store: {backend: postgres}`), as documented.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import psycopg
import pytest
from psycopg import sql
from tests.security.test_shipped_logs import BEARAGENT, SLOW_WRITE, wait_for, workspace
from tests.support.config_ws import isolated_env

from bearagent.api import open_workspace, runtime_of
from bearagent.domain.ids import RunId
from bearagent.domain.run_events import RunCreatedV3
from bearagent.plugins.manager import PluginHost
from bearagent.service.run_types import RunOptions
from bearagent.trust.run_seals import sealed_request
from bearagent.trust.seals import Sealer

PG_STORE = "store: {backend: postgres, dsn: '${BEARAGENT_PG_DSN}'}\n"


def user_env(home: Path, dsn: str) -> dict[str, str]:
    """The environment of a user whose own config puts every workspace's log in the PostgreSQL database `dsn`."""
    (home / "bearagent").mkdir(parents=True, exist_ok=True)
    (home / "bearagent" / "config.yaml").write_text(PG_STORE)
    return isolated_env(home, BEARAGENT_PG_DSN=dsn)


def pg_schema(root: Path) -> sql.Identifier:
    """The workspace's schema when the config names none (`app/resources.py` `postgres_schema`)."""
    return sql.Identifier("bearagent_" + hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16])


def enqueue(root: Path, env: dict[str, str], *, allowed: tuple[str, ...] = ("Write",), caller: str = "local") -> str:
    """A queued run recorded by the user of `env` (sealed with that user's key); `caller`: the API subject it is
    recorded for (its initiator and its new session's caller), as a server records its callers' runs."""

    async def go() -> str:
        async with open_workspace(root, env=env, plugins=PluginHost()) as ws:
            initiator = None if caller == "local" else caller
            options = RunOptions(allowed_tools=allowed, caller=caller, initiator_ref=initiator)
            run = await runtime_of(ws).enqueue("plant it", options)
            return str(run.run_id)

    return asyncio.run(go())


def run_row(dsn: str, root: Path, run_id: str) -> dict[str, object]:
    query = sql.SQL("SELECT data FROM {}.run_projections WHERE run_id = %s").format(pg_schema(root))
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query, (run_id,)).fetchone()
    assert row is not None, f"run {run_id} is not in the store"
    return cast(dict[str, object], row[0])


def _types(dsn: str, root: Path, run_id: str) -> list[str]:
    query = sql.SQL("SELECT event_type FROM {}.events WHERE run_id = %s ORDER BY sequence").format(pg_schema(root))
    with psycopg.connect(dsn) as conn:
        return [str(t) for (t,) in conn.execute(query, (run_id,)).fetchall()]


def _edit_created(dsn: str, root: Path, run_id: str, change: Callable[[dict[str, object]], dict[str, object]]) -> None:
    """Rewrite the run's RunCreated in place, as a writer of the shared database can."""
    schema = pg_schema(root)
    where = sql.SQL("WHERE run_id = %s AND event_type = 'RunCreated'")
    with psycopg.connect(dsn) as conn:
        row = conn.execute(sql.SQL("SELECT payload FROM {}.events ").format(schema) + where, (run_id,)).fetchone()
        assert row is not None
        payload = json.dumps(change(cast(dict[str, object], row[0])))
        conn.execute(sql.SQL("UPDATE {}.events SET payload = %s::json ").format(schema) + where, (payload, run_id))


def refused(row: dict[str, object]) -> None:
    assert row["status"] == "failed", row
    error = cast(dict[str, object], row["error"])
    assert str(error["code"]).endswith("unsealed_run"), error
    assert "not executed" in str(error["message"])


def test_a_worker_on_postgres_refuses_planted_and_edited_queued_runs(tmp_path: Path, postgres_dsn: str) -> None:
    clone = workspace(tmp_path / "clone")
    own = workspace(tmp_path / "own")
    mallory = user_env(tmp_path / "mallory", postgres_dsn)
    alice = user_env(tmp_path / "alice", postgres_dsn)
    planted = enqueue(clone, mallory)  # mallory's key
    edited = enqueue(clone, alice, allowed=())  # alice sealed it with nothing pre-approved; then mallory edits it

    def preapprove(created: dict[str, object]) -> dict[str, object]:
        request = cast(dict[str, object], created["request"])
        request["allowed_tools"] = ["Write"]
        return created

    _edit_created(postgres_dsn, clone, edited, preapprove)
    mine = enqueue(own, alice)  # the control: alice's own queued run with the same pre-approval
    worker = subprocess.Popen(
        [BEARAGENT, "worker", "-w", str(clone), "-w", str(own), "--poll", "0.1"],
        env=alice,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # generous: a loaded CI machine starts a worker slowly
        for run_id in (planted, edited):
            wait_for(lambda r=run_id: run_row(postgres_dsn, clone, r)["status"] != "queued", 120, f"run {run_id}")
        wait_for(lambda: run_row(postgres_dsn, own, mine)["status"] == "succeeded", 120, "alice's own run")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    for run_id in (planted, edited):
        refused(run_row(postgres_dsn, clone, run_id))
        assert "ToolCallRequested" not in _types(postgres_dsn, clone, run_id), "nothing ran"
    assert not (clone / "planted.txt").exists(), "neither planted pre-approval wrote anything"
    assert (own / "planted.txt").read_text() == "owned\n", "alice's own sealed run uses its pre-approval"


def _interrupted_by(root: Path, env: dict[str, str], dsn: str) -> str:
    """A real `bearagent run` of the user of `env`, killed with SIGKILL in its slow second model call: an interrupted
    run in the PostgreSQL store, recorded with that user's key."""
    proc = subprocess.Popen(
        [BEARAGENT, "run", "-w", str(root), "plant it"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    query = sql.SQL("SELECT run_id FROM {}.events WHERE event_type = 'ToolCallCompleted'").format(pg_schema(root))
    found: list[str] = []

    def read_once() -> bool:
        try:
            with psycopg.connect(dsn) as conn:
                row = conn.execute(query).fetchone()
        except psycopg.Error:  # the schema is created by the run's first write
            return False
        if row is not None:
            found.append(str(row[0]))
        return row is not None

    try:
        wait_for(read_once, 120, "the first tool call")
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    return found[0]


def _preapprove_write(dsn: str, root: Path, run_id: str, sealer: Sealer) -> None:
    """What mallory can do to her own run in the shared store: pre-approve Write, and seal that with her key."""

    def change(data: dict[str, object]) -> dict[str, object]:
        created = RunCreatedV3.model_validate(data)
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
        return {**data, "request": request.model_dump(mode="json")}

    _edit_created(dsn, root, run_id, change)


@pytest.mark.slow
def test_an_interrupted_run_of_another_user_on_postgres_is_refused_by_runs_resume(
    tmp_path: Path, postgres_dsn: str
) -> None:
    clone = workspace(tmp_path / "clone", SLOW_WRITE)
    (clone / "notes.md").write_text("notes\n")
    mallory = user_env(tmp_path / "mallory", postgres_dsn)
    alice = user_env(tmp_path / "alice", postgres_dsn)
    run_id = _interrupted_by(clone, mallory, postgres_dsn)
    _preapprove_write(postgres_dsn, clone, run_id, Sealer(tmp_path / "mallory" / "bearagent"))

    done = subprocess.run(
        [BEARAGENT, "runs", "resume", run_id, "-w", str(clone)],
        env=alice,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "not executed" in done.stderr and "not verify with your key" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert "RunResumed" not in _types(postgres_dsn, clone, run_id)
    assert not (clone / "planted.txt").exists()

    # the control: the user who recorded it resumes it from the same store (her seal verifies)
    again = subprocess.run(
        [BEARAGENT, "runs", "resume", run_id, "-w", str(clone), "--json"],
        env=mallory,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(again.stdout)["status"] == "succeeded", again.stderr
    assert (clone / "planted.txt").read_text() == "owned\n"
