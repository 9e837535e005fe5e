"""Two runs side by side, step by step: what `bearagent diff` prints and what `bearagent replay` judges. Pure.

Alignment is by position: model turn 1 of A beside model turn 1 of B, then the first tool call of each turn beside
each other, and so on; a step only one run has is `added` (only in B) or `removed` (only in A), a step both have is
`same` or `changed` (with the fields that differ). The run's end (status, final text, error) is the last row.

What is compared is a `Comparison`: `bearagent diff` compares what the model said and did and what the tools
returned (text, tool names and arguments, results, usage, stop reason, agent switches), not ids, which differ
between any two runs; a replay also compares the ids, which it reuses (`REPLAY`). A field that one log did not
record (a v1 event: `None`) is not compared. Tool names are compared as today's names (`workspace.read` = `Read`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from bearagent.domain._base import JsonMapping, thaw_json_mapping
from bearagent.domain.run_events import RecordedToolCall
from bearagent.runtime.run_steps import ModelStep, RunSteps, ToolStep, canonical_tool_name

RowStatus: TypeAlias = Literal["same", "changed", "added", "removed"]
RowKind: TypeAlias = Literal["model", "tool", "end"]
MAX_DIFF_LINES = 12
MAX_LINE_CHARS = 160
MAX_VALUE_CHARS = 120


@dataclass(frozen=True, slots=True)
class Comparison:
    ids: bool = False
    """Compare tool call ids, provider call ids and child run ids (a replay reuses them)."""
    usage: bool = True


DIFF = Comparison()
REPLAY = Comparison(ids=True)


@dataclass(frozen=True, slots=True)
class FieldChange:
    field: str
    a: str
    b: str
    diff: tuple[str, ...] = ()
    """A short line diff (`-` A, `+` B) when the values are texts of several lines."""


@dataclass(frozen=True, slots=True)
class Row:
    step: str
    """`2` for model turn 2, `2.1` for its first tool call, `end` for how the run ended."""
    kind: RowKind
    status: RowStatus
    a: ModelStep | ToolStep | RunSteps | None
    b: ModelStep | ToolStep | RunSteps | None
    changes: tuple[FieldChange, ...] = ()


def align(a: RunSteps, b: RunSteps, comparison: Comparison = DIFF) -> list[Row]:
    """The rows of A beside B (see the module docstring)."""
    rows: list[Row] = []
    for i in range(max(len(a.turns), len(b.turns))):
        turn_a = a.turns[i] if i < len(a.turns) else None
        turn_b = b.turns[i] if i < len(b.turns) else None
        rows.append(_model_row(str(i + 1), turn_a, turn_b, comparison))
        tools_a = turn_a.tools if turn_a is not None else ()
        tools_b = turn_b.tools if turn_b is not None else ()
        for j in range(max(len(tools_a), len(tools_b))):
            tool_a = tools_a[j] if j < len(tools_a) else None
            tool_b = tools_b[j] if j < len(tools_b) else None
            rows.append(_tool_row(f"{i + 1}.{j + 1}", tool_a, tool_b, comparison))
    end_changes = _end_changes(a, b)
    rows.append(Row("end", "end", "changed" if end_changes else "same", a, b, end_changes))
    return rows


def _model_row(step: str, a: ModelStep | None, b: ModelStep | None, comparison: Comparison) -> Row:
    if a is None or b is None:
        return Row(step, "model", "added" if a is None else "removed", a, b)
    changes = tuple(_model_changes(a, b, comparison))
    return Row(step, "model", "changed" if changes else "same", a, b, changes)


def _tool_row(step: str, a: ToolStep | None, b: ToolStep | None, comparison: Comparison) -> Row:
    if a is None or b is None:
        return Row(step, "tool", "added" if a is None else "removed", a, b)
    changes = tuple(_tool_changes(a, b, comparison))
    return Row(step, "tool", "changed" if changes else "same", a, b, changes)


def _calls_text(calls: Sequence[RecordedToolCall], ids: bool) -> str:
    lines: list[str] = []
    for call in calls:
        line = f"{canonical_tool_name(call.name)} {compact_json(call.arguments)}"
        if ids:
            line = f"{line} [{call.tool_call_id} {call.provider_call_id or '-'}]"
        lines.append(line)
    return "\n".join(lines)


def _model_changes(a: ModelStep, b: ModelStep, comparison: Comparison) -> list[FieldChange]:
    out: list[FieldChange] = []
    if a.error is not None or b.error is not None:
        _compare(out, "error", _code(a.error), _code(b.error))
    if a.text is not None and b.text is not None:
        _compare(out, "text", a.text, b.text)
    if a.tool_calls is not None and b.tool_calls is not None:
        _compare(
            out, "tool_calls", _calls_text(a.tool_calls, comparison.ids), _calls_text(b.tool_calls, comparison.ids)
        )
    if comparison.usage:
        _compare(out, "usage", _usage(a), _usage(b))
    if a.stop_reason is not None and b.stop_reason is not None:
        _compare(out, "stop_reason", a.stop_reason, b.stop_reason)
    if a.refusal is not None or b.refusal is not None:
        _compare(out, "refusal", a.refusal or "", b.refusal or "")
    _compare(out, "switched_to", a.switched_to or "-", b.switched_to or "-")
    return out


def _tool_changes(a: ToolStep, b: ToolStep, comparison: Comparison) -> list[FieldChange]:
    out: list[FieldChange] = []
    _compare(out, "name", canonical_tool_name(a.name), canonical_tool_name(b.name))
    if comparison.ids:
        _compare(out, "tool_call_id", a.tool_call_id, b.tool_call_id)
    if a.arguments is not None and b.arguments is not None:
        _compare(out, "arguments", compact_json(a.arguments), compact_json(b.arguments))
    if a.is_error is not None and b.is_error is not None:
        _compare(out, "is_error", str(a.is_error).lower(), str(b.is_error).lower())
    if a.content is not None and b.content is not None:
        _compare(out, "content", a.content, b.content)
    if comparison.ids:
        _compare(out, "child_runs", " ".join(a.child_run_ids) or "-", " ".join(b.child_run_ids) or "-")
    return out


def _end_changes(a: RunSteps, b: RunSteps) -> tuple[FieldChange, ...]:
    out: list[FieldChange] = []
    _compare(out, "status", a.status, b.status)
    if a.final_text is not None and b.final_text is not None:
        _compare(out, "final_text", a.final_text, b.final_text)
    _compare(out, "error", _code(a.error), _code(b.error))
    return tuple(out)


def _code(error: object) -> str:
    code = getattr(error, "code", None)
    return code if isinstance(code, str) else "-"


def _usage(step: ModelStep) -> str:
    return f"{step.usage.input_tokens} in / {step.usage.output_tokens} out"


def compact_json(value: JsonMapping) -> str:
    return json.dumps(thaw_json_mapping(value), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _compare(out: list[FieldChange], name: str, a: str, b: str) -> None:
    if a != b:
        out.append(FieldChange(name, _cut(a, MAX_VALUE_CHARS), _cut(b, MAX_VALUE_CHARS), text_diff(a, b)))


def _cut(text: str, limit: int) -> str:
    line = text.replace("\n", "⏎")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def text_diff(a: str, b: str, *, limit: int = MAX_DIFF_LINES) -> tuple[str, ...]:
    """A short line diff of two texts (`-` lines of A, `+` lines of B, no headers, at most `limit` lines and a
    count of the rest); empty when both are one line (the values say it all)."""
    if "\n" not in a and "\n" not in b:
        return ()
    lines = [
        _cut(line, MAX_LINE_CHARS)
        for line in difflib.unified_diff(a.splitlines(), b.splitlines(), n=0, lineterm="")
        if not line.startswith(("---", "+++", "@@"))
    ]
    if len(lines) > limit:
        rest = len(lines) - limit
        lines = [*lines[:limit], f"… {rest} more line{'s' if rest != 1 else ''}"]
    return tuple(lines)


def changed_rows(rows: Sequence[Row]) -> list[Row]:
    return [row for row in rows if row.status != "same"]
