"""A run's log as a trajectory: ATIF v1.7 (Harbor's Agent Trajectory Interchange Format, which benchmark harnesses
read) and a readable Markdown transcript (`bearagent runs export`).

Both are projections of the stored events and nothing else, so a finished run exports the same way tomorrow as
today. The mapping (docs/observability.md):

- `RunCreated.goal` → a `user` step; `MessageInjected` → a `user` step (prompt context) or a `system` step (stop
  feedback, continuation);
- each `ModelCallCompleted` of a turn → an `agent` step (text, model, tool calls, token metrics, cost), whose
  `observation` holds the results of those tool calls (`ToolCallCompleted`/`ToolCallFailed`) and, for a call that
  started a child run (a subagent), a `subagent_trajectory_ref` to the child's trajectory embedded in
  `subagent_trajectories`;
- a compaction, an approval, a failed model call and the run's failure or cancellation → `system` steps.

Children are followed to `MAX_DEPTH` (the domain's own depth bound) and at most `MAX_CHILDREN` per export; what is
left out is counted in `notes`, never silently dropped."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.run_events import (
    ApprovalRequestedV1,
    ApprovalResolvedV1,
    ChildRunStartedV1,
    ContextCompactedV1,
    MessageInjectedV1,
    MessageInjectedV2,
    ModelCallCompletedV2,
    ModelCallFailedV2,
    RunCancelledV1,
    RunCreatedV2,
    RunEventPayload,
    RunFailedV2,
    RunSucceededV2,
    ToolCallCompletedV2,
    ToolCallFailedV2,
    parse_run_event_payload,
)

ATIF_VERSION = "ATIF-v1.7"
MAX_DEPTH = 16
MAX_CHILDREN = 200

EventsOf = Callable[[RunId], Sequence[Event]]
Doc = dict[str, object]
"""A JSON object being built (the export is plain dicts and lists, dumped by the caller)."""

_MAPPED = frozenset(
    {
        "RunCreated",
        "MessageInjected",
        "ModelCallCompleted",
        "ModelCallFailed",
        "ToolCallCompleted",
        "ToolCallFailed",
        "ChildRunStarted",
        "ContextCompacted",
        "ApprovalRequested",
        "ApprovalResolved",
        "RunSucceeded",
        "RunFailed",
        "RunCancelled",
    }
)


def _typed(event: Event) -> RunEventPayload | None:
    if event.event_type not in _MAPPED:
        return None
    try:
        return parse_run_event_payload(event.event_type, event.schema_version, event.payload)
    except Exception:
        return None


@dataclass(slots=True)
class _Export:
    events_of: EventsOf
    version: str
    children_left: int = MAX_CHILDREN
    skipped_children: int = 0
    unreadable: int = 0
    embedded: list[Doc] = field(default_factory=list[Doc])


def atif_trajectory(events_of: EventsOf, run_id: RunId, *, version: str) -> Doc:
    """The ATIF document of `run_id`: its steps, and each child run's trajectory embedded once. `version` is
    BearAgent's (the agent system's) version, written in `agent.version`."""
    export = _Export(events_of=events_of, version=version)
    root = _trajectory(export, run_id, depth=0, root=True)
    if export.embedded:
        root["subagent_trajectories"] = list(export.embedded)
    notes: list[str] = []
    if export.skipped_children:
        notes.append(
            f"{export.skipped_children} child run(s) not embedded (limits: depth {MAX_DEPTH}, {MAX_CHILDREN} children)"
        )
    if export.unreadable:
        notes.append(f"{export.unreadable} event(s) this version could not read were left out")
    if notes:
        root["notes"] = "; ".join(notes)
    return root


def _iso(event: Event) -> str:
    return event.occurred_at.isoformat().replace("+00:00", "Z")


def _trajectory(export: _Export, run_id: RunId, *, depth: int, root: bool) -> Doc:
    events = export.events_of(run_id)
    steps: list[Doc] = []
    model_name: str | None = None
    agent_name: str | None = None
    session_id: str | None = None
    totals = {"prompt": 0, "completion": 0, "cached": 0, "cost": 0}
    # The agent step whose tool calls are waiting for results, by tool call id, and each step's results.
    open_calls: dict[str, Doc] = {}
    results_of: dict[int, list[object]] = {}
    child_of_call: dict[str, str] = {}

    def add(step: Doc) -> Doc:
        step["step_id"] = len(steps) + 1
        steps.append(step)
        return step

    def system(event: Event, message: str, extra: Doc | None = None) -> None:
        step: Doc = {"timestamp": _iso(event), "source": "system", "message": message}
        if extra:
            step["extra"] = extra
        add(step)

    for event in events:
        payload = _typed(event)
        if payload is None:
            if event.event_type in _MAPPED:
                export.unreadable += 1
            continue
        if isinstance(payload, RunCreatedV2):
            agent_name = payload.agent_name
            model_name = payload.model_ref
            session_id = str(payload.session_id) if payload.session_id is not None else None
            add({"timestamp": _iso(event), "source": "user", "message": payload.goal})
        elif isinstance(payload, MessageInjectedV1 | MessageInjectedV2):
            source = "user" if payload.kind == "prompt_context" else "system"
            add({"timestamp": _iso(event), "source": source, "message": payload.text, "extra": {"kind": payload.kind}})
        elif isinstance(payload, ModelCallCompletedV2):
            usage = payload.usage
            totals["prompt"] += usage.input_tokens
            totals["completion"] += usage.output_tokens
            totals["cached"] += usage.cache_read_tokens
            totals["cost"] += payload.cost_microusd
            step: Doc = {
                "timestamp": _iso(event),
                "source": "agent",
                "message": payload.text,
                "llm_call_count": 1,
                "metrics": {
                    "prompt_tokens": usage.input_tokens,
                    "completion_tokens": usage.output_tokens,
                    "cached_tokens": usage.cache_read_tokens,
                    "cost_usd": payload.cost_microusd / 1_000_000,
                },
                "extra": _drop_none(
                    {
                        "model_call_id": str(payload.model_call_id),
                        "provider_request_id": payload.provider_request_id,
                        "stop_reason": payload.stop_reason,
                        "refusal": payload.refusal,
                    }
                ),
            }
            if payload.model:
                step["model_name"] = payload.model
            if payload.tool_calls:
                calls: list[object] = []
                for call in payload.tool_calls:
                    call_entry: Doc = {
                        "tool_call_id": str(call.tool_call_id),
                        "function_name": call.name,
                        "arguments": dict(call.arguments),
                    }
                    if call.invalid_arguments is not None:
                        call_entry["extra"] = {"invalid_arguments": call.invalid_arguments}
                    calls.append(call_entry)
                    open_calls[str(call.tool_call_id)] = step
                step["tool_calls"] = calls
            add(step)
        elif isinstance(payload, ModelCallFailedV2):
            system(
                event,
                f"model call failed: {payload.error.message}",
                {"category": payload.error.category, "code": payload.error.code, "will_retry": payload.will_retry},
            )
        elif isinstance(payload, ChildRunStartedV1):
            if payload.tool_call_id is not None:
                child_of_call[str(payload.tool_call_id)] = str(payload.child_run_id)
        elif isinstance(payload, ToolCallCompletedV2 | ToolCallFailedV2):
            call_id = str(payload.tool_call_id)
            owner = open_calls.pop(call_id, None)
            result = payload.result
            content = result.content
            if result.error is not None and not content:
                content = result.error.message
            entry: Doc = {"source_call_id": call_id, "content": content}
            extra: Doc = {"status": result.status, "duration_ms": result.duration_ms}
            if result.truncated:
                extra["truncated"] = True
            if result.error is not None:
                extra["error"] = {"category": result.error.category, "code": result.error.code}
            entry["extra"] = extra
            child = child_of_call.pop(call_id, None)
            if child is not None:
                ref = _child(export, RunId(child), depth=depth + 1)
                if ref is not None:
                    entry["subagent_trajectory_ref"] = [ref]
            if owner is None:
                # A result whose call this export never saw (a resumed run's abandoned call): a system step.
                system(event, f"result of {result.tool_name}: {content}", {"tool_call_id": call_id})
                continue
            results = results_of.setdefault(id(owner), [])
            if not results:
                owner["observation"] = {"results": results}
            results.append(entry)
        elif isinstance(payload, ContextCompactedV1):
            system(
                event,
                f"earlier turns compacted ({payload.trigger}): {payload.summary}",
                {"replaced_messages": payload.replaced_messages, "tokens_before": payload.tokens_before},
            )
            totals["prompt"] += payload.usage.input_tokens
            totals["completion"] += payload.usage.output_tokens
            totals["cost"] += payload.cost_microusd
        elif isinstance(payload, ApprovalRequestedV1):
            system(
                event,
                f"approval asked for {payload.tool_name}: {payload.reason}",
                {"tool_call_id": str(payload.tool_call_id)},
            )
        elif isinstance(payload, ApprovalResolvedV1):
            system(event, f"approval answered: {payload.decision} by {payload.answered_by}")
        elif isinstance(payload, RunFailedV2):
            system(
                event,
                f"run failed: {payload.error.message}",
                {"category": payload.error.category, "code": payload.error.code},
            )
        elif isinstance(payload, RunCancelledV1):
            system(event, f"run cancelled: {payload.reason}")
        elif isinstance(payload, RunSucceededV2) and not steps:
            system(event, payload.final_text)
    if not steps:
        # ATIF needs one step; a run with no readable event says so rather than failing the export.
        steps.append({"step_id": 1, "source": "system", "message": "this run has no readable events"})
    agent: Doc = {"name": "bearagent", "version": export.version}
    if model_name:
        agent["model_name"] = model_name
    if agent_name:
        agent["extra"] = {"agent": agent_name}
    document: Doc = {"schema_version": ATIF_VERSION, "trajectory_id": str(run_id), "agent": agent}
    if root or session_id is not None:
        document["session_id"] = session_id or str(run_id)
    document["steps"] = list(steps)
    document["final_metrics"] = {
        "total_prompt_tokens": totals["prompt"],
        "total_completion_tokens": totals["completion"],
        "total_cached_tokens": totals["cached"],
        "total_cost_usd": totals["cost"] / 1_000_000,
        "total_steps": len(steps),
    }
    return document


def _child(export: _Export, child: RunId, *, depth: int) -> Doc | None:
    if depth > MAX_DEPTH or export.children_left <= 0:
        export.skipped_children += 1
        return None
    export.children_left -= 1
    export.embedded.append(_trajectory(export, child, depth=depth, root=False))
    return {"trajectory_id": str(child)}


def _drop_none(values: dict[str, object]) -> Doc:
    return {key: value for key, value in values.items() if value is not None}


# ---- Markdown ----------------------------------------------------------------------------------------------------

_CONTROL = {code: f"\\x{code:02x}" for code in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F]}


def _plain(text: object) -> str:
    """Text from the log made inert: control characters (terminal escapes among them) shown as `\\xNN`."""
    return str(text).translate(_CONTROL)


def _fenced(text: str, info: str = "") -> str:
    """`text` in a code fence longer than any run of backticks inside it, so no content closes it early."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def markdown_of(document: Doc) -> str:
    """The conversation of an ATIF document (`atif_trajectory`) as Markdown: prompts, answers, tool calls and their
    results, subagents inline after the call that started them."""
    embedded: dict[str, Doc] = {}
    for sub in _docs(document.get("subagent_trajectories")):
        embedded[str(sub.get("trajectory_id"))] = sub
    lines: list[str] = []
    _render(document, embedded, lines, level=1)
    return "\n".join(lines).rstrip() + "\n"


