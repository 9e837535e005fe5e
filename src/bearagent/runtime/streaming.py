"""Turns what the loop observes into the stream protocol of SPEC §14 (`bearagent.domain.stream`)."""

from __future__ import annotations

from collections.abc import Callable

from bearagent.domain._base import JsonMapping
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import RunId
from bearagent.domain.stream import (
    AgentSwitchedEvent,
    FinalEvent,
    RunFailedEvent,
    RunStartedEvent,
    RunSucceededEvent,
    StepEvent,
    StreamError,
    StreamEventModel,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)

StreamSink = Callable[[StreamEventModel], None]


class StreamingObserver:
    """A `RunObserver` that emits typed stream events to `sink`; notices go to `on_notice` (not part of §14)."""

    def __init__(self, sink: StreamSink, on_notice: Callable[[str], None] | None = None) -> None:
        self._sink = sink
        self._on_notice = on_notice

    def run_started(self, run_id: RunId, agent: str) -> None:
        self._sink(RunStartedEvent(run_id=run_id))

    def step(self, run_id: RunId, index: int, kind: str) -> None:
        self._sink(StepEvent(index=index, kind="final" if kind == "final" else "tool_call"))

    def token(self, run_id: RunId, text: str) -> None:
        self._sink(TokenEvent(text=text))

    def tool_call(self, run_id: RunId, call_id: str, name: str, arguments: JsonMapping) -> None:
        self._sink(ToolCallEvent(id=call_id, name=name, arguments=arguments))

    def tool_result(self, run_id: RunId, call_id: str, name: str, result: str, is_error: bool) -> None:
        self._sink(ToolResultEvent(id=call_id, name=name, result=result, is_error=is_error))

    def final(self, run_id: RunId, content: str) -> None:
        self._sink(FinalEvent(content=content))

    def run_succeeded(self, run_id: RunId, steps: int) -> None:
        self._sink(RunSucceededEvent(run_id=run_id, steps=steps))

    def run_failed(self, run_id: RunId, error: ErrorInfo) -> None:
        self._sink(RunFailedEvent(run_id=run_id, error=StreamError.from_info(error)))

    def agent_switched(self, run_id: RunId, from_agent: str, to_agent: str) -> None:
        self._sink(AgentSwitchedEvent(run_id=run_id, from_agent=from_agent, to_agent=to_agent))

    def subagent_started(self, run_id: RunId, parent_run_id: RunId, agent: str) -> None:
        self._sink(SubagentStartedEvent(run_id=run_id, parent_run_id=parent_run_id, agent=agent))

    def subagent_finished(self, run_id: RunId, parent_run_id: RunId, agent: str, status: str) -> None:
        final_status = status if status in ("succeeded", "failed", "cancelled") else "failed"
        self._sink(
            SubagentFinishedEvent(
                run_id=run_id,
                parent_run_id=parent_run_id,
                agent=agent,
                status=final_status,  # pyright: ignore[reportArgumentType]
            )
        )

    def notice(self, run_id: RunId, text: str) -> None:
        if self._on_notice is not None:
            self._on_notice(text)
