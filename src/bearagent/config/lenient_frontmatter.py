"""Frontmatter as Claude Code reads it when it is not strict YAML.

People write agent, skill and command files by hand, and Claude Code's own `/agents` wizard writes descriptions such
as `description: Use this agent when ... Examples:` followed by `<example>` blocks with `Context:`, `user:` and
`assistant:` lines. Claude Code loads those; a strict YAML parser stops at the first `: ` inside a value ("mapping
values are not allowed here"). So when strict YAML fails, the frontmatter is read again line by line:

- a top-level key is a line that starts at column 0 with a lowercase `key:` (`name:`, `description:`, `tools:`,
  `allowed-tools:`, `disallowedTools:` ...) that is a key the file kind knows, or close to one (so a misspelt key
  still reaches the unknown-key warning); no line inside an open `<tag>` ... `</tag>` block (a line starting with
  `<tag>` opens one, a line ending with `</tag>` closes it) is a key;
- a key's value runs to the end of its line and continues over the following lines (indented or not) until the next
  top-level key;
- each key's text is still parsed as YAML on its own (`tools: [Read, Grep]` stays a list, `model: sonnet` a string);
  only when that fails is the value the plain text, lines joined with newlines, common indentation removed.

Fail closed: a key whose value must be structured (hooks, tool lists, policy, MCP servers, inputs ...) never falls
back to text: if it does not parse as YAML, the lenient reading fails and the strict error stands (an agent file that
declares guards and does not parse still stops a run). A duplicate key, text before the first key, or an alias
(`*name`) in any value also fails it. The caller has already bounded the document's size (`safe_yaml`).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import cast

import yaml

STRUCTURED_KEYS = frozenset(
    {
        "hooks",
        "policy",
        "tools",
        "disallowed_tools",
        "disallowedTools",
        "disallowed-tools",
        "allowed-tools",
        "allowed_tools",
        "permission_mode",
        "permissionMode",
        "mcp",
        "mcpServers",
        "mcp_servers",
        "skills",
        "subagents",
        "switch",
        "actions",
        "inputs",
        "metadata",
        "budgets",
        "maxTurns",
        "max_turns",
        "mode",
    }
)
"""Keys whose values decide what an agent may do: never read as plain text."""

_KEY_LINE = re.compile(r"^(?P<key>[a-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(?P<value>.*?))?[ \t]*$")
_OPEN_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9_-]*)(?:\s[^<>]*)?>")
_CLOSE_TAG = re.compile(r"</([A-Za-z][A-Za-z0-9_-]*)\s*>")


@dataclass
class _Chunk:
    key: str
    value: str
    line: int
    rest: list[str] = field(default_factory=lambda: [])


class LenientError(ValueError):
    """The frontmatter cannot be read leniently either (the strict error is the one to report)."""


def parse_lenient(text: str, known: Collection[str]) -> dict[str, object]:
    """The mapping Claude Code would read from frontmatter `text` (see the module docstring); `known` are the keys
    of this file kind (an unknown key close to one of them still counts as a key). Raises `LenientError`."""
    from bearagent.domain.suggest import did_you_mean

    chunks: list[_Chunk] = []
    depth: dict[str, int] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        match = _KEY_LINE.match(line) if not any(depth.values()) else None
        if match is not None:
            key = match.group("key")
            if key not in known and did_you_mean(key, known) is None:
                match = None
        if match is not None:
            chunks.append(_Chunk(match.group("key"), match.group("value") or "", number))
        elif chunks:
            chunks[-1].rest.append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            raise LenientError(f"line {number} comes before the first key")
        stripped = line.strip()
        opened = _OPEN_TAG.match(stripped)  # block tags only: a line that starts with <tag> / ends with </tag>
        if opened is not None:
            tag = opened.group(1).lower()
            depth[tag] = depth.get(tag, 0) + 1
        closed = _CLOSE_TAG.search(stripped)
        if closed is not None and (closed.end() == len(stripped) or closed.start() == 0):
            tag = closed.group(1).lower()
            depth[tag] = max(0, depth.get(tag, 0) - 1)
    out: dict[str, object] = {}
    for chunk in chunks:
        if chunk.key in out:
            raise LenientError(f"duplicate key {chunk.key!r} (line {chunk.line})")
        out[chunk.key] = _value(chunk)
    return out


def _value(chunk: _Chunk) -> object:
    rest = list(chunk.rest)
    while rest and not rest[-1].strip():
        rest.pop()
    source = f"{chunk.key}: {chunk.value}" + ("\n" + "\n".join(rest) if rest else "")
    parsed = _yaml_value(source, chunk.key)
    if parsed is not _FAILED:
        return parsed
    if chunk.key in STRUCTURED_KEYS:
        raise LenientError(f"{chunk.key!r} (line {chunk.line}) is not valid YAML")
    body = textwrap.dedent("\n".join(rest))
    return f"{chunk.value.strip()}\n{body}".strip()


_FAILED = object()


def _yaml_value(source: str, key: str) -> object:
    from bearagent.config.safe_yaml import yaml_loader

    try:
        for event in cast(Iterable[yaml.Event], yaml.parse(source, Loader=yaml_loader())):  # pyright: ignore[reportUnknownMemberType]
            if isinstance(event, yaml.AliasEvent):
                return _FAILED  # no alias expansion on the lenient path: it is not bounded there
        data = yaml.load(source, Loader=yaml_loader())
    except yaml.YAMLError:
        return _FAILED
    if not isinstance(data, dict) or len(cast(dict[object, object], data)) != 1 or key not in data:
        return _FAILED
    return cast(dict[str, object], data)[key]
