"""An MCP server's question (MCP elicitation) put to the person at the interactive session's terminal, when no
Elicitation hook answered it: the server's message, then `[y]es / [n]o / [c]ancel`, then each field of the form
(`requested_schema`: strings, numbers, integers, booleans, enums), or, for a URL request, the URL to open.

The server's text is untrusted: control characters are shown escaped (`safe_text.visible`). A field that does not
parse is asked again (three tries, then the question is declined); an empty answer to an optional field leaves it
out. The answer is the server's, and the `ElicitationResult` hooks still see it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

from rich.console import Console
from rich.text import Text

from bearagent.cli.safe_text import visible
from bearagent.domain._base import JsonValue
from bearagent.mcp.elicitation import ElicitationAnswer, ElicitationQuestion, PersonAsker
from bearagent.ports import ToolContext

MAX_FIELDS = 30
TRIES = 3


def _parse(kind: str, enum: list[str] | None, raw: str) -> JsonValue:
    """The typed value of `raw` for a field of JSON Schema `kind`; ValueError says what is expected."""
    if enum is not None:
        if raw not in enum:
            raise ValueError(f"one of: {', '.join(enum)}")
        return raw
    if kind == "boolean":
        low = raw.lower()
        if low in ("y", "yes", "true"):
            return True
        if low in ("n", "no", "false"):
            return False
        raise ValueError("y or n")
    if kind == "integer":
        return int(raw)
    if kind == "number":
        return float(raw)
    return raw


def make_elicitation_asker(console: Console, read: Callable[[str], str]) -> PersonAsker:
    async def line(prompt: str) -> str:
        return (await asyncio.to_thread(read, prompt)).strip()

    async def ask(question: ElicitationQuestion, context: ToolContext) -> ElicitationAnswer | None:
        console.print(
            Text(f"? MCP server {visible(question.server)} asks: {visible(question.message)}", style="yellow")
        )
        if question.mode == "url":
            console.print(Text(f"  open {visible(question.url or '')}", style="dim"))
            choice = (await line("  done there? [y]es, [n]o (decline), [c]ancel? ")).lower()
        else:
            choice = (await line("  answer it? [y]es, [n]o (decline), [c]ancel? ")).lower()
        if choice in ("c", "cancel"):
            return ElicitationAnswer("cancel", None, answered_by="person")
        if choice not in ("y", "yes"):
            return ElicitationAnswer("decline", None, answered_by="person")
        if question.mode == "url":
            return ElicitationAnswer("accept", None, answered_by="person")
        schema: dict[str, object] = dict(question.requested_schema or {})
        props = schema.get("properties")
        fields = cast(dict[str, object], props) if isinstance(props, dict) else {}
        required_raw = schema.get("required")
        required = {str(r) for r in cast(list[object], required_raw)} if isinstance(required_raw, list) else set[str]()
        content: dict[str, JsonValue] = {}
        for name, spec_value in list(fields.items())[:MAX_FIELDS]:
            spec = cast(dict[str, object], spec_value) if isinstance(spec_value, dict) else {}
            kind = str(spec.get("type") or "string")
            enum_raw = spec.get("enum")
            enum = [str(e) for e in cast(list[object], enum_raw)] if isinstance(enum_raw, list) else None
            hint = "|".join(enum) if enum is not None else ("y/n" if kind == "boolean" else kind)
            mark = "" if name in required else ", optional"
            for _ in range(TRIES):
                raw = await line(f"  {visible(name)} ({visible(hint)}{mark}): ")
                if not raw and name not in required:
                    break
                try:
                    content[name] = _parse(kind, enum, raw)
                    break
                except ValueError as exc:
                    console.print(Text(f"  expected {visible(str(exc))}", style="red"))
            else:
                console.print(Text("  no valid answer: the question is declined", style="red"))
                return ElicitationAnswer("decline", None, answered_by="person")
        return ElicitationAnswer("accept", content, answered_by="person")

    return ask


__all__ = ["make_elicitation_asker"]
