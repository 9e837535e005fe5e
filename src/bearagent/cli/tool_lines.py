"""What a tool call adds under its `● Name(argument)` line, as in Claude Code: for Edit and Write a coloured diff (cut
to a few lines, with a count of the rest), for a failed Bash its exit code and the end of its stderr.

Every text here comes from a model or a tool: it goes through `safe_text.visible` before it is printed.
"""

from __future__ import annotations

import difflib
import re

from rich.text import Text

from bearagent.cli.safe_text import visible
from bearagent.domain._base import JsonMapping, thaw_json_mapping

MAX_DIFF_LINES = 10
MAX_STDERR_LINES = 4
INDENT = "    "
_EXIT_CODE = re.compile(r"\n?\[Exit code (-?\d+)\]\s*$")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


def _lines(text: str) -> list[str]:
    return visible(text).split("\n")


def diff_lines(name: str, arguments: JsonMapping, *, width: int = 100) -> list[Text]:
    """The diff an Edit or Write made, for printing under its tool line; [] for other tools."""
    plain = thaw_json_mapping(arguments)
    limit = max(20, width - len(INDENT) - 2)
    rows: list[tuple[str, str]] = []  # (style, text)
    if name == "Edit":
        old, new = plain.get("old_string"), plain.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            return []
        for line in difflib.unified_diff(_lines(old), _lines(new), n=1, lineterm=""):
            if line.startswith(("---", "+++")):
                continue
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            rows.append((style, "⋯" if line.startswith("@@") else line))
        if rows and rows[0][1] == "⋯":
            rows = rows[1:]
    elif name == "Write":
        content = plain.get("content")
        if not isinstance(content, str):
            return []
        rows = [("green", "+" + line) for line in _lines(content.rstrip("\n"))]
    else:
        return []
    shown = rows[:MAX_DIFF_LINES]
    out = [Text(INDENT) + Text(_cut(text, limit), style=style) for style, text in shown]
    if len(rows) > len(shown):
        rest = len(rows) - len(shown)
        out.append(Text(f"{INDENT}… {rest} more line{'s' if rest != 1 else ''}", style="dim"))
    return out


def diff_summary(name: str, arguments: JsonMapping) -> str | None:
    """`Added 3 lines, removed 1` for an Edit, `Wrote 12 lines` for a Write; None for other tools."""
    plain = thaw_json_mapping(arguments)
    if name == "Write":
        content = plain.get("content")
        if isinstance(content, str):
            count = len(content.rstrip("\n").split("\n")) if content else 0
            return f"Wrote {count} line{'s' if count != 1 else ''}"
        return None
    if name != "Edit":
        return None
    old, new = plain.get("old_string"), plain.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    added = removed = 0
    for line in difflib.unified_diff(old.split("\n"), new.split("\n"), n=0, lineterm=""):
        if line.startswith(("---", "+++", "@@")):
            continue
        added += line.startswith("+")
        removed += line.startswith("-")
    return f"Added {added} line{'s' if added != 1 else ''}, removed {removed} line{'s' if removed != 1 else ''}"


def bash_failure(result: str) -> tuple[str, list[str]] | None:
    """For a failed Bash result (`stdout`, `stderr:` + stderr, `[Exit code N]`): (`exit N`, the last lines of its
    stderr, else of its output). None when the result is not a non-zero exit."""
    match = _EXIT_CODE.search(result)
    if match is None:
        return None
    body = result[: match.start()]
    _, marker, stderr = body.rpartition("\nstderr:\n")
    tail = stderr if marker else body  # no marker: the output is stderr alone, or stdout alone
    lines = [line for line in _lines(tail.strip("\n")) if line.strip()]
    return f"exit {match.group(1)}", lines[-MAX_STDERR_LINES:]
