"""W3C trace context for the calls BearAgent makes on a run's behalf (an MCP tool call, a hook).

A tracing plugin answers the `trace_context` hook with the context of the span a call belongs to; BearAgent sends
it where each protocol carries it: the MCP request's `params._meta` (`traceparent`, `tracestate`, `baggage`, as
the MCP semantic conventions of OpenTelemetry name them), an HTTP hook's request headers, a command hook's
environment (`TRACEPARENT`, `TRACESTATE`, as Claude Code sets them for its subprocesses). With no tracing plugin
nothing is sent.

What a plugin answers is checked before it leaves the process: only the three W3C keys, `traceparent` in the W3C
format (version 00, non-zero ids), the other two bounded printable ASCII; anything else is dropped, never sent
half-formed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import cast

TRACEPARENT = re.compile(r"00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}")
KEYS = ("traceparent", "tracestate", "baggage")
MAX_VALUE_CHARS = 512
"""The W3C limit for tracestate (32 members) fits well under this; baggage may be longer, but not from us."""

TraceContext = Callable[[str | None, str | None], Mapping[str, str]]
"""(run id, tool call id) -> the W3C keys to send with an outgoing call of that run (empty: send nothing)."""


def checked(answer: object) -> dict[str, str]:
    """The W3C keys of a plugin's answer that are well-formed; {} when there is no valid `traceparent`."""
    if not isinstance(answer, Mapping):
        return {}
    given = cast(Mapping[object, object], answer)
    out: dict[str, str] = {}
    for key in KEYS:
        value = given.get(key)
        if not isinstance(value, str) or not value or len(value) > MAX_VALUE_CHARS:
            continue
        if key == "traceparent":
            if TRACEPARENT.fullmatch(value):
                out[key] = value
        elif value.isascii() and value.isprintable():
            out[key] = value
    return out if "traceparent" in out else {}


def of_call(trace: TraceContext | None, run_id: object, tool_call_id: object) -> Mapping[str, str]:
    """What a call of run `run_id` (serving tool call `tool_call_id`, when it does) sends; {} outside a run."""
    if trace is None or run_id is None:
        return {}
    return trace(str(run_id), str(tool_call_id) if tool_call_id else None)


def environment(context: Mapping[str, str]) -> dict[str, str]:
    """The variables a subprocess gets for `context` (the spelling Claude Code and the OTel SDKs read)."""
    return {key.upper(): value for key, value in context.items() if key != "baggage"}
