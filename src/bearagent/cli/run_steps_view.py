"""What `bearagent replay` and `bearagent diff` share: opening the workspace's log, errors (what + how to fix), and
one table cell per step (a model turn, a tool call, how the run ended) and its JSON view.

Every text here came from a model or a tool: it goes through `safe_text.visible` before it is printed (control
sequences shown, never interpreted); the JSON views keep it exact.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from bearagent.cli._config_common import short
from bearagent.cli.safe_text import visible

if TYPE_CHECKING:
    from bearagent.domain._base import JsonMapping, JsonValue
    from bearagent.domain.errors import BearAgentError, ErrorInfo
    from bearagent.domain.events import Event
    from bearagent.ports import WorkspaceStore
    from bearagent.runtime.run_alignment import FieldChange
    from bearagent.runtime.run_steps import ModelStep, RunSteps, ToolStep
    from bearagent.workspace import LoadedWorkspace

EXIT_OK = 0
EXIT_DIFFERENT = 1
EXIT_USAGE = 2
PREVIEW = 60


def fail(what: str, fix: str | None, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(visible(f"error: {what}"), err=True)
    if fix:
        click.echo(visible(f"fix: {fix}"), err=True)
    sys.exit(code)


def fail_with(exc: BearAgentError, fix: str | None = None) -> NoReturn:
    fail(exc.info.message, exc.hint or fix)


def open_log(workspace: Path | None) -> tuple[LoadedWorkspace, WorkspaceStore]:
    from bearagent.cli._config_common import load, open_command_store
    from bearagent.domain.errors import BearAgentError

    loaded = load(workspace)
    try:
        return loaded, open_command_store(loaded)
    except BearAgentError as exc:
        fail_with(exc)


def resolve_run(store: WorkspaceStore, ref: str) -> str:
    from bearagent.domain.errors import BearAgentError

    try:
        return str(store.resolve_run_ref(ref))
    except BearAgentError as exc:
        fail_with(exc, "list the runs with `bearagent runs list`")


def events_reader(store: WorkspaceStore) -> Callable[[str], Sequence[Event]]:
    def events_of(run_id: str) -> Sequence[Event]:
        return read_events(store, run_id)

    return events_of


def read_events(store: WorkspaceStore, run_id: str) -> Sequence[Event]:
    from bearagent.domain.ids import RunId

    return store.read_events(RunId(run_id))


# ---- cells ------------------------------------------------------------------------------------------------------


def one_line(text: str, limit: int = PREVIEW) -> str:
    return visible(short(text, limit))


def tool_label(name: str, arguments: JsonMapping | None) -> str:
    from bearagent.cli.render import preview_arguments

    if arguments:
        return visible(f"{name}({preview_arguments(arguments)})")
    return visible(name)


def model_cell(step: ModelStep) -> str:
    if step.error is not None:
        return one_line(f"failed: {step.error.code}")
    parts: list[str] = []
    if step.text:
        parts.append(f'"{short(step.text, 40)}"')
    elif step.text is None:
        parts.append("(text not recorded)")
    calls = step.tool_calls if step.tool_calls is not None else ()
    names = [c.name for c in calls] or [t.name for t in step.tools]
    if names:
        parts.append("→ " + ", ".join(names))
    parts.append(f"{step.usage.input_tokens}/{step.usage.output_tokens} tok")
    if step.switched_to:
        parts.append(f"switch → {step.switched_to}")
    return visible(" · ".join(parts))


def tool_cell(step: ToolStep) -> str:
    label = tool_label(step.name, step.arguments)
    if step.outcome == "unfinished":
        return f"{label} → (no result)"
    state = "error" if step.is_error else "ok"
    if step.content is None:
        return f"{label} → {step.outcome}"
    return f"{label} → {state}: {one_line(step.content, 40)}"


def end_cell(steps: RunSteps) -> str:
    if steps.error is not None and steps.status != "succeeded":
        return one_line(f"{steps.status}: {steps.error.code}")
    if steps.final_text:
        return one_line(f"{steps.status}: {steps.final_text}")
    return visible(steps.status)


def cell(step: object) -> str:
    from bearagent.runtime.run_steps import ModelStep, RunSteps, ToolStep

    if isinstance(step, ModelStep):
        return model_cell(step)
    if isinstance(step, ToolStep):
        return tool_cell(step)
    if isinstance(step, RunSteps):
        return end_cell(step)
    return "-"


def print_changes(label: str, changes: Sequence[FieldChange]) -> None:
    for change in changes:
        if not change.diff:  # one-line values say it all
            click.echo(visible(f"  {label} {change.field}: {change.a} → {change.b}"))
            continue
        click.echo(visible(f"  {label} {change.field}:"))
        for line in change.diff:
            click.echo(visible(f"      {line}"))


def change_json(change: FieldChange) -> dict[str, JsonValue]:
    return {"field": change.field, "a": change.a, "b": change.b, "diff": list(change.diff)}


def header(steps: RunSteps, what: str) -> str:
    agent = steps.agent_name or "(agent not recorded)"
    return visible(f"{what} {steps.run_id} · agent {agent} · {steps.status}")


# ---- JSON views of a step ----------------------------------------------------------------------------------------------


def _error_json(error: ErrorInfo | None) -> dict[str, JsonValue] | None:
    return None if error is None else {"code": error.code, "message": error.message}


def tool_step_json(step: ToolStep) -> dict[str, JsonValue]:
    from bearagent.domain._base import thaw_json_mapping

    return {
        "tool_call_id": step.tool_call_id,
        "name": step.name,
        "arguments": thaw_json_mapping(step.arguments) if step.arguments is not None else None,
        "outcome": step.outcome,
        "content": step.content,
        "is_error": step.is_error,
        "error": _error_json(step.error),
        "child_runs": list(step.child_run_ids),
        "sequence": step.requested_sequence,
    }


def model_step_json(step: ModelStep) -> dict[str, JsonValue]:
    from bearagent.domain._base import thaw_json_mapping

    calls = step.tool_calls
    return {
        "agent": step.agent,
        "text": step.text,
        "tool_calls": None
        if calls is None
        else [
            {"tool_call_id": str(c.tool_call_id), "name": c.name, "arguments": thaw_json_mapping(c.arguments)}
            for c in calls
        ],
        "usage": {"input_tokens": step.usage.input_tokens, "output_tokens": step.usage.output_tokens},
        "stop_reason": step.stop_reason,
        "error": _error_json(step.error),
        "failed_attempts": [{"sequence": a.sequence, "kind": a.kind, "code": a.code} for a in step.failed_attempts],
        "switched_to": step.switched_to,
        "sequence": step.requested_sequence,
    }


def end_json(steps: RunSteps) -> dict[str, JsonValue]:
    return {"status": steps.status, "final_text": steps.final_text, "error": _error_json(steps.error)}


def steps_json(steps: RunSteps) -> list[dict[str, JsonValue]]:
    """The step list (`replay --dry --json`): one object per model turn, tool call and the end."""
    out: list[dict[str, JsonValue]] = []
    for turn in steps.turns:
        out.append({"step": str(turn.index), "kind": "model", **model_step_json(turn)})
        for i, tool in enumerate(turn.tools, start=1):
            out.append({"step": f"{turn.index}.{i}", "kind": "tool", **tool_step_json(tool)})
    out.append({"step": "end", "kind": "end", **end_json(steps)})
    return out
