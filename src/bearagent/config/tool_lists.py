"""Tool lists as Claude Code writes them: `tools: Read, Grep`, `allowed-tools: Bash(git add:*), Bash(git diff:*)`,
`allowed-tools: Bash(git:*) Read` (the Agent Skills spec's space-separated form), or a YAML list.

A separator inside parentheses belongs to the specifier (`Bash(git diff --stat, HEAD)` is one entry), so entries are
split on commas (and, where the format allows it, whitespace) outside parentheses only.
"""

from __future__ import annotations

from typing import cast


def split_tool_entries(text: str, *, spaces: bool = False) -> list[str]:
    """The entries of a comma- (and with `spaces`, whitespace-) separated tool list, parentheses respected."""
    entries: list[str] = []
    buf: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")" and depth > 0:
            depth -= 1
        if depth == 0 and (ch == "," or (spaces and ch.isspace())):
            entries.append("".join(buf))
            buf.clear()
            continue
        buf.append(ch)
    entries.append("".join(buf))
    return [e.strip() for e in entries if e.strip()]


def tool_list(value: object, *, spaces: bool = False) -> tuple[str, ...] | None:
    """A YAML list of strings (each item kept whole) or a separated string; None for anything else."""
    if isinstance(value, str):
        return tuple(split_tool_entries(value, spaces=spaces))
    if isinstance(value, list) and all(isinstance(v, str) for v in cast(list[object], value)):
        return tuple(v.strip() for v in cast(list[str], value) if v.strip())
    return None
