"""`GET /health` of a real `bearagent serve`: without a token, per served workspace its store's backend, schema
version and queued/running counts, on SQLite and on PostgreSQL (`BEARAGENT_DATABASE_URL` alone), an unreadable
store as `degraded`; never an id, a path, a prompt or the DSN (its password in no response and no server output)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from tests.server.test_http_api import RELEASE, SCRIPT, SLOW, TOKEN, start, wait_for
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.store import schema as sqlite_schema
from bearagent.store.postgres import schema as pg_schema

SECRET = "h3alth-s3cret-pw"
PROMPT = "a prompt that must not show in health"
STORE_KEYS = {"backend", "status", "schema_version", "supported_version", "queued", "running"}


@dataclass
class Served:
    base: str
    proc: subprocess.Popen[str]
    roots: tuple[Path, Path]

    def client(self, token: str | None = TOKEN) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=30)

    def stop(self) -> str:
        """Terminate it; everything it printed."""
        self.proc.terminate()
        out, err = self.proc.communicate(timeout=20)
        return out + err


def serve(tmp_path: Path, **env: str) -> Served:
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
    one = scripted_workspace(tmp_path / "alpha", SCRIPT, agents=agents)
    two = scripted_workspace(tmp_path / "beta", SLOW, agents=agents)
    server = start(
        tmp_path, config=f"workspaces:\n  - {{id: alpha, path: {one}}}\n  - {{id: beta, path: {two}}}\n", env=env
    )
    return Served(server.base, server.proc, (one, two))


@pytest.fixture
def sqlite_server(tmp_path: Path) -> Iterator[Served]:
    served = serve(tmp_path)
    try:
        yield served
    finally:
        if served.proc.poll() is None:
            served.stop()


Body = dict[str, Any]


def health_until(served: Served, check: Callable[[Body], bool], timeout_s: float = 20) -> Body:
    """`/health` (no token), polled until `check(body)` holds (reports are cached for 2 s)."""
    deadline = time.monotonic() + timeout_s
    with served.client(None) as anonymous:
        while True:
            response = anonymous.get("/health")
            assert response.status_code == 200
            body: Body = response.json()
            if check(body) or time.monotonic() > deadline:
                return body
            time.sleep(0.2)


def start_run(client: httpx.Client, ws: str) -> tuple[str, str]:
    session = client.post(f"/v1/workspaces/{ws}/sessions", json={}).json()["id"]
    accepted = client.post(f"/v1/sessions/{session}/runs", json={"prompt": PROMPT})
    assert accepted.status_code == 202, accepted.text
    return session, accepted.json()["run_id"]


def assert_tells_nothing(body: Body, served: Served, *secrets: str) -> None:
    text = json.dumps(body)
    for secret in (PROMPT, "alpha", "beta", str(served.roots[0]), str(served.roots[1]), *secrets):
        assert secret not in text, f"/health shows {secret!r}: {text}"
    stores: list[Body] = body["stores"]
    for store in stores:
        assert set(store) <= {*STORE_KEYS, "error"}


@pytest.mark.slow
def test_health_reports_each_sqlite_store_without_auth(sqlite_server: Served) -> None:
    with sqlite_server.client() as client:
        session_a, done = start_run(client, "alpha")
        wait_for(client, done)
        session_b, slow = start_run(client, "beta")

        def running_in_beta(body: Body) -> bool:
            stores: list[Body] = body["stores"]
            assert len(stores) == 2
            return stores[1]["running"] == 1

        body = health_until(sqlite_server, running_in_beta)
        assert body["status"] == "ok" and body["workspaces"] == 2
        alpha, beta = body["stores"]
        assert alpha == {
            "backend": "sqlite",
            "status": "ok",
            "schema_version": sqlite_schema.SCHEMA_VERSION,
            "supported_version": sqlite_schema.SCHEMA_VERSION,
            "queued": 0,
            "running": 0,
        }
        assert (beta["backend"], beta["running"], beta["queued"]) == ("sqlite", 1, 0)
        # the server's own worker: its slots, the run it finished and the one it executes now
        assert body["worker"]["concurrency"] == 16 and body["worker"]["in_flight"] == 1
        assert body["worker"]["started"] >= 1
        assert_tells_nothing(body, sqlite_server, session_a, session_b, done, slow)
        (sqlite_server.roots[1] / ".bearagent" / RELEASE).touch()  # SLOW's turn is held until this file exists
        wait_for(client, slow)
    body = health_until(sqlite_server, lambda b: b["stores"][1]["running"] == 0)
    assert body["stores"][1]["running"] == 0
    assert body["worker"]["in_flight"] == 0 and body["worker"]["started"] == 2


def test_health_on_postgres_never_shows_the_dsn(tmp_path: Path, postgres_dsn: str) -> None:
    served = serve(tmp_path, BEARAGENT_DATABASE_URL=f"{postgres_dsn} password={SECRET}")
    try:
        with served.client() as client:
            session, run = start_run(client, "alpha")
            wait_for(client, run)
        body = health_until(
            served,
            lambda b: all(s.get("schema_version") == pg_schema.SCHEMA_VERSION for s in b["stores"]),
        )
        assert body["status"] == "ok"
        for store in body["stores"]:
            assert store == {
                "backend": "postgres",
                "status": "ok",
                "schema_version": pg_schema.SCHEMA_VERSION,
                "supported_version": pg_schema.SCHEMA_VERSION,
                "queued": 0,
                "running": 0,
            }
        dbname = postgres_dsn.rsplit("dbname=", 1)[1]
        assert_tells_nothing(body, served, SECRET, dbname, session, run)
    finally:
        printed = served.stop()
    assert SECRET not in printed


def test_an_unreachable_store_makes_health_degraded(tmp_path: Path) -> None:
    dsn = f"postgresql://agent:{SECRET}@127.0.0.1:1/runs?connect_timeout=2&sslmode=disable"
    served = serve(tmp_path, BEARAGENT_DATABASE_URL=dsn)
    try:
        with served.client(None) as anonymous:
            response = anonymous.get("/health")
        assert response.status_code == 200
        body: Body = response.json()
        assert body["status"] == "degraded"
        assert body["stores"] == [{"backend": "postgres", "status": "error", "error": "storage.unreachable"}] * 2
        assert_tells_nothing(body, served, SECRET, "127.0.0.1:1")
    finally:
        printed = served.stop()
    assert SECRET not in printed


# ---- the report itself, in process ---------------------------------------------------------------------------------


class _Manager:
    """What health reads of a RunManager: the workspaces and a runtime per workspace (its loaded workspace)."""

    def __init__(self, loaded: object) -> None:
        from bearagent.service.worker import Worker

        self.workspaces = {"one": object(), "two": object()}
        self._loaded = loaded
        self.worker = Worker(lambda: [], lambda ws: cast(Any, None), concurrency=0)

    def runtime(self, workspace_id: str) -> object:
        return type("Runtime", (), {"loaded": self._loaded})()


def test_reports_are_cached_shared_and_survive_unexpected_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from tests.support.config_ws import load

    from bearagent.app import store_status
    from bearagent.server import health

    root = tmp_path / "ws"
    (root / ".bearagent").mkdir(parents=True)
    manager = _Manager(load(root, tmp_path / "home"))
    reads: list[str] = []
    real = store_status.read_status

    async def counted(loaded: Any, **kwargs: float) -> store_status.StoreStatus:
        reads.append("read")
        await asyncio.sleep(0.05)
        return await real(loaded, **kwargs)

    monkeypatch.setattr(store_status, "read_status", counted)

    async def go() -> list[Body]:
        return list(await asyncio.gather(*(health.health_report(manager) for _ in range(5))))  # pyright: ignore[reportArgumentType]

    bodies = asyncio.run(go())
    assert len(reads) == 2, "five callers at once: one read per workspace"
    assert all(b == bodies[0] for b in bodies) and bodies[0]["status"] == "ok"
    assert [s["schema_version"] for s in bodies[0]["stores"]] == [None, None]  # nothing there yet, nothing created
    assert not (root / ".bearagent" / "state.db").exists()
    asyncio.run(health.health_report(manager))  # pyright: ignore[reportArgumentType]
    assert len(reads) == 2, "within the TTL the report is reused"

    async def broken(loaded: Any, **kwargs: float) -> store_status.StoreStatus:
        raise RuntimeError("a bug, not a storage error")

    monkeypatch.setattr(store_status, "read_status", broken)
    monkeypatch.setattr(health, "TTL_S", 0.0)
    body = asyncio.run(health.health_report(manager))  # pyright: ignore[reportArgumentType]
    assert body["status"] == "degraded"
    assert body["stores"] == [{"backend": "sqlite", "status": "error", "error": "internal.health"}] * 2
