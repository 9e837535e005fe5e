"""`POST /v1/sessions/{id}/rewind` and `POST /v1/sessions/{id}/fork`: the session's files and conversation put
back to a point of its log, and a new session from that point, with the rules of `bearagent rewind` and
`bearagent sessions fork` (`service/rewinding.py`; docs/rewind.md, docs/server.md). Scope `runs:write`, on the
caller's own sessions (an admin: any). `GET /v1/runs/{id}/diff[?tool_call_id=]`: a run's recorded file changes as
diffs (`service/file_diffs.py`, as `bearagent runs diff`), scope `runs:read`."""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from bearagent.domain.ids import RunId
from bearagent.domain.state import RunProjection, SessionRecord
from bearagent.rewind.capture import capture_for
from bearagent.server.access import Access, Caller
from bearagent.server.records import session_record
from bearagent.server.shapes import ApiError, not_found
from bearagent.service.file_diffs import files_diff
from bearagent.service.rewinding import (
    apply_files,
    files_at_fork,
    fork_point,
    fork_record,
    prepare_rewind,
    record_rewind,
)
from bearagent.service.runner import WorkspaceRuntime


class RewindRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str | None = Field(
        default=None, max_length=64, description="The run to go back to the state before; default: the latest run."
    )
    tool_call_id: str | None = Field(
        default=None, max_length=64, description="Before this tool call of the run (its id, or 8+ leading characters)."
    )
    sequence: int | None = Field(default=None, ge=1, description="Before this event of the run (its sequence).")
    restore: Literal["both", "code", "conversation"] = Field(
        default="both", description="What to put back: the files (code), the conversation, or both."
    )
    dry_run: bool = Field(default=False, description="Say what would change; change nothing.")
    force: bool = Field(
        default=False, description="Overwrite files changed since by someone else (their content is kept)."
    )


class ForkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str | None = Field(
        default=None, max_length=64, description="Fork after this run; default: the conversation as it is now."
    )
    sequence: int | None = Field(default=None, ge=1, description="Fork after this event of the run (its sequence).")
    restore_files: bool = Field(default=False, description="Also put the files back as they were at that point.")
    force: bool = Field(default=False, description="With restore_files: overwrite files changed since by others.")


async def _run_of(runtime: WorkspaceRuntime, record: SessionRecord, ref: str | None) -> RunProjection | None:
    """The session's run `ref` (None: its latest top-level run; None back when it has none)."""
    if ref is None:
        runs = [
            r
            for r in await runtime.store.fetch_runs(session_id=record.session_id, limit=10_000)
            if r.parent_run_id is None
        ]
        return max(runs, key=lambda r: r.created_at) if runs else None
    try:
        run = await runtime.store.fetch_run(RunId(ref))
    except (TypeError, ValueError):
        run = None
    if run is None or run.session_id != record.session_id:
        raise not_found("run", ref)
    return run


def register(app: FastAPI, access: Access) -> None:
    need = access.need

    @app.post("/v1/sessions/{session_id}/rewind")
    async def rewind_session(session_id: str, body: RewindRequest, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        """Put the session's files and/or conversation back as they were before a run, a tool call or an event.
        A file changed since by someone else stops the rewind (409, naming it) unless `force`."""
        need(who, "runs:write")
        _, runtime, record = await access.find_session(who, session_id)
        run = await _run_of(runtime, record, body.run_id)
        if run is None:
            raise ApiError(400, "invalid_request", "rewind.empty_session", "the session has no run to rewind")
        if body.tool_call_id is not None and body.sequence is not None:
            raise ApiError(
                400, "invalid_request", "rewind.point", "name the point once: tool_call_id or sequence, not both"
            )
        root = runtime.loaded.root
        code = body.restore in ("both", "code")
        conversation = body.restore in ("both", "conversation")
        prepared = await asyncio.to_thread(
            prepare_rewind,
            runtime.store,
            root,
            run,
            to_tool_call=body.tool_call_id,
            to_sequence=body.sequence,
            code=code,
            conversation=conversation,
            sessions=runtime.sessions,
        )
        conv = prepared.conversation
        answer: dict[str, object] = {
            "session_id": str(record.session_id),
            "run_id": str(run.run_id),
            "dry_run": body.dry_run,
            "changes": prepared.listing,
            "conflicts": list(prepared.conflicts),
            "forced": [],
            "conversation": None if conv is None else {"run_id": str(conv.to_run_id), "sequence": conv.to_sequence},
            "nothing_to_do": prepared.nothing_to_do,
        }
        if body.dry_run or prepared.nothing_to_do:
            return answer
        capture = capture_for(root)
        rewound = await asyncio.to_thread(apply_files, prepared, root, capture.blobs, force=body.force)
        if rewound is not None:
            capture.forget()
            answer["forced"] = list(rewound.forced)
        await record_rewind(runtime.store, runtime.writer, runtime.clock, runtime.ids, prepared, rewound)
        return answer

    @app.get("/v1/runs/{run_id}/diff")
    async def run_files_diff(  # pyright: ignore[reportUnusedFunction]
        run_id: str, who: Caller, tool_call_id: str | None = None
    ) -> dict[str, object]:
        """The file changes the run recorded (only those of `tool_call_id`, its id or 8+ leading characters) as
        unified diffs, bounded: at most 50 paths and 200,000 bytes of diff text; `cut` says what was left out."""
        need(who, "runs:read")
        if tool_call_id is not None and not 8 <= len(tool_call_id) <= 64:
            raise ApiError(400, "invalid_request", "diff.tool_call", "tool_call_id: a tool call id or 8+ characters")
        _, runtime, run = await access.find_run(who, run_id)
        found = await asyncio.to_thread(files_diff, runtime.store, runtime.loaded.root, run.run_id, tool_call_id)
        return dict(found.to_json())

    @app.post("/v1/sessions/{session_id}/fork", status_code=201)
    async def fork_session(session_id: str, body: ForkRequest, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        """A new session of the caller whose history is this session's conversation up to a run or an event."""
        need(who, "runs:write")
        ws, runtime, record = await access.find_session(who, session_id)
        run = await _run_of(runtime, record, body.run_id) if body.run_id is not None else None
        if body.sequence is not None and run is None:
            raise ApiError(400, "invalid_request", "fork.point", "sequence names an event of run_id: give run_id too")
        point = await asyncio.to_thread(fork_point, runtime.store, record, run, body.sequence)
        new = fork_record(runtime.sessions, record, point, caller=who.subject_ref)
        new = new.model_copy(update={"auth_context": who.snapshot()})
        restored: list[dict[str, object]] = []
        if body.restore_files:
            root = runtime.loaded.root
            prepared = await asyncio.to_thread(files_at_fork, runtime.store, root, point)
            if prepared is not None:
                capture = capture_for(root)
                rewound = await asyncio.to_thread(apply_files, prepared, root, capture.blobs, force=body.force)
                restored = prepared.listing
                if rewound is not None:
                    capture.forget()
                    await record_rewind(runtime.store, runtime.writer, runtime.clock, runtime.ids, prepared, rewound)
        created = await runtime.store.insert_session(new)
        answer = await session_record(access, ws, runtime, created)
        return {**answer, "forked_from": point.model_dump(mode="json"), "restored": restored}
