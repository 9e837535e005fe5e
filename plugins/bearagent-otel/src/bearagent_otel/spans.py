"""OpenTelemetry spans from BearAgent's run log, after the GenAI semantic conventions.

`SpanBuilder.feed(event)` turns committed events into spans as they come: `invoke_agent {agent}` for a run (a
subagent's run is a child of the `execute_tool Task` span that started it), `chat {model}` for a model call,
`execute_tool {tool}` for a tool call, `hook {event}` for a hook's execution. Every span takes its times from the
events (`occurred_at`), so a run exported long after it ran looks as it did live. The trace id is the top-level
run's id (a UUID is 128 bits, as a trace id), span ids are derived from the ids of the events that opened them: a
run exported twice gives the same ids, and a trace is found by its run id.

Message content (the prompt, answers, tool arguments and results) is recorded only when
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: by default spans carry names, models, token counts,
costs, statuses and error categories, never what was said. Which names (the v1.36.0 conventions or the latest
experimental ones) is `semconv.py`'s choice, from `OTEL_SEMCONV_STABILITY_OPT_IN`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from opentelemetry import trace
from opentelemetry.sdk.trace import Span, Tracer
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode

from bearagent.plugin import Event
from bearagent_otel.semconv import Semconv

MAX_CONTENT_CHARS = 16_000
MAX_TRACKED_RUNS = 1_000
TERMINAL = frozenset({"RunSucceeded", "RunFailed", "RunCancelled", "RunInterrupted"})


def _ns(when: datetime) -> int:
    return int(when.timestamp() * 1_000_000_000)


def _span_id(key: str) -> int:
    value = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")
    return value or 1


class NextIds(IdGenerator):
    """Ids the builder chose for the span it is about to start (the SDK asks its generator for them)."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0

    def generate_trace_id(self) -> int:
        return self.trace_id or uuid.uuid4().int

    def generate_span_id(self) -> int:
        return self.span_id or (uuid.uuid4().int >> 64) or 1


def _thaw(value: object) -> object:
    """The log's frozen JSON as plain JSON values."""
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in cast(Mapping[object, object], value).items()}
    if isinstance(value, tuple | list):
        return [_thaw(v) for v in cast(tuple[object, ...], value)]
    return value


