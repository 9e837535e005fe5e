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

from pathlib import Path

from fastapi import FastAPI, Query
from fastapi.responses import Response

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
        ws_id: str, who: Caller, limit: int = Query(default=50, ge=1, le=200)
    ) -> dict[str, object]:
        """The workspace's top-level runs the caller may see, newest first (child runs: their parent's steps)."""
        runtime = access.readable(who, ws_id)
        ws = access.workspace(who, ws_id)
        runs = [r for r in await runtime.store.fetch_runs(limit=limit * 4) if r.parent_run_id is None]
        seen = [r for r in runs if await access.may_see(who, runtime, r)][:limit]
        return {"runs": [await run_record(access, ws, runtime, r) for r in seen]}
