"""`GET /health` beyond "the process answers": per served workspace, its store's backend, schema version and how
many runs are queued and running. The route needs no auth, so it says nothing a caller could not be told: counts and
versions only, no workspace id, path, DSN, run id or prompt. The stores are read without creating or migrating
anything (`app/store_status.py`), on their own short connections, all at once; reports are kept for `TTL_S`, and one
read at a time serves every caller meanwhile, so polling `/health` cannot multiply connections to the database."""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import TYPE_CHECKING

from bearagent.domain.errors import BearAgentError

if TYPE_CHECKING:
    from bearagent.server.registry import RunManager

_log = logging.getLogger("bearagent.server.health")

TTL_S = 2.0
CONNECT_TIMEOUT_S = 5.0


class HealthReports:
    """The latest report of one server's workspaces, refreshed at most every `TTL_S`."""

    def __init__(self, manager: RunManager) -> None:
        self._manager = manager
        self._report: list[dict[str, object]] | None = None
        self._at = 0.0
        self._lock = asyncio.Lock()

    async def stores(self) -> list[dict[str, object]]:
        async with self._lock:
            if self._report is None or time.monotonic() - self._at > TTL_S:
                self._report = list(await asyncio.gather(*(self._one(ws) for ws in self._manager.workspaces)))
                self._at = time.monotonic()
            return self._report

    async def _one(self, workspace_id: str) -> dict[str, object]:
        from bearagent.app.store_status import read_status

        loaded = self._manager.runtime(workspace_id).loaded
        try:
            found = await read_status(loaded, connect_timeout_s=CONNECT_TIMEOUT_S)
        except BearAgentError as exc:
            return {"backend": loaded.config.store.backend, "status": "error", "error": exc.info.code}
        except Exception:  # a health check answers; the server log has the traceback
            _log.exception("reading the store of workspace %s for /health failed", workspace_id)
            return {"backend": loaded.config.store.backend, "status": "error", "error": "internal.health"}
        return {
            "backend": found.backend,
            "status": "error" if found.state == "newer" else "ok",
            "schema_version": found.version,
            "supported_version": found.supported,
            "queued": found.runs.get("queued", 0),
            "running": found.runs.get("running", 0),
        }


_reports: weakref.WeakKeyDictionary[RunManager, HealthReports] = weakref.WeakKeyDictionary()


async def health_report(manager: RunManager) -> dict[str, object]:
    """`{status, workspaces, stores: [...], worker}`: `status` is `ok` when every store could be read and is not
    newer than this BearAgent, else `degraded`; `stores` lists the served workspaces in the server's order; `worker`
    is this process's own (`serve --workers`): its slots and what it started, resumed, lost to another worker, failed
    to start, and executes now (counts only)."""
    reports = _reports.get(manager)
    if reports is None:
        reports = _reports[manager] = HealthReports(manager)
    stores = await reports.stores()
    status = "ok" if all(s["status"] == "ok" for s in stores) else "degraded"
    worker = manager.worker
    return {
        "status": status,
        "workspaces": len(manager.workspaces),
        "stores": stores,
        "worker": {"concurrency": worker.concurrency, **worker.stats.to_json()},
    }
