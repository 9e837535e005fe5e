"""Approvals as facts: the gate's `ask` becomes `ApprovalRequested`, the answer `ApprovalResolved`.

`ApprovalBroker` is the gate's asker for one run. With a person attached (the interactive terminal) it records
the request, waits for the answer there (the run is `waiting`, its wall time paused), records the answer and runs
on. With nobody attached and `wait=True` it records the request and suspends the run (`RunSuspended`): the process
lets go, and whoever answers later (`bearagent approvals answer`, a server) continues it. An answer given before a
resume (`preanswered`) is used once for its call without asking again. "Allow always" adds the rule to the
session record (`RunStorage.allow_in_session`), the one place it is remembered.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import cast

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import ToolCallId
from bearagent.domain.run_events import ApprovalChoice, ApprovalRequestedV1, ApprovalResolvedV1, RunOwner, RunResumedV1
from bearagent.ports import AskRequest
from bearagent.runtime.run_context import current_run

AskLike = Callable[[object], Awaitable[ApprovalChoice]]


class RunSuspended(BaseException):
    """The run waits for an approval nobody attached can give: unwind the loop, leave the run `waiting`.

    A BaseException, like cancellation, so no tool or hook wrapper that catches `Exception` swallows it."""

    def __init__(self, approval_id: str) -> None:
        super().__init__(f"waiting for approval {approval_id}")
        self.approval_id = approval_id


class ApprovalBroker:
    """The asker of one run's gate (see the module docstring)."""

    def __init__(
        self,
        *,
        owner: RunOwner,
        attached: AskLike | None = None,
        wait: bool = False,
        answered_by: str = "terminal",
        preanswered: Mapping[ToolCallId, ApprovalChoice] | None = None,
        remember: Callable[[str], Awaitable[None]] | None = None,
        new_id: Callable[[], str],
        seal: Callable[[str, str, str], str] | None = None,
    ) -> None:
        """`seal(run_id, approval_id, decision)` seals an answer given here (`trust/seals.py`)."""
        self._owner = owner
        self._attached = attached
        self._wait = wait
        self._answered_by = answered_by
        self._pre: dict[ToolCallId, ApprovalChoice] = dict(preanswered or {})
        self._remember = remember
        self._new_id = new_id
        self._seal = seal

    @property
    def attached(self) -> bool:
        """Whether a person waits for the question here (a question asked otherwise suspends the run)."""
        return self._attached is not None

    @property
    def can_answer(self) -> bool:
        return self._attached is not None or self._wait or bool(self._pre)

    async def __call__(self, request: object) -> ApprovalChoice:
        assert isinstance(request, AskRequest)
        call_id = request.context.tool_call_id
        if call_id is not None and call_id in self._pre:
            answer = self._pre.pop(call_id)
            if not request.review:
                await self._remembered(answer, request.suggested_rule or request.tool_name)
            return answer
        run = current_run.get()
        projection = run.recorder.projection if run is not None else None
        activity_id = projection.active_activity_id if projection is not None else None
        if run is None or activity_id is None:
            raise BearAgentError(
                ErrorInfo.of("internal", "approval_outside_run", "an approval was asked outside a run")
            )
        recorder = run.recorder
        approval_id = f"ap_{self._new_id()}"
        assert call_id is not None
        await recorder.append(
            ApprovalRequestedV1(
                approval_id=approval_id,
                activity_id=activity_id,
                tool_call_id=call_id,
                tool_name=request.tool_name,
                arguments=dict(request.arguments),
                reason=request.reason[:4000],
                suggested_rule=None if request.review else (request.suggested_rule or request.tool_name)[:1000],
                attached=self._attached is not None,
            )
        )
        if self._attached is None:
            raise RunSuspended(approval_id)
        started = time.monotonic()
        answer = await self._attached(request)
        try:
            await recorder.append_many(
                (
                    ApprovalResolvedV1(
                        approval_id=approval_id,
                        decision=answer,
                        answered_by=self._answered_by,
                        seal=self._seal(str(recorder.run_id), approval_id, answer) if self._seal is not None else None,
                    ),
                    RunResumedV1(owner=self._owner, reason="approval"),
                )
            )
        except BearAgentError as exc:  # answered from elsewhere meanwhile (`approvals answer`): that answer wins
            projection = await recorder.load()
            pending = projection.pending_approval if projection is not None else None
            if exc.info.category != "conflict" or pending is None or pending.decision is None:
                raise
            answer = cast(ApprovalChoice, pending.decision)
            run.observer.notice(recorder.run_id, f"approval {approval_id} was answered by {pending.answered_by}")
            await recorder.append(RunResumedV1(owner=self._owner, reason="approval"))
        run.extend_deadline(time.monotonic() - started)
        if not request.review:  # a review's "always" keeps the changes and adds no rule (`AskRequest.review`)
            await self._remembered(answer, request.suggested_rule or request.tool_name)
        return answer

    async def _remembered(self, answer: ApprovalChoice, rule: str) -> None:
        if answer == "allow_always" and self._remember is not None:
            await self._remember(rule)
