"""An MCP server asking the user a question in the middle of a tool call (MCP elicitation): the question and the
answer as BearAgent passes them around, and who answers it for the call running in this task (`current_elicitor`:
the run's Elicitation hooks, then a person when the session has one; set by the service for a run's tool calls).

The connection's SDK callback runs in the connection's own task, so the manager hands it the elicitor of the call
it is making (`Connection.elicitor`) for the call's duration. Without an elicitor (or when nobody answers) the
question is declined and the model reads it (`manager._with_declined_note`), as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal, TypeAlias, cast

from bearagent.domain._base import JsonValue
from bearagent.ports import ToolContext

ElicitAction: TypeAlias = Literal["accept", "decline", "cancel"]
MAX_QUESTION_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class ElicitationQuestion:
    """What the server asked: a form (`requested_schema`: a flat JSON Schema object) or a URL to open."""

    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    requested_schema: dict[str, JsonValue] | None = None
    url: str | None = None
    elicitation_id: str | None = None


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    """The answer sent back; `answered_by` says who gave it (`hook`, `person`, or `nobody`: BearAgent declined)."""

    action: ElicitAction
    content: dict[str, JsonValue] | None = None
    answered_by: Literal["hook", "person", "nobody"] = "nobody"


Elicitor: TypeAlias = Callable[[ElicitationQuestion, ToolContext], Awaitable[ElicitationAnswer]]
"""Answers a server's question for the tool call `ToolContext` names."""

PersonAsker: TypeAlias = Callable[[ElicitationQuestion, ToolContext], Awaitable[ElicitationAnswer | None]]
"""Puts a server's question to a person (the interactive session's terminal); None: nobody could answer."""

current_elicitor: ContextVar[Elicitor | None] = ContextVar("bearagent_mcp_elicitor", default=None)
"""Who answers MCP servers' questions for the tool calls of the run running in this task (None: nobody)."""


def question_of(server: str, params: object) -> ElicitationQuestion:
    """The SDK's `ElicitRequestFormParams` / `ElicitRequestURLParams` as an `ElicitationQuestion` (bounded)."""
    message = " ".join(str(getattr(params, "message", "") or "").split())[:MAX_QUESTION_CHARS]
    url = getattr(params, "url", None)
    if isinstance(url, str) and url:
        elicitation_id = getattr(params, "elicitation_id", None)
        return ElicitationQuestion(
            server,
            message,
            mode="url",
            url=url[:MAX_QUESTION_CHARS],
            elicitation_id=elicitation_id if isinstance(elicitation_id, str) else None,
        )
    schema = getattr(params, "requested_schema", None)
    return ElicitationQuestion(
        server, message, requested_schema=cast(dict[str, JsonValue], schema) if isinstance(schema, dict) else None
    )


WireValue: TypeAlias = str | int | float | bool | list[str] | None


def wire_content(content: dict[str, JsonValue] | None) -> dict[str, WireValue]:
    """An accepted answer's content as MCP allows it (flat: strings, numbers, booleans, lists of strings); a
    nested value is sent as its JSON text, so the server's validation names what it did not expect."""
    import json

    out: dict[str, WireValue] = {}
    for key, value in (content or {}).items():
        if value is None or isinstance(value, str | int | float | bool):
            out[key] = value
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = [str(v) for v in value]
        else:
            out[key] = json.dumps(value, ensure_ascii=False)
    return out


__all__ = [
    "ElicitAction",
    "ElicitationAnswer",
    "ElicitationQuestion",
    "Elicitor",
    "PersonAsker",
    "current_elicitor",
    "question_of",
    "wire_content",
]
