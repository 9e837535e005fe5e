"""MCP elicitation as a question anyone allowed to answer the run's approvals can answer: the log's
`ElicitationRequested` / `ElicitationResolved` facts, the asker of a run nobody attached answers for, and the answer.

A server run (or `bearagent run --wait-approvals`) whose MCP server asks a question mid-call records
`ElicitationRequested` and keeps the call open: unlike a tool approval it cannot let go of the run, because the server
waits for the answer inside the call. The question is listed with the approvals (`GET .../approvals`, `bearagent
approvals list`) and answered once through the same door (`POST /v1/runs/{id}/approvals/{elicitation_id}`, `bearagent
approvals answer`): `answer_elicitation` checks the answer against the server's form and appends
`ElicitationResolved` to the log; the waiting call reads it there (so an answer from another process counts too) and
sends it to the server. The wait is bounded (`wait_s`): then BearAgent declines, recorded as answered by `nobody`, and
the model reads the declined question. Cancelling the run ends the wait with the run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.run_events import ElicitAnswerAction, ElicitationRequestedV1, ElicitationResolvedV1
from bearagent.domain.state import RunProjection
from bearagent.mcp.elicitation import ElicitationAnswer, ElicitationQuestion, PersonAsker, checked_content
from bearagent.ports import ToolContext
from bearagent.runtime.run_context import current_run
from bearagent.service.facts import append_outside_loop

if TYPE_CHECKING:
    from bearagent.service.host import ResumeHost

DEFAULT_WAIT_S = 900.0
"""How long a run waits for someone to answer an MCP server's question before BearAgent declines it."""
POLL_S = 0.2
TRIES = 5

FetchEvents = Callable[[RunId, int], Awaitable[Sequence[Event]]]


def elicitations_of(run: RunProjection, events: Sequence[Event]) -> list[dict[str, JsonValue]]:
    """Every question the run's MCP servers asked, in order, with its answer when it has one. Pure. The shape of an
    approval record (`server/approvals.py`) with `kind: "elicitation"`, so one list holds both."""
    out: list[dict[str, JsonValue]] = []
    by_id: dict[str, dict[str, JsonValue]] = {}
    for event in events:
        payload = event.payload
        if event.event_type == "ElicitationRequested":
            elicitation_id = str(payload.get("elicitation_id", ""))
            record: dict[str, JsonValue] = {
                "kind": "elicitation",
                "run_id": str(run.run_id),
                "session_id": str(run.session_id) if run.session_id is not None else None,
                "approval_id": elicitation_id,
                "tool_call_id": payload.get("tool_call_id"),
                "tool": payload.get("tool_name"),
                "server": payload.get("server"),
                "reason": payload.get("message", ""),
                "mode": payload.get("mode", "form"),
                "requested_schema": payload.get("requested_schema"),
                "url": payload.get("url"),
                "choices": ["accept", "decline", "cancel"],
                "requested_at": event.occurred_at.isoformat(),
                "status": "pending",
                "decision": None,
                "content": None,
                "answered_by": None,
                "answered_at": None,
                "message": None,
            }
            by_id[elicitation_id] = record
            out.append(record)
        elif event.event_type == "ElicitationResolved":
            found = by_id.get(str(payload.get("elicitation_id", "")))
            if found is not None:
                found.update(
                    status="answered",
                    decision=payload.get("action"),
                    content=payload.get("content"),
                    answered_by=payload.get("answered_by"),
                    answered_at=event.occurred_at.isoformat(),
                    message=payload.get("message"),
                )
    return [thaw_json_mapping(r) for r in out]


def pending_elicitations(run: RunProjection, events: Sequence[Event]) -> list[dict[str, JsonValue]]:
    """The questions a running run waits for an answer to (none once it is not running: its process is gone)."""
    if run.status != "running":
        return []
    return [e for e in elicitations_of(run, events) if e["status"] == "pending"]


def _resolution(events: Sequence[Event], elicitation_id: str) -> ElicitationResolvedV1 | None:
    for event in events:
        if event.event_type == "ElicitationResolved" and event.payload.get("elicitation_id") == elicitation_id:
            return ElicitationResolvedV1.model_validate(dict(event.payload))
    return None


