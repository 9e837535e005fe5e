"""A compaction asked for by the user (`/compact [focus]` in the session): a run of its own, so the summary call
is a fact of the log like any other and its budget applies. `RunCreated` (trigger `system`, ref `compact`, no
goal: it adds no user message to the history) → `RunStarted` → the summary call (`ModelCallRequested` v3, purpose
`compaction`) → `ContextCompacted` → `RunSucceeded`, whose final text says what was compacted. The session's next
run starts from the compacted history."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from bearagent.domain.budgets import BudgetUsage
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId
from bearagent.domain.messages import Message
from bearagent.domain.run_events import (
    ContextCompactedV1,
    ModelCallFailedV2,
    RunCancelledV1,
    RunCreatedV2,
    RunFailedV2,
    RunOwner,
    RunStartedV1,
    RunStartedV2,
    RunSucceededV2,
    parse_run_event_payload,
)
from bearagent.runtime.cursor import RunCursor
from bearagent.runtime.loop_state import LoopState, RunFailure, RunOutcome
from bearagent.runtime.model_calls import ModelCalls
from bearagent.runtime.observer import RunObserver
from bearagent.runtime.plan import AgentPlan, RunSpec
from bearagent.runtime.recorder import RunRecorder

COMPACT_TRIGGER_REF = "compact"


async def compaction_run(
    models: ModelCalls,
    recorder: RunRecorder,
    spec: RunSpec,
    plan: AgentPlan,
    focus: str | None,
    *,
    owner: RunOwner | None,
    hold: Callable[[RunId], AbstractAsyncContextManager[None]] | None,
    observer: RunObserver,
    prompt_hash: str,
) -> RunOutcome:
    run_id = recorder.run_id
    state = LoopState(plan=plan, conversation_calls=spec.conversation_calls, position_provider=plan.provider)
    await recorder.append(
        RunCreatedV2(
            session_id=spec.session_id,
            budget_limits=spec.budgets,
            goal="",
            agent_name=plan.agent_name,
            prompt_hash=prompt_hash,
            tool_spec_versions=plan.tool_spec_versions,
            model_ref=plan.model_ref,
            trigger_type="system",
            trigger_ref=COMPACT_TRIGGER_REF,
        )
    )
    await recorder.append(RunStartedV1() if owner is None else RunStartedV2(owner=owner))
    observer.run_started(run_id, plan.agent_name)
    messages = [Message.system(plan.system_prompt), *spec.history]

    def outcome(status: str, final: str, usage: BudgetUsage, error: ErrorInfo | None = None) -> RunOutcome:
        return RunOutcome(
            run_id=run_id,
            status=status,
            agent_name=plan.agent_name,
            final_text=final,
            usage=usage,
            steps=0,
            error=error,
        )

    try:
        async with contextlib.AsyncExitStack() as stack:
            if hold is not None:
                await stack.enter_async_context(hold(run_id))
            async with asyncio.timeout(spec.budgets.max_wall_time_ms / 1000.0):
                done = await models.compact(recorder, state, messages, trigger="manual", focus=focus)
    except (RunFailure, BearAgentError, TimeoutError) as exc:
        if isinstance(exc, RunFailure):
            error = exc.error
        elif isinstance(exc, BearAgentError):
            error = exc.info
        else:
            error = ErrorInfo.of(
                "budget",
                "max_wall_time_ms",
                f"the compaction exceeded the wall-time budget of {spec.budgets.max_wall_time_ms} ms",
                limit=spec.budgets.max_wall_time_ms,
            )
        await _close_active(recorder, state, error)
        projection = await recorder.append(RunFailedV2(error=error))
        observer.run_failed(run_id, error)
        return outcome("failed", "", projection.usage, error)
    except asyncio.CancelledError:
        cancelled = ErrorInfo.of("cancelled", "by_caller", "the compaction was cancelled")
        await _close_active(recorder, state, cancelled)
        with contextlib.suppress(BearAgentError):
            await recorder.append(RunCancelledV1(reason="cancelled by the caller"))
        observer.run_failed(run_id, cancelled)
        raise
    final = _described(done)
    projection = await recorder.append(RunSucceededV2(final_text=final))
    observer.run_succeeded(run_id, 0)
    return outcome("succeeded", final, projection.usage)


def _described(compacted: ContextCompactedV1 | None) -> str:
    if compacted is None:
        return "nothing to compact: the conversation is its most recent turns"
    return (
        f"compacted {compacted.replaced_messages} earlier messages into a summary "
        f"(~{compacted.tokens_before:,} -> ~{compacted.tokens_after:,} tokens); "
        f"{compacted.kept_messages} recent messages kept as they were"
    )


async def end_resumed_compaction(
    recorder: RunRecorder, state: LoopState, cursor: RunCursor, observer: RunObserver
) -> RunOutcome:
    """End a `/compact` run a resume took over (its process died): it is not asked again, since the user may no
    longer want it. If its `ContextCompacted` was recorded, the compaction happened and the run succeeds; otherwise
    nothing was compacted and the run fails saying so."""
    run_id = recorder.run_id
    done = next(
        (
            p
            for e in cursor.events
            if isinstance(p := parse_run_event_payload(e.event_type, e.schema_version, e.payload), ContextCompactedV1)
        ),
        None,
    )
    if done is not None:
        final = _described(done)
        projection = await recorder.append(RunSucceededV2(final_text=final))
        observer.run_succeeded(run_id, 0)
        return RunOutcome(run_id, "succeeded", state.plan.agent_name, final, projection.usage, 0)
    error = ErrorInfo.of(
        "cancelled",
        "compaction_interrupted",
        "the compaction (/compact) was interrupted before its summary was recorded, so nothing was compacted; "
        "run /compact again in the session",
    )
    projection = await recorder.append(RunFailedV2(error=error))
    observer.run_failed(run_id, error)
    return RunOutcome(run_id, "failed", state.plan.agent_name, "", projection.usage, 0, error=error)


async def _close_active(recorder: RunRecorder, state: LoopState, error: ErrorInfo) -> None:
    active = state.active
    if active is None or active.model_call_id is None:
        return
    state.active = None
    with contextlib.suppress(BearAgentError):
        await recorder.append(
            ModelCallFailedV2(
                activity_id=active.activity_id,
                model_call_id=active.model_call_id,
                error=error,
                partial_text=active.partial_text,
            )
        )