def _doc(value: object) -> Doc:
    """`value` if it is a JSON object, else an empty one (the renderer reads what it wrote; it never fails on it)."""
    return cast(Doc, value) if isinstance(value, dict) else {}


def _docs(value: object) -> list[Doc]:
    if not isinstance(value, list):
        return []
    return [_doc(item) for item in cast(list[object], value)]


def _render(document: Doc, embedded: dict[str, Doc], lines: list[str], *, level: int) -> None:
    import json

    agent_doc = _doc(document.get("agent"))
    name = _doc(agent_doc.get("extra")).get("agent")
    heading = "#" * min(level, 6)
    title = f"Run {document.get('trajectory_id')}" if level == 1 else f"Subagent run {document.get('trajectory_id')}"
    lines.append(f"{heading} {_plain(title)}")
    lines.append("")
    facts = [
        f"agent: {_plain(name)}" if name else None,
        f"model: {_plain(agent_doc['model_name'])}" if agent_doc.get("model_name") else None,
    ]
    metrics = _doc(document.get("final_metrics"))
    if metrics:
        facts.append(
            f"tokens: {metrics.get('total_prompt_tokens', 0)} in / {metrics.get('total_completion_tokens', 0)} out"
        )
        cost = metrics.get("total_cost_usd")
        facts.append(f"cost: ${cost if isinstance(cost, int | float) else 0:.6f}")
    lines.append(" · ".join(fact for fact in facts if fact))
    lines.append("")
    sub = "#" * min(level + 1, 6)
    for step in _docs(document.get("steps")):
        source = step.get("source")
        message = _plain(step.get("message") or "")
        if source == "user":
            lines += [f"{sub} User", "", message, ""]
        elif source == "system":
            lines += [f"> **{_plain('system')}**: {message}".replace("\n", "\n> "), ""]
        else:
            model = step.get("model_name")
            lines += [f"{sub} Assistant" + (f" ({_plain(model)})" if model else ""), ""]
            if message:
                lines += [message, ""]
            results: dict[str, Doc] = {}
            for result in _docs(_doc(step.get("observation")).get("results")):
                results[str(result.get("source_call_id"))] = result
            for call in _docs(step.get("tool_calls")):
                call_id = str(call.get("tool_call_id"))
                arguments = json.dumps(call.get("arguments"), ensure_ascii=False, indent=2)
                lines += [
                    f"**Tool call** `{_plain(call.get('function_name'))}`",
                    "",
                    _fenced(_plain(arguments), "json"),
                    "",
                ]
                result = results.get(call_id)
                if result is None:
                    lines += ["*(no result recorded)*", ""]
                    continue
                status = _doc(result.get("extra")).get("status")
                lines += [
                    f"**Result** ({_plain(status or 'recorded')})",
                    "",
                    _fenced(_plain(result.get("content") or "")),
                    "",
                ]
                for ref in _docs(result.get("subagent_trajectory_ref")):
                    child = embedded.get(str(ref.get("trajectory_id")))
                    if child is not None:
                        _render(child, embedded, lines, level=level + 2)
    notes = document.get("notes")
    if notes:
        lines += [f"*{_plain(notes)}*", ""]