def _content(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(_thaw(value), ensure_ascii=False, default=str)
    return text[:MAX_CONTENT_CHARS]


def _tool_calls(payload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [cast(Mapping[str, Any], call) for call in cast(tuple[object, ...], payload.get("tool_calls") or ())]


@dataclass
class _Run:
    trace_id: int
    span: Span
    agent: str
    spans: dict[str, Span] = field(default_factory=lambda: {})
    """Open model and tool spans, by activity id."""
    tool_calls: dict[str, Span] = field(default_factory=lambda: {})
    """Tool spans by tool call id (a subagent's run is their child)."""
    provider: str | None = None
    """The provider of the run's first model call (`ModelCallRequested` v4), also set on the run's span."""


class SpanBuilder:
    """Builds spans from the events of runs, fed in commit order (children's events after the parent's
    `ChildRunStarted`). Thread-safe: event sinks may be called from several threads."""

    def __init__(
        self, tracer: Tracer, ids: NextIds, *, capture_content: bool = False, semconv: Semconv | None = None
    ) -> None:
        self._tracer = tracer
        self._ids = ids
        self._content = capture_content
        self._semconv = semconv or Semconv()
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._child_parents: dict[str, Span] = {}
        """Child run id -> the tool span that started it (from the parent's `ChildRunStarted`)."""

    def feed(self, event: Event) -> None:
        with self._lock:
            self._feed(event)

    def traceparent(self, run_id: str, tool_call_id: str | None) -> str | None:
        """The W3C `traceparent` of the span an outgoing call of a live run belongs to: the tool call's span while
        it is open, else the run's; None for a run this builder has not seen start."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return None
            span = run.tool_calls.get(tool_call_id, run.span) if tool_call_id else run.span
            context = span.get_span_context()
            return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"

    def _start(
        self,
        name: str,
        *,
        trace_id: int,
        key: str,
        parent: Span | None,
        kind: SpanKind,
        at: datetime,
        attributes: Mapping[str, Any],
        earlier_ns: int = 0,
    ) -> Span:
        self._ids.trace_id = trace_id
        self._ids.span_id = _span_id(key)
        try:
            context = trace.set_span_in_context(parent) if parent is not None else None
            span = self._tracer.start_span(
                name, context=context, kind=kind, attributes=dict(attributes), start_time=_ns(at) - earlier_ns
            )
        finally:
            self._ids.trace_id = self._ids.span_id = 0
        return cast(Span, span)

    def _feed(self, event: Event) -> None:
        payload = cast(Mapping[str, Any], event.payload)
        run_id = str(event.run_id)
        kind = event.event_type
        if kind == "RunCreated":
            self._run_created(event, payload)
            return
        run = self._runs.get(run_id)
        if run is None:
            return  # a run whose start this process did not see (resumed elsewhere): exported from the log later
        if kind in ("ModelCallRequested",):
            ref = str(payload.get("model_ref") or "model")
            model = ref.split("/", 1)[1] if ref.split("/", 1)[0] in ("workspace", "user", "platform") else ref
            chat: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "gen_ai.agent.name": run.agent,
                "bearagent.model.ref": ref,
                "bearagent.model_call.attempt": int(payload.get("attempt", 1)),
                "bearagent.model_call.purpose": str(payload.get("purpose", "turn")),
            }
            provider = payload.get("provider")  # v4; a run recorded before names none
            if provider:
                provider_attributes = self._provider_attributes(str(provider))
                chat.update(provider_attributes)
                if run.provider is None:  # the agent's provider: its first call's
                    run.provider = str(provider)
                    run.span.set_attributes(provider_attributes)
            run.spans[str(payload["activity_id"])] = self._start(
                f"chat {model}",
                trace_id=run.trace_id,
                key=str(event.event_id),
                parent=run.span,
                kind=SpanKind.CLIENT,
                at=event.occurred_at,
                attributes=chat,
            )
        elif kind in ("ModelCallCompleted", "ModelCallFailed"):
            span = run.spans.pop(str(payload["activity_id"]), None)
            if span is not None:
                self._end_model(span, kind, payload, event.occurred_at)
        elif kind == "ToolCallRequested":
            tool = str(payload.get("tool_name") or "tool")
            source = str(payload.get("source", "native"))
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": str(payload["tool_call_id"]),
                "gen_ai.tool.type": "function" if source == "native" else "extension",
                "bearagent.tool.source": source,
            }
            if self._content and self._semconv.latest and "arguments" in payload:
                # v1.36.0 has them in the `gen_ai.choice` event of the chat span that asked for the call
                attributes["gen_ai.tool.call.arguments"] = _content(payload["arguments"])
            span = self._start(
                f"execute_tool {tool}",
                trace_id=run.trace_id,
                key=str(event.event_id),
                parent=run.span,
                kind=SpanKind.INTERNAL,
                at=event.occurred_at,
                attributes=attributes,
            )
            run.spans[str(payload["activity_id"])] = span
            run.tool_calls[str(payload["tool_call_id"])] = span
        elif kind in ("ToolCallCompleted", "ToolCallFailed"):
            span = run.spans.pop(str(payload["activity_id"]), None)
            run.tool_calls.pop(str(payload.get("tool_call_id")), None)
            if span is not None:
                result = cast(Mapping[str, Any], payload.get("result") or {})
                if kind == "ToolCallFailed" or result.get("status") == "failed":
                    error = cast(Mapping[str, Any], result.get("error") or {})
                    span.set_attribute("error.type", str(error.get("category") or "tool_error"))
                    span.set_status(Status(StatusCode.ERROR, str(error.get("code") or "the tool call failed")))
                if self._content and result:
                    content = _content(result.get("content", result))
                    if self._semconv.latest:
                        span.set_attribute("gen_ai.tool.call.result", content)
                    else:
                        tool_call_id = str(payload.get("tool_call_id"))
                        message = {"role": "tool", "id": tool_call_id, "content": content}
                        span.add_event("gen_ai.tool.message", message, timestamp=_ns(event.occurred_at))
                span.end(_ns(event.occurred_at))
        elif kind == "ChildRunStarted":
            tool_call = payload.get("tool_call_id")
            parent = run.tool_calls.get(str(tool_call)) if tool_call else None
            self._child_parents[str(payload["child_run_id"])] = parent or run.span
        elif kind == "HookExecuted":
            duration_ms = int(payload.get("duration_ms", 0))
            end = _ns(event.occurred_at)
            hook = str(payload.get("hook_event") or "hook")
            span = self._start(
                f"hook {hook}",
                trace_id=run.trace_id,
                key=str(event.event_id),
                parent=run.span,
                kind=SpanKind.INTERNAL,
                at=event.occurred_at,
                attributes={
                    "bearagent.hook.event": hook,
                    "bearagent.hook.handler_type": str(payload.get("handler_type", "")),
                    "bearagent.hook.decision": str(payload.get("decision", "none")),
                },
                earlier_ns=duration_ms * 1_000_000,  # the hook ran before its fact was recorded
            )
            if payload.get("error"):
                span.set_attribute("error.type", str(cast(Mapping[str, Any], payload["error"]).get("category")))
                span.set_status(Status(StatusCode.ERROR, "the hook failed"))
            span.end(end)
        elif kind in TERMINAL:
            self._end_run(run_id, run, kind, payload, event.occurred_at)

    def _run_created(self, event: Event, payload: Mapping[str, Any]) -> None:
        run_id = str(event.run_id)
        parent_run = str(payload.get("parent_run_id") or "")
        parent_span = self._child_parents.pop(run_id, None)
        parent_state = self._runs.get(parent_run) if parent_run else None
        if parent_span is None and parent_state is not None:
            parent_span = parent_state.span
        trace_id = parent_state.trace_id if parent_state is not None else uuid.UUID(run_id).int
        agent = str(payload.get("agent_name") or "agent")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.agent.id": run_id,
            "bearagent.run.id": run_id,
            "bearagent.run.trigger": str(payload.get("trigger_type", "message")),
        }
        if payload.get("session_id"):
            attributes["gen_ai.conversation.id"] = str(payload["session_id"])
        if payload.get("model_ref"):
            attributes["gen_ai.request.model"] = str(payload["model_ref"])
        if parent_run:
            attributes["bearagent.run.parent_id"] = parent_run
        if self._content and payload.get("goal") and self._semconv.latest:
            attributes["gen_ai.input.messages"] = _content(
                [{"role": "user", "parts": [{"type": "text", "content": payload["goal"]}]}]
            )
        span = self._start(
            f"invoke_agent {agent}",
            trace_id=trace_id,
            key=str(event.event_id),
            parent=parent_span,
            kind=SpanKind.INTERNAL,
            at=event.occurred_at,
            attributes=attributes,
        )
        if self._content and payload.get("goal") and not self._semconv.latest:
            message = {"role": "user", "content": _content(payload["goal"])}
            span.add_event("gen_ai.user.message", message, timestamp=_ns(event.occurred_at))
        self._runs[run_id] = _Run(trace_id, span, agent)
        while len(self._runs) > MAX_TRACKED_RUNS:  # runs this process never saw end (killed, handed over)
            _, dropped = self._runs.popitem(last=False)
            dropped.span.end()

    def _end_model(self, span: Span, kind: str, payload: Mapping[str, Any], at: datetime) -> None:
        usage = cast(Mapping[str, Any], payload.get("usage") or {})
        span.set_attribute("gen_ai.usage.input_tokens", int(usage.get("input_tokens", 0)))
        span.set_attribute("gen_ai.usage.output_tokens", int(usage.get("output_tokens", 0)))
        if usage.get("cache_read_tokens"):
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", int(usage["cache_read_tokens"]))
        span.set_attribute("bearagent.cost_usd", int(payload.get("cost_microusd", 0)) / 1_000_000)
        if kind == "ModelCallCompleted":
            if payload.get("model"):
                span.set_attribute("gen_ai.response.model", str(payload["model"]))
                span.update_name(f"chat {payload['model']}")  # the model that answered
            if payload.get("provider_request_id"):
                span.set_attribute("gen_ai.response.id", str(payload["provider_request_id"]))
            finish = str(payload.get("stop_reason", "end_turn"))
            span.set_attribute("gen_ai.response.finish_reasons", [finish])
            if self._content and (payload.get("text") or payload.get("tool_calls")):
                self._answer(span, str(payload.get("text") or ""), _tool_calls(payload), finish, at)
        else:
            error = cast(Mapping[str, Any], payload.get("error") or {})
            span.set_attribute("error.type", str(error.get("category") or "model_error"))
            span.set_status(Status(StatusCode.ERROR, str(error.get("code") or "the model call failed")))
        span.end(_ns(at))

    def _end_run(self, run_id: str, run: _Run, kind: str, payload: Mapping[str, Any], at: datetime) -> None:
        for span in run.spans.values():  # calls the run's end cut short
            span.set_status(Status(StatusCode.ERROR, "the run ended first"))
            span.end(_ns(at))
        run.span.set_attribute("bearagent.run.status", kind.removeprefix("Run").lower())
        if kind == "RunFailed":
            error = cast(Mapping[str, Any], payload.get("error") or {})
            run.span.set_attribute("error.type", str(error.get("category") or "run_failed"))
            run.span.set_status(Status(StatusCode.ERROR, str(error.get("code") or "the run failed")))
        elif kind == "RunInterrupted":
            run.span.set_attribute("error.type", "interrupted")
            run.span.set_status(Status(StatusCode.ERROR, "the run was interrupted"))
        if self._content and kind == "RunSucceeded" and payload.get("final_text"):
            self._answer(run.span, str(payload["final_text"]), [], str(payload.get("stop_reason") or "end_turn"), at)
        run.span.end(_ns(at))
        del self._runs[run_id]

    def _provider_attributes(self, provider: str) -> dict[str, str]:
        """The provider in the chosen revision's name and value, and the model entry's own id."""
        return {
            self._semconv.provider_key: self._semconv.provider_value(provider),
            "bearagent.model.provider": provider,
        }

    def _answer(self, span: Span, text: str, calls: list[Mapping[str, Any]], finish: str, at: datetime) -> None:
        """An assistant answer (text and the tool calls it asked for) on `span`: the latest revision's
        `gen_ai.output.messages` attribute, or v1.36.0's `gen_ai.choice` span event."""
        if self._semconv.latest:
            parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
            parts += [
                {
                    "type": "tool_call",
                    "id": str(c.get("tool_call_id")),
                    "name": c.get("name"),
                    "arguments": c.get("arguments"),
                }
                for c in calls
            ]
            message = {"role": "assistant", "parts": parts, "finish_reason": finish}
            span.set_attribute("gen_ai.output.messages", _content([message]))
            return
        choice: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            choice["tool_calls"] = [
                {
                    "id": str(c.get("tool_call_id")),
                    "type": "function",
                    "function": {"name": c.get("name"), "arguments": c.get("arguments")},
                }
                for c in calls
            ]
        span.add_event(
            "gen_ai.choice", {"index": 0, "finish_reason": finish, "message": _content(choice)}, timestamp=_ns(at)
        )
