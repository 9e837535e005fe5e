"""Reading what `bearagent events RUN --json` prints (one JSON event a line), for the end-to-end tests of real
`bearagent` processes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def tool_outcomes(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """(tool name, ToolCallCompleted|ToolCallFailed, the payload as JSON) of each finished tool call, in order; the
    name is the one the model called (from its ModelCallCompleted), "?" when no model call named it."""
    names = {
        call["tool_call_id"]: call["name"]
        for e in events
        if e["event_type"] == "ModelCallCompleted"
        for call in e["payload"].get("tool_calls", [])
    }
    out: list[tuple[str, str, str]] = []
    for e in events:
        if e["event_type"] in ("ToolCallCompleted", "ToolCallFailed"):
            payload = e["payload"]
            out.append((str(names.get(payload.get("tool_call_id"), "?")), str(e["event_type"]), json.dumps(payload)))
    return out
