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


MAX_FIELDS = 30


def _field(name: str, spec: dict[str, JsonValue], value: JsonValue) -> JsonValue:
    """`value` as field `name` of the form takes it (MCP's primitive schemas); ValueError names the field."""
    kind = spec.get("type")
    enum = spec.get("enum")
    one_of = spec.get("oneOf")
    if isinstance(one_of, list):  # a titled enum: [{const, title}, ...]
        enum = [o.get("const") for o in one_of if isinstance(o, dict)]
    if kind == "array":
        items = spec.get("items")
        allowed = items.get("enum") if isinstance(items, dict) else None
        if isinstance(items, dict) and isinstance(items.get("anyOf"), list):
            allowed = [o.get("const") for o in cast(list[JsonValue], items["anyOf"]) if isinstance(o, dict)]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"field {name!r}: expected a list of strings")
        if isinstance(allowed, list):
            bad = [v for v in value if v not in allowed]
            if bad:
                raise ValueError(f"field {name!r}: {bad[0]!r} is not one of {allowed}")
        return list(value)
    if isinstance(enum, list):
        if value not in enum:
            raise ValueError(f"field {name!r}: {value!r} is not one of {enum}")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ValueError(f"field {name!r}: expected true or false, not {value!r}")
        return value
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"field {name!r}: expected a number, not {value!r}")
        if kind == "integer" and not float(value).is_integer():
            raise ValueError(f"field {name!r}: expected a whole number, not {value!r}")
        low, high = spec.get("minimum"), spec.get("maximum")
        if isinstance(low, int | float) and value < low:
            raise ValueError(f"field {name!r}: {value!r} is below the minimum {low}")
        if isinstance(high, int | float) and value > high:
            raise ValueError(f"field {name!r}: {value!r} is above the maximum {high}")
        return int(value) if kind == "integer" else value
    if not isinstance(value, str):
        raise ValueError(f"field {name!r}: expected text, not {value!r}")
    shortest, longest = spec.get("minLength"), spec.get("maxLength")
    if isinstance(shortest, int) and len(value) < shortest:
        raise ValueError(f"field {name!r}: at least {shortest} characters")
    if isinstance(longest, int) and len(value) > longest:
        raise ValueError(f"field {name!r}: at most {longest} characters")
    return value


def checked_content(
    action: str, content: object, schema: dict[str, JsonValue] | None, *, url_mode: bool = False
) -> dict[str, JsonValue] | None:
    """The answer's content as the server's form takes it: only an accepted form carries content, every required
    field present, no field the form does not have, each of the type it asks for. ValueError names the field."""
    if action != "accept" or url_mode:
        if content not in (None, {}):
            raise ValueError(
                f"only an accepted form carries content, not a {action} answer" + (" to a URL" if url_mode else "")
            )
        return None
    if not isinstance(content, dict):
        raise ValueError("content: expected an object with the form's fields")
    given = cast(dict[str, JsonValue], content)
    props_raw = (schema or {}).get("properties")
    props: dict[str, JsonValue] = props_raw if isinstance(props_raw, dict) else {}
    required_raw = (schema or {}).get("required")
    required = [str(r) for r in required_raw] if isinstance(required_raw, list) else []
    for name in given:
        if name not in props:
            raise ValueError(f"field {name!r}: the form has no such field (it has: {', '.join(props) or 'none'})")
    missing = [name for name in required if name not in given or given[name] is None]
    if missing:
        raise ValueError(f"field {missing[0]!r}: required")
    out: dict[str, JsonValue] = {}
    for name, value in given.items():
        if value is None:
            continue
        spec = props[name]
        out[name] = _field(name, spec if isinstance(spec, dict) else {}, value)
    return out


__all__ = [
    "ElicitAction",
    "ElicitationAnswer",
    "ElicitationQuestion",
    "Elicitor",
    "PersonAsker",
    "checked_content",
    "current_elicitor",
    "question_of",
    "wire_content",
]
