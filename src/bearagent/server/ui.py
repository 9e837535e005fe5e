"""The run inspector page at `/ui`: a static page (HTML, one script, one stylesheet shipped in `ui/`, no build step,
nothing from another origin) that lists a workspace's runs and shows one run's live timeline over the API.

The page holds no privilege of its own: it asks for a token, keeps it in `sessionStorage` and calls the `/v1`
routes with it like any client (the SSE stream through `fetch`, since `EventSource` cannot send a header). Every
response here carries a strict Content-Security-Policy (`default-src 'self'`, no inline script or style): run text
is untrusted and the page inserts it with `textContent` only, so the policy is the second wall, not the first.

`GET /v1/workspaces/{ws}/runs` (the runs the page lists) is served from here: the API had no route listing a
workspace's runs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fastapi import FastAPI, Query
from fastapi.responses import Response

from bearagent.domain.search import MAX_HITS, MAX_QUERY_CHARS, RunSearch, RunSearchHit
from bearagent.domain.state import RunStatus
from bearagent.server.access import Access, Caller
from bearagent.server.records import run_record

STATIC = Path(__file__).with_name("ui")
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
FILES = {
    "index.html": "text/html; charset=utf-8",
    "inspector.js": "text/javascript; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
}
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


def _file(name: str) -> Response:
    return Response((STATIC / name).read_bytes(), media_type=FILES[name], headers=HEADERS)


def mount(app: FastAPI, access: Access) -> None:
    @app.get("/ui", include_in_schema=False)
    async def page() -> Response:  # pyright: ignore[reportUnusedFunction]
        return _file("index.html")

    @app.get("/ui/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:  # pyright: ignore[reportUnusedFunction]
        if name not in FILES:
            return Response("not found", status_code=404, media_type="text/plain", headers=HEADERS)
        return _file(name)

    @app.get("/v1/workspaces/{ws_id}/runs")
    async def list_runs(  # pyright: ignore[reportUnusedFunction]
        ws_id: str,
        who: Caller,
        limit: int = Query(default=50, ge=1, le=200),
        q: str | None = Query(default=None, max_length=MAX_QUERY_CHARS),
        status: RunStatus | None = None,
        agent: str | None = Query(default=None, max_length=256),
        since: datetime | None = None,
    ) -> dict[str, object]:
        """The workspace's top-level runs the caller may see, newest first (child runs: their parent's steps).

        `q` searches the runs' prompts, answers, tool calls and results for every word (`bearagent runs search`);
        each run found carries `match` (the event that matched best and a snippet). `status`, `agent` and `since`
        (an ISO time) narrow either listing."""
        runtime = access.readable(who, ws_id)
        ws = access.workspace(who, ws_id)
        if since is not None and since.tzinfo is None:
            since = since.replace(tzinfo=UTC)
        matches: dict[str, RunSearchHit] = {}
        if q is not None:
            query = RunSearch.of(q, agent=agent, status=status, since=since, limit=min(MAX_HITS, limit * 4))
            hits = await runtime.store.fetch_search(query)
            matches = {str(hit.run_id): hit for hit in hits}
            runs = [run for hit in hits if (run := await runtime.store.fetch_run(hit.run_id)) is not None]
        else:
            runs = list(await runtime.store.fetch_runs(status=status, limit=limit * 4))
            runs = [
                r
                for r in runs
                if (agent is None or (r.effective_agent_name or r.agent_name) == agent)
                and (since is None or r.created_at >= since)
            ]
        runs = [r for r in runs if r.parent_run_id is None]
        seen = [r for r in runs if await access.may_see(who, runtime, r)][:limit]
        records: list[dict[str, object]] = []
        for run in seen:
            record = dict(await run_record(access, ws, runtime, run))
            hit = matches.get(str(run.run_id))
            if hit is not None:
                record["match"] = {"sequence": hit.sequence, "event_type": hit.event_type, "snippet": hit.snippet}
            records.append(record)
        return {"runs": records}
