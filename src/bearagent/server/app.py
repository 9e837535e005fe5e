"""`bearagent serve`: the HTTP API of SPEC §16 as a FastAPI app (OpenAPI 3.1 at `/openapi.json`, docs at `/docs`).

FastAPI over plain Starlette because the request and response models are the documentation: the OpenAPI schema
clients and schemathesis read is generated from the same types the handlers use. Every route under `/v1` needs a
caller (`auth.py`: a bearer token, or a trusted proxy's headers); a workspace, session or run the caller may not
see is a 404 (never a 403, which would confirm it exists), a missing scope a 403 (`access.py`). Errors are
`{"error": {category, code, message, retryable}}`, never a traceback. This module makes the app (lifespan, error
handlers, the body limit); the routes are `routes.py` (resources), `streams.py` (events, the workspace feed) and
`approvals.py`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from bearagent.domain.errors import BearAgentError
from bearagent.server import a2a, approvals, rewind_routes, routes, streams, ui
from bearagent.server.access import Access
from bearagent.server.auth import Authenticator
from bearagent.server.edges import BodyLimit
from bearagent.server.feed import Feeds
from bearagent.server.registry import RunManager
from bearagent.server.shapes import STATUS_OF, ApiError, error_response
from bearagent.server.sse import StreamSlots
from bearagent.server.workspace_records import record_served

_log = logging.getLogger("bearagent.server")


def create_app(
    manager: RunManager,
    auth: Authenticator,
    *,
    max_body_bytes: int = 1_048_576,
    max_active_runs_per_caller: int = 8,
    max_sse_per_caller: int = 16,
    sse_idle_timeout_s: float = 300.0,
    resume_on_start: bool = False,
    body_timeout_s: float = 60.0,
) -> FastAPI:
    feeds = Feeds(lambda ws: manager.runtime(ws).store, manager.runtimes_of)
    manager.on_runtime(feeds.runtime_made)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncGenerator[None]:
        manager.workspace_records.update(await record_served(manager))
        manager.start_worker()
        if resume_on_start:  # runs interrupted by a crash (and answered waiting ones) continue here
            resumed = await manager.resume_interrupted()
            if resumed:
                _log.warning("resumed %d interrupted run(s): %s", len(resumed), ", ".join(str(r)[:8] for r in resumed))
        yield
        await feeds.aclose()
        await manager.aclose()

    app = FastAPI(title="BearAgent", version="1", lifespan=lifespan)
    app.state.auth = auth

    @app.exception_handler(ApiError)
    async def _api_error(_r: Request, exc: ApiError) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        return error_response(exc.status, exc.category, exc.code, exc.message, exc.retryable)

    @app.exception_handler(BearAgentError)
    async def _bear_error(_r: Request, exc: BearAgentError) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        info = exc.info
        message = info.message + (f" (fix: {exc.hint})" if exc.hint else "")
        return error_response(STATUS_OF.get(info.category, 500), info.category, info.code, message, info.retryable)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_r: Request, exc: RequestValidationError) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return error_response(422, "validation", "validation.request", f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_r: Request, exc: StarletteHTTPException) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        return error_response(exc.status_code, "invalid_request", f"http.{exc.status_code}", str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_r: Request, exc: Exception) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        return error_response(
            500, "internal", "internal.unexpected", f"internal error ({type(exc).__name__}); see the server log"
        )

    # chunked and slow bodies too, before auth (server/edges.py)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, timeout_s=body_timeout_s)

    access = Access(manager)
    routes.register(app, access, max_active_runs_per_caller=max_active_runs_per_caller)
    slots = StreamSlots(max_sse_per_caller)  # one count per caller for every SSE route (runs, feed, A2A)
    streams.register(app, access, feeds, slots, idle_s=sse_idle_timeout_s)
    approvals.register(app, access)
    rewind_routes.register(app, access)  # rewind and fork a session (rewind_routes.py)
    # A2A v1.0: agent cards and the JSON-RPC binding (a2a.py)
    a2a.register(app, access, slots, max_active_runs_per_caller=max_active_runs_per_caller)
    ui.mount(app, access)  # the run inspector page at /ui (ui.py)
    _document_errors(app)
    return app


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["category", "code", "message", "retryable"],
            "properties": {
                "category": {"type": "string"},
                "code": {"type": "string"},
                "message": {"type": "string"},
                "retryable": {"type": "boolean"},
            },
        }
    },
}


def _document_errors(app: FastAPI) -> None:
    """Make `/openapi.json` tell the truth about errors: every operation may answer the error shape (`default`,
    for 400/401/403/404/409/413/429/...), and its 422 is that shape too, not FastAPI's `{detail: [...]}`."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        schema.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
        error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
        for item in schema.get("paths", {}).values():
            for operation in item.values():
                responses = operation.setdefault("responses", {})
                if "422" in responses:
                    responses["422"] = {"description": "The request is invalid", "content": error}
                responses["default"] = {"description": "An error", "content": error}
        app.openapi_schema = schema
        return schema

    app.openapi = openapi
