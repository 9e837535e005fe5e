"""A hook execution as a fact of the run's log (`HookExecutedV1`): one per handler run, with its decision, its
reason and its error bounded, and the note the Stop-block cap writes when it lets the agent stop. The dispatcher
hands each to the `HookRecorder` its caller gave (which appends it to the run's event log)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from bearagent.domain.errors import ErrorInfo
from bearagent.domain.run_events import HookExecutedV1
from bearagent.domain.specs import HookHandlerSpec
from bearagent.hooks.outcome import HandlerOutcome, bounded_output
from bearagent.hooks.protocol import bound_text

HookRecorder = Callable[[HookExecutedV1], "None | Awaitable[None]"]


def executed_fact(event: str, outcome: HandlerOutcome, spec: HookHandlerSpec) -> HookExecutedV1:
    """The fact of one handler's execution for `event`."""
    error: ErrorInfo | None = None
    reply = outcome.reply
    if outcome.failure is not None:
        error = ErrorInfo.of(
            "hook", outcome.failure.kind, bound_text(f"{outcome.label}: {outcome.failure.message}", 1_900)
        )
    elif outcome.refused:
        error = ErrorInfo.of(
            "hook",
            "capability_refused",
            bound_text(f"{outcome.label}: refused {', '.join(outcome.refused)}", 1_900),
        )
    reason = reply.block_reason or reply.stop_reason or reply.permission_reason
    if reason is None and outcome.failure is not None:
        reason = outcome.failure.message
    return HookExecutedV1(
        hook_event=event,
        handler=outcome.label[:512],
        handler_type=spec.type,
        duration_ms=outcome.duration_ms,
        decision=outcome.decision,
        reason=bound_text(reason, 4_000) if reason else None,
        error=error,
        output=bounded_output(reply.raw),
    )


def stop_cap_fact(event: str, note: str) -> HookExecutedV1:
    """The fact that the Stop-block cap overrode `event`'s hooks and let the agent stop (`note` says why)."""
    return HookExecutedV1(
        hook_event=event,
        handler="bearagent: stop-hook block cap",
        handler_type="builtin",
        duration_ms=0,
        decision="allow",
        reason=note,
    )


async def record_fact(record: HookRecorder | None, fact: HookExecutedV1) -> None:
    """Hand `fact` to `record` (sync or async); nothing without a recorder."""
    if record is None:
        return
    result = record(fact)
    if inspect.isawaitable(result):
        await result


__all__ = ["HookRecorder", "executed_fact", "record_fact", "stop_cap_fact"]
