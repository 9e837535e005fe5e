"""What one model turn may hold, and what happens to a turn that holds more.

A provider adapter already fits what it builds into the domain types (`ModelToolCall.from_model`, `text_deltas`).
What only the whole turn shows is judged here, before the turn is recorded, so that an out-of-bounds turn is still a
recorded `ModelCallCompleted` (with its usage and cost) and never an internal error:

| limit                                                   | over it                                              |
|---------------------------------------------------------|------------------------------------------------------|
| `MAX_TOOL_CALLS_PER_TURN` tool calls                     | the first ones are recorded, none runs, the run fails |
| `MAX_TURN_TEXT_CHARS` characters of text                 | the text is recorded cut, the run fails               |
| a tool name longer than `MAX_TOOL_NAME_CHARS`            | that call fails (`validation.tool_name_too_long`)     |
| arguments with a lone surrogate (not valid Unicode)      | that call fails (`validation.invalid_tool_arguments`) |
| all calls' arguments over what one event holds           | the calls that do not fit fail (`...too_large`)       |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bearagent.domain._base import (
    MAX_JSON_NODES,
    MAX_JSON_TOTAL_CHARS,
    JsonValue,
    freeze_json_mapping,
    thaw_json_mapping,
)
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import ToolCallId
from bearagent.domain.models import (
    MAX_INVALID_ARGUMENTS_CHARS,
    MAX_RECORDED_NAME_CHARS,
    MAX_TOOL_CALLS_PER_TURN,
    MAX_TOOL_NAME_CHARS,
    MAX_TURN_TEXT_CHARS,
    ModelToolCall,
    has_lone_surrogate,
    valid_unicode,
)

_RESERVED_NODES = 64
"""JSON values of the turn's event besides its tool calls (ids, usage, text, stop reason, ...)."""
_CALL_NODES = 8
"""JSON values of one recorded call besides its arguments (the call object, ids, name, the empty arguments)."""
_CALL_CHARS = 2 * 36 + 2 * MAX_RECORDED_NAME_CHARS + MAX_INVALID_ARGUMENTS_CHARS + 128
"""Characters of one recorded call besides its arguments, at most (ids, name, the reason it failed, keys)."""
_RESERVED_CHARS = 64 * 1024
"""Characters of the turn's event besides its text and calls, at most (ids, model, request id, refusal, keys)."""


@dataclass(slots=True)
class BoundedTurn:
    """A turn fitted to the limits: the text and calls to record and act on, why single calls will not run, and
    the error that ends the run after the turn is recorded (None when the run goes on)."""

    text: str
    tool_calls: list[ModelToolCall]
    call_errors: dict[ToolCallId, ErrorInfo] = field(default_factory=dict[ToolCallId, ErrorInfo])
    error: ErrorInfo | None = None