def logged_asker(
    fetch_events: FetchEvents, new_id: Callable[[], str], *, wait_s: float = DEFAULT_WAIT_S
) -> PersonAsker:
    """The asker of a run nobody attached answers for (see the module docstring): records the question, waits for
    its answer in the log (at most `wait_s`), declines when none came."""

    async def ask(question: ElicitationQuestion, context: ToolContext) -> ElicitationAnswer | None:
        run = current_run.get()
        if run is None:  # not inside a run's tool call: nobody to ask
            return None
        recorder = run.recorder
        elicitation_id = f"el_{new_id()}"
        asked = await recorder.append(
            ElicitationRequestedV1(
                elicitation_id=elicitation_id,
                tool_call_id=context.tool_call_id,
                tool_name=None,
                server=question.server,
                message=question.message,
                mode=question.mode,
                requested_schema=question.requested_schema,
                url=question.url,
                wait_s=wait_s,
            )
        )
        run.observer.notice(
            recorder.run_id,
            f"MCP server {question.server} asks: {question.message} (answer {elicitation_id}: "
            f"bearagent approvals answer {recorder.run_id} {elicitation_id} accept|decline|cancel)",
        )
        started = time.monotonic()
        after = asked.last_sequence
        try:
            while True:
                found = _resolution(await fetch_events(recorder.run_id, after), elicitation_id)
                if found is None and time.monotonic() - started >= wait_s:
                    try:
                        await recorder.append(
                            ElicitationResolvedV1(
                                elicitation_id=elicitation_id,
                                action="decline",
                                answered_by="nobody",
                                message=f"nobody answered within {wait_s:g} s",
                                waited_ms=int((time.monotonic() - started) * 1000),
                            )
                        )
                        return ElicitationAnswer("decline", None, answered_by="nobody")
                    except BearAgentError as exc:  # an answer came in just now: it wins
                        if exc.info.category != "conflict":
                            raise
                        await recorder.load()
                        continue
                if found is not None:
                    await recorder.load()  # appends go on after the answer someone else appended
                    return ElicitationAnswer(
                        found.action,
                        dict(found.content) if found.content is not None else None,
                        answered_by="person",
                    )
                await asyncio.sleep(POLL_S)
        finally:
            run.extend_deadline(time.monotonic() - started)  # the wait is not the run's work

    return ask


def _refuse(category: str, code: str, message: str, hint: str) -> BearAgentError:
    return BearAgentError(ErrorInfo.of(category, code, message), hint=hint)  # pyright: ignore[reportArgumentType]


async def answer_elicitation(
    runtime: ResumeHost,
    run_id: RunId,
    elicitation_id: str,
    action: ElicitAnswerAction,
    content: object,
    *,
    answered_by: str,
    message: str | None = None,
) -> RunProjection:
    """Record the answer to the MCP server question `elicitation_id` the running run waits for, once. Refusals:
    `invalid_request.no_pending_elicitation` (the run does not wait for it: finished, interrupted, never asked),
    `invalid_request.already_answered`, `validation.elicitation_content` (naming the field that does not fit)."""
    for _ in range(TRIES):
        run = await runtime.store.fetch_run(run_id)
        if run is None:
            raise _refuse("not_found", "run", f"there is no run {run_id} in this workspace", "`bearagent runs list`")
        events = list(await runtime.store.fetch_events(run_id))
        asked = next(
            (e for e in elicitations_of(run, events) if e["approval_id"] == elicitation_id),
            None,
        )
        if asked is None:
            raise _refuse(
                "invalid_request",
                "no_pending_elicitation",
                f"run {run_id} has no question {elicitation_id} from an MCP server",
                f"`GET /v1/runs/{run_id}/approvals` or `bearagent approvals list` shows what it waits for",
            )
        if asked["status"] == "answered":
            raise _refuse(
                "invalid_request",
                "already_answered",
                f"question {elicitation_id} of run {run_id} was already answered "
                f"({asked['decision']} by {asked['answered_by']})",
                f"see the answer: GET /v1/runs/{run_id}/approvals",
            )
        if run.status != "running":
            raise _refuse(
                "invalid_request",
                "no_pending_elicitation",
                f"run {run_id} is {run.status}: the MCP server's question {elicitation_id} went with the call "
                "that asked it",
                "a resumed run asks again if its server does",
            )
        schema = asked.get("requested_schema")
        try:
            checked = checked_content(
                action,
                content,
                schema if isinstance(schema, dict) else None,
                url_mode=asked.get("mode") == "url",
            )
        except ValueError as exc:
            raise _refuse(
                "validation",
                "elicitation_content",
                f"the answer to question {elicitation_id} of run {run_id} does not fit the server's form: {exc}",
                "send `content` with the fields of `requested_schema` (GET /v1/runs/{run_id}/approvals shows it)",
            ) from None
        asked_at = datetime.fromisoformat(str(asked["requested_at"]))
        answer = ElicitationResolvedV1(
            elicitation_id=elicitation_id,
            action=action,
            content=checked,
            answered_by=answered_by,
            message=message,
            waited_ms=max(0, (runtime.clock.now() - asked_at) // timedelta(milliseconds=1)),
        )
        try:
            return await append_outside_loop(
                runtime.writer, runtime.clock, runtime.ids, run_id, run.last_sequence, (answer,)
            )
        except BearAgentError as exc:
            if exc.info.category != "conflict":
                raise
            # the run appended something meanwhile: read it again (it may have been answered, or ended)
    raise _refuse(
        "conflict",
        "busy",
        f"run {run_id} kept writing while the answer to {elicitation_id} was being recorded",
        "send the answer again",
    )


__all__ = [
    "DEFAULT_WAIT_S",
    "answer_elicitation",
    "elicitations_of",
    "logged_asker",
    "pending_elicitations",
]
