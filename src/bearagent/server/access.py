"""Who may see what: the access rules every route applies, in one place.

A caller sees the workspaces its context lists; in them, its own sessions and the runs that belong to them (all of
them with `admin`). A run belongs to its root run's initiator: the session's subject, or, for a detached run
(an action), the subject that started it through this server (kept in the RunManager's memory: after a restart
only `admin` sees such a run). Anything the caller may not see is a 404, never a 403, which would confirm it exists;
a missing scope is a 403.
"""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, Header, Request

from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.state import RunProjection, SessionRecord
from bearagent.server.auth import Authenticator, AuthError, CallerContext
from bearagent.server.registry import RunManager, WorkspaceEntry
from bearagent.server.shapes import ApiError, not_found
from bearagent.service.runner import WorkspaceRuntime


async def _caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> CallerContext:
    """The request's caller: a bearer token, or a trusted proxy's identity headers (the peer is the TCP peer:
    uvicorn runs with `proxy_headers=False`, so no `X-Forwarded-For` can pose as the proxy). A coroutine, though it
    never awaits: FastAPI runs a plain function dependency on a thread of its pool, a hop there and back for every
    request, while this is a few microseconds of work (a JWT check included) with no I/O."""
    authenticator = cast(Authenticator, request.app.state.auth)
    peer = request.client.host if request.client is not None else None
    try:
        return authenticator.authenticate(authorization, peer=peer, headers=request.headers)
    except AuthError as exc:
        raise ApiError(401, "authentication", "authentication.token", str(exc)) from None


Caller = Annotated[CallerContext, Depends(_caller)]


class Access:
    def __init__(self, manager: RunManager) -> None:
        self.manager = manager

    @staticmethod
    def need(who: CallerContext, scope: str) -> None:
        if not who.has(scope):
            raise ApiError(403, "permission", "permission.scope", f"this route needs the {scope!r} scope")

    def workspace(self, who: CallerContext, ws_id: str) -> WorkspaceEntry:
        entry = self.manager.workspaces.get(ws_id)
        if entry is None or not who.may_see(ws_id):
            raise not_found("workspace", ws_id)
        return entry

    def visible(self, who: CallerContext) -> list[WorkspaceEntry]:
        return [w for w in self.manager.workspaces.values() if who.may_see(w.id)]

    def runtime_for(self, who: CallerContext, ws: WorkspaceEntry) -> WorkspaceRuntime:
        return self.manager.runtime(ws.id)

    def readable(self, who: CallerContext, ws_id: str) -> WorkspaceRuntime:
        """The caller's runtime of a workspace it may read (a listing route)."""
        self.need(who, "runs:read")
        return self.runtime_for(who, self.workspace(who, ws_id))

    async def find_session(
        self, who: CallerContext, ref: str
    ) -> tuple[WorkspaceEntry, WorkspaceRuntime, SessionRecord]:
        try:
            session_id = SessionId(ref)
        except (TypeError, ValueError):
            raise not_found("session", ref) from None
        for ws in self.visible(who):
            runtime = self.runtime_for(who, ws)
            record = await runtime.store.fetch_session(session_id)
            if record is not None and (record.caller == who.subject_ref or who.has("admin")):
                return ws, runtime, record
        raise not_found("session", ref)

    async def find_run(self, who: CallerContext, ref: str) -> tuple[WorkspaceEntry, WorkspaceRuntime, RunProjection]:
        try:
            run_id = RunId(ref)
        except (TypeError, ValueError):
            raise not_found("run", ref) from None
        for ws in self.visible(who):
            runtime = self.runtime_for(who, ws)
            run = await runtime.store.fetch_run(run_id)
            if run is None:
                continue
            if await self.may_see(who, runtime, run):
                return ws, runtime, run
        raise not_found("run", ref)

    async def may_see(self, who: CallerContext, runtime: WorkspaceRuntime, run: RunProjection) -> bool:
        return who.has("admin") or await self.initiator(runtime, run) == who.subject_ref

    async def root_of(self, runtime: WorkspaceRuntime, run: RunProjection) -> RunProjection:
        root = run
        seen = {root.run_id}
        while root.parent_run_id is not None and root.parent_run_id not in seen:
            parent = await runtime.store.fetch_run(root.parent_run_id)
            if parent is None:
                break
            seen.add(parent.run_id)
            root = parent
        return root

    async def initiator(self, runtime: WorkspaceRuntime, run: RunProjection) -> str | None:
        """The subject a run belongs to: its root run's session's subject, else the one that started the root run
        through this server; None when neither is known (a detached run from the CLI, or from before a restart)."""
        root = await self.root_of(runtime, run)
        if root.request is not None and root.request.initiator_ref:
            return root.request.initiator_ref
        if root.session_id is not None:
            session = await runtime.store.fetch_session(root.session_id)
            return session.caller if session is not None else None
        return self.manager.owner_of(root.run_id)