def bound_turn(text: str, text_chars: int, tool_calls: Sequence[ModelToolCall], calls_asked: int) -> BoundedTurn:
    """`text` (the first part of the `text_chars` characters the model sent) and `tool_calls` (the first of the
    `calls_asked` calls) fitted to the limits of one turn."""
    error: ErrorInfo | None = None
    if text_chars > MAX_TURN_TEXT_CHARS:
        text = text[:MAX_TURN_TEXT_CHARS]
        error = ErrorInfo.of(
            "validation",
            "model_text_too_long",
            f"the model's text in one turn was {text_chars:,} characters long, more than the {MAX_TURN_TEXT_CHARS:,} "
            f"one turn may hold (the log keeps the first {MAX_TURN_TEXT_CHARS:,}); no tool call of that turn ran. "
            "Lower max_output_tokens on the model entry or ask for a shorter answer.",
            limit=MAX_TURN_TEXT_CHARS,
            size=text_chars,
        )
    calls = list(tool_calls[:MAX_TOOL_CALLS_PER_TURN])
    if calls_asked > MAX_TOOL_CALLS_PER_TURN:
        error = ErrorInfo.of(
            "validation",
            "too_many_tool_calls",
            f"the model asked for {calls_asked:,} tool calls in one turn, more than the {MAX_TOOL_CALLS_PER_TURN} "
            f"one turn may hold, so none of them ran (the log keeps the first {MAX_TOOL_CALLS_PER_TURN}). Ask for "
            "fewer tool calls at once.",
            limit=MAX_TOOL_CALLS_PER_TURN,
            size=calls_asked,
        )
    bounded = BoundedTurn(text=text, tool_calls=calls, error=error)
    nodes_left = MAX_JSON_NODES - _RESERVED_NODES - _CALL_NODES * len(calls)
    chars_left = MAX_JSON_TOTAL_CHARS - _RESERVED_CHARS - len(text) - _CALL_CHARS * len(calls)
    for index, call in enumerate(calls):
        if call.invalid_arguments is not None:
            continue  # the adapter already found the arguments unusable; they are empty
        if len(call.name) > MAX_TOOL_NAME_CHARS:
            size = (
                f"{len(call.name)}"
                if len(call.name) < MAX_RECORDED_NAME_CHARS
                else f"{MAX_RECORDED_NAME_CHARS} or more"
            )
            _refuse(
                bounded,
                index,
                ErrorInfo.of(
                    "validation",
                    "tool_name_too_long",
                    f"the model called a tool whose name is {size} characters long; tool names have at most "
                    f"{MAX_TOOL_NAME_CHARS} characters, so no tool has that name and the call did not run. Call one "
                    "of the tools offered, by its exact name.",
                    limit=MAX_TOOL_NAME_CHARS,
                ),
                keep_arguments=False,
            )
            continue
        nodes, chars, surrogate = _measure(call.arguments)
        if nodes - 1 > nodes_left or chars > chars_left:
            _refuse(
                bounded,
                index,
                ErrorInfo.of(
                    "validation",
                    "tool_arguments_too_large",
                    f"the arguments of this turn's tool calls together are larger than one turn may record "
                    f"({MAX_JSON_TOTAL_CHARS:,} characters and {MAX_JSON_NODES:,} JSON values for the whole turn, "
                    f"text included); this call's arguments ({chars:,} characters, {nodes:,} values) did not fit, so "
                    "it did not run. Call fewer tools at once, or send smaller arguments (write a large file in "
                    "parts).",
                    limit=MAX_JSON_TOTAL_CHARS,
                    size=chars,
                ),
                keep_arguments=False,
            )
            continue
        nodes_left -= nodes - 1
        chars_left -= chars
        if surrogate:
            _refuse(
                bounded,
                index,
                ErrorInfo.of(
                    "validation",
                    "invalid_tool_arguments",
                    f"the arguments for {call.name} are not valid Unicode: {_surrogate_path(call.arguments)} holds a "
                    "lone UTF-16 surrogate (such as \\ud800), which no file or log can store, so the call did not "
                    "run. Call the tool again with the text as valid characters.",
                ),
                keep_arguments=True,
            )
    return bounded


def _refuse(bounded: BoundedTurn, index: int, error: ErrorInfo, *, keep_arguments: bool) -> None:
    """Mark one call as not to be run: its reason is recorded with it; its arguments are kept (made valid Unicode)
    only when they fit, else recorded empty."""
    call = bounded.tool_calls[index]
    arguments: dict[str, JsonValue] = {}
    if keep_arguments:
        arguments = {valid_unicode(k): _valid_copy(v) for k, v in thaw_json_mapping(call.arguments).items()}
    bounded.tool_calls[index] = call.model_copy(
        update={
            "arguments": freeze_json_mapping(arguments),
            "invalid_arguments": error.message[:MAX_INVALID_ARGUMENTS_CHARS],
        }
    )
    bounded.call_errors[call.tool_call_id] = error


def _measure(value: Mapping[str, JsonValue]) -> tuple[int, int, bool]:
    """JSON values and characters of `value` as `validate_json_object` counts them, and whether a string or key
    holds a lone surrogate."""
    nodes = 0
    chars = 0
    surrogate = False
    stack: list[JsonValue] = [value]
    while stack:
        item = stack.pop()
        nodes += 1
        if isinstance(item, str):
            chars += len(item)
            surrogate = surrogate or has_lone_surrogate(item)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, (int, float)):
            chars += 8
        elif isinstance(item, Mapping):
            for key, child in item.items():
                chars += len(key)
                surrogate = surrogate or has_lone_surrogate(key)
                stack.append(child)
        else:
            stack.extend(item)
    return nodes, chars, surrogate


def _surrogate_path(value: JsonValue, path: str = "arguments") -> str | None:
    """Where the first lone surrogate is (`arguments.content`, `arguments.todos[2]`), None when there is none."""
    if isinstance(value, str):
        return path if has_lone_surrogate(value) else None
    if isinstance(value, Mapping):
        for key, child in value.items():
            if has_lone_surrogate(key):
                return f"a key of {path}"
            found = _surrogate_path(child, f"{path}.{valid_unicode(key)}")
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, child in enumerate(value):
            found = _surrogate_path(child, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def _valid_copy(value: JsonValue) -> JsonValue:
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, Mapping):
        return {valid_unicode(key): _valid_copy(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_valid_copy(child) for child in value]
    return value
