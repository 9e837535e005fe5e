"""`bearagent run --output-format text|json|stream-json`: Claude Code's headless output (`claude -p`), so a script
written for `claude -p --output-format json|stream-json` reads a BearAgent run with the same parser.

- `text`: the final answer only, on stdout (failures on stderr, as `--json`'s exit codes).
- `json`: one `result` object at the end.
- `stream-json`: JSON lines: `system` (subtype `init`: session, tools, model, permissionMode, slash_commands,
  output_style), `assistant` messages (a text block,
  or a `tool_use` block per tool call), `user` messages carrying each `tool_result`, and the `result` object.

The `result` object: `type: "result"`, `subtype` (`success`, `error_max_turns` when the model-iterations budget
stopped the run, `error_max_budget_usd` for the cost budget, else `error_during_execution`), `is_error`,
`duration_ms` (wall time of the command), `num_turns` (model calls), `result` (the final answer), `session_id`,
`total_cost_usd`, `usage` (`input_tokens`, `output_tokens`); BearAgent adds `run_id`, `agent`, `status` and, on
failure, `errors` (the messages). Child runs (subagents) are left out, as Claude Code leaves out its subagents'.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from bearagent.domain._base import JsonValue, thaw_json_mapping

if TYPE_CHECKING:
    from bearagent.domain.ids import RunId
    from bearagent.runtime.run_writer import Published
    from bearagent.service.run_types import RunResult
    from bearagent.service.runner import WorkspaceRuntime

OutputFormat = Literal["text", "json", "stream-json"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("text", "json", "stream-json")
_BUDGET_SUBTYPES: Mapping[str, str] = {
    "budget.max_model_iterations": "error_max_turns",
    "budget.max_cost_microusd": "error_max_budget_usd",
}


def result_object(result: RunResult, *, duration_ms: int) -> dict[str, JsonValue]:
    """Claude Code's final `result` object for a finished (or waiting) run."""
    ok = result.status == "succeeded"
    code = result.error.code if result.error is not None else ""
    subtype = "success" if ok else _BUDGET_SUBTYPES.get(code, "error_during_execution")
    out: dict[str, JsonValue] = {
        "type": "result",
        "subtype": subtype,
        "is_error": not ok,
        "duration_ms": duration_ms,
        "num_turns": result.usage.model_iterations,
        "result": result.final,
        "session_id": str(result.session_id) if result.session_id is not None else None,
        "total_cost_usd": result.usage.cost_microusd / 1_000_000,
        "usage": {"input_tokens": result.usage.input_tokens, "output_tokens": result.usage.output_tokens},
        "run_id": str(result.run_id),
        "agent": result.agent,
        "status": result.status,
    }
    if not ok:
        message = result.error.message if result.error is not None else f"the run ended {result.status}"
        out["errors"] = [message]
    return out


def init_extras(runtime: WorkspaceRuntime, agent: str | None) -> dict[str, JsonValue]:
    """`init`'s `permissionMode` (the mode in force for the agent), `slash_commands` (the workspace's commands and
    the skills you may invoke) and `output_style`."""
    loaded = runtime.loaded
    out: dict[str, JsonValue] = {}
    spec = loaded.agents.get(agent or loaded.config.default_agent)
    if spec is not None:
        out["permissionMode"] = str(runtime.mode_in_force(spec).mode)
    commands = {a.name for a in loaded.actions.all()} | {s.name for s in loaded.skills.all() if s.user_invocable}
    out["slash_commands"] = cast(JsonValue, sorted(commands))
    out["output_style"] = loaded.output_style.name if loaded.output_style is not None else "default"
    return out


class ClaudeStream:
    """A run writer subscriber that prints the root run as Claude Code's stream-json lines (`emit` takes one JSON
    object). Feed it every published item; it reads the run's own log events (RunCreated for the init message)
    and hands the rest to a `RunTreeStream` for the stream events it translates."""

    def __init__(
        self,
        run_id: RunId,
        root: Path,
        emit: Callable[[dict[str, JsonValue]], None],
        init_fields: Mapping[str, JsonValue] | None = None,
    ) -> None:
        """`init_fields`: more of `init`'s fields known before the run (`permissionMode`, `slash_commands`,
        `output_style`: `init_extras`)."""
        from bearagent.runtime.streaming import RunTreeStream

        self._run_id = run_id
        self._root = root
        self._emit = emit
        self._init_fields = dict(init_fields or {})
        self._stream = RunTreeStream(run_id, self._on_event)
        self.session_id: str | None = None
        self._model: str | None = None
        self._text: list[str] = []
        self._message_id = 0

    def __call__(self, item: Published) -> None:
        from bearagent.runtime.run_writer import Committed

        if isinstance(item, Committed) and item.run_id == self._run_id and item.event.event_type == "RunCreated":
            self._init(item.event.payload)
        self._stream(item)

    def _init(self, payload: Mapping[str, JsonValue]) -> None:
        session = payload.get("session_id")
        self.session_id = session if isinstance(session, str) else None
        model = payload.get("model_ref")
        self._model = model if isinstance(model, str) else None
        versions = payload.get("tool_spec_versions")
        tools = sorted(cast(Mapping[str, JsonValue], versions)) if isinstance(versions, Mapping) else []
        servers = sorted({t.split("__")[1] for t in tools if t.startswith("mcp__") and t.count("__") >= 2})
        self._emit(
            {
                "type": "system",
                "subtype": "init",
                "cwd": str(self._root),
                "session_id": self.session_id,
                "tools": list(tools),
                "mcp_servers": [{"name": s, "status": "connected"} for s in servers],
                "model": self._model,
                **self._init_fields,
                "agent": payload.get("agent_name"),
                "run_id": str(self._run_id),
                "uuid": str(uuid.uuid4()),
            }
        )

    def _message(self, role: str, content: list[JsonValue]) -> None:
        message: dict[str, JsonValue] = {"role": role, "content": content}
        if role == "assistant":
            self._message_id += 1
            message = {
                "id": f"msg_{str(self._run_id).replace('-', '')[:16]}_{self._message_id}",
                "type": "message",
                "model": self._model,
                **message,
            }
        self._emit(
            {
                "type": role,
                "message": message,
                "parent_tool_use_id": None,
                "session_id": self.session_id,
                "uuid": str(uuid.uuid4()),
            }
        )

    def _flush_text(self, fallback: str = "") -> None:
        text = "".join(self._text) or fallback
        self._text.clear()
        if text:
            self._message("assistant", [{"type": "text", "text": text}])

    def _on_event(self, event: object) -> None:
        from bearagent.domain.stream import FinalEvent, StepEvent, TokenEvent, ToolCallEvent, ToolResultEvent

        if isinstance(event, TokenEvent):
            self._text.append(event.text)
        elif isinstance(event, ToolCallEvent):
            self._flush_text()
            arguments = cast(JsonValue, thaw_json_mapping(event.arguments))
            self._message("assistant", [{"type": "tool_use", "id": event.id, "name": event.name, "input": arguments}])
        elif isinstance(event, ToolResultEvent):
            self._message(
                "user",
                [{"type": "tool_result", "tool_use_id": event.id, "content": event.result, "is_error": event.is_error}],
            )
        elif isinstance(event, FinalEvent):
            self._text.clear()  # the streamed tokens of the answer are the final content: print it once, whole
            self._flush_text(event.content)
        elif isinstance(event, StepEvent) and event.kind == "tool_call":
            self._flush_text()  # the text a step said before its tool calls
