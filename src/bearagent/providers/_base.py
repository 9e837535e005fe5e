"""History and tool-call helpers the provider kit and the built-in adapters share: tool-call arguments parsed and
bounded, the call ids sent on the wire, the provider-safe tool names of a request, tool results as text. The stream
loop, the accumulation of an answer and its time limits are the public kit's (`kit.py`, over `_core.py`); the
built-in SDK adapters are written on it through `_sdk.py`. `ProviderSettings` is re-exported from `_core.py`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import cast

from bearagent.domain._base import JsonBoundsError, JsonValue, validate_json_object
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message, ToolCallPart, ToolResultPart
from bearagent.domain.models import ModelRequest
from bearagent.providers._core import ProviderSettings as ProviderSettings
from bearagent.providers.tool_names import ToolNameMap


def parse_arguments(raw: str | None) -> tuple[dict[str, JsonValue], str | None]:
    """Parse a tool call's argument text. Returns `(arguments, None)` or `({}, why_it_is_invalid)`; never raises."""
    if raw is None or not raw.strip():
        return {}, None
    try:
        value: object = json.loads(raw)
    except json.JSONDecodeError as exc:
        preview = raw if len(raw) <= 200 else raw[:200] + "…"
        why = f"the model's tool arguments are not valid JSON ({exc.msg} at character {exc.pos}): {preview}"
        return {}, why[:2000]
    except RecursionError:
        return {}, "the model's tool arguments nest too deeply to be parsed"
    if not isinstance(value, dict):
        return {}, f"the model's tool arguments must be a JSON object, got {type(value).__name__}: {raw[:200]}"
    try:
        return validate_json_object(cast(object, value), where="arguments"), None
    except JsonBoundsError as exc:
        return {}, f"the model's tool arguments are too large or too deep: {exc}"[:2000]


def wire_call_ids(messages: Sequence[Message]) -> dict[ToolCallId, str]:
    """Our tool_call_id -> the call id sent on the wire: the provider's own id, or ours when it has none."""
    out: dict[ToolCallId, str] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                out[part.tool_call_id] = part.provider_call_id or str(part.tool_call_id)
    return out


def tool_result_of(message: Message) -> ToolResultPart:
    """The result a `tool` message carries (its first and only part)."""
    part = message.parts[0]
    assert isinstance(part, ToolResultPart)
    return part


def error_text(part: ToolResultPart) -> str:
    """Protocols without an error flag get the flag in the text, so the model still knows the call failed."""
    return f"Error: {part.content}" if part.is_error else part.content


def name_map_for(request: ModelRequest) -> ToolNameMap:
    names = [tool.name for tool in request.tools]
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, (ToolCallPart, ToolResultPart)):
                names.append(part.name)
    return ToolNameMap(names)
