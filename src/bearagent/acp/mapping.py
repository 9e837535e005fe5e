"""What BearAgent's facts look like in ACP: a tool call's kind, title, locations and content, a TodoWrite list as a
plan, a prompt's content blocks as the text of a run. Pure functions over the SDK's schema models (untrusted model
output and tool output are bounded here: the client is shown at most `MAX_SHOWN` characters of any one piece)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from acp.schema import (
    AudioContentBlock,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    HttpMcpServer,
    ImageContentBlock,
    McpServerStdio,
    PlanEntry,
    ResourceContentBlock,
    TerminalToolCallContent,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
)
from pydantic import ValidationError

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.specs import McpServerSpec

MAX_SHOWN = 64_000
"""The most characters of one tool result, argument or title a client is sent (the log keeps the whole)."""
MAX_PROMPT_CHARS = 1_000_000
"""The most characters a prompt's blocks may add up to (a larger prompt is refused with the limit named)."""

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
PromptBlock = (
    TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock
)

_KINDS: dict[str, ToolKind] = {
    "Read": "read",
    "NotebookRead": "read",
    "LS": "read",
    "Write": "edit",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "Grep": "search",
    "Glob": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "Task": "think",
    "TodoWrite": "think",
    "Skill": "think",
    "SwitchAgent": "switch_mode",
}
_PATH_KEYS = ("file_path", "notebook_path", "path")


def shown(text: str, limit: int = MAX_SHOWN) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit} more characters; the run's log keeps the whole)"


def tool_kind(name: str) -> ToolKind:
    """The ACP kind of a tool (a client picks its icon from it); MCP and plugin tools are `other`."""
    return _KINDS.get(name, "other")


def tool_title(name: str, arguments: Mapping[str, JsonValue]) -> str:
    """A one-line title: the tool and what it acts on (`Read docs/a.md`, `Bash: ls -la`)."""
    for key in (*_PATH_KEYS, "pattern", "command", "url", "query", "description"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            first = value.strip().splitlines()[0]
            return shown(f"{name} {first}", 200)
    return name


def tool_locations(root: Path, arguments: Mapping[str, JsonValue]) -> list[ToolCallLocation]:
    """The files a call names, as absolute paths (relative ones are the workspace's), for the client to follow."""
    out: list[ToolCallLocation] = []
    for key in _PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip() and len(value) <= 4_096 and "\x00" not in value:
            path = Path(value)
            line = arguments.get("offset")
            out.append(
                ToolCallLocation(
                    path=str(path if path.is_absolute() else root / path),
                    line=line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None,
                )
            )
    return out


def call_content(name: str, root: Path, arguments: Mapping[str, JsonValue]) -> list[ToolContent]:
    """What a call shows before it runs: a Write or Edit as the diff it proposes (the client renders it)."""
    path = arguments.get("file_path")
    if not isinstance(path, str) or not path.strip():
        return []
    full = str(Path(path) if Path(path).is_absolute() else root / path)
    if name == "Write" and isinstance(arguments.get("content"), str):
        return [
            FileEditToolCallContent(type="diff", path=full, old_text=None, new_text=shown(str(arguments["content"])))
        ]
    if name == "Edit" and isinstance(arguments.get("new_string"), str):
        old = arguments.get("old_string")
        return [
            FileEditToolCallContent(
                type="diff",
                path=full,
                old_text=shown(old) if isinstance(old, str) else None,
                new_text=shown(str(arguments["new_string"])),
            )
        ]
    return []


def result_content(result: str) -> list[ToolContent]:
    """A tool result as the call's text content (bounded)."""
    if not result:
        return []
    return [ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=shown(result)))]


def plan_entries(arguments: Mapping[str, JsonValue]) -> list[PlanEntry] | None:
    """A TodoWrite call's list as ACP plan entries; None when the arguments are not a todo list."""
    todos = thaw_json_mapping(arguments).get("todos")  # frozen JSON from the log: plain lists and dicts
    if not isinstance(todos, list):
        return None
    entries: list[PlanEntry] = []
    for todo in todos[:500]:
        if not isinstance(todo, dict):
            continue
        content, status = todo.get("content"), todo.get("status")
        if not isinstance(content, str) or not content.strip():
            continue
        entries.append(
            PlanEntry(
                content=shown(content, 2_000),
                priority="medium",
                status=status if status in ("pending", "in_progress", "completed") else "pending",
            )
        )
    return entries


def prompt_text(blocks: Sequence[PromptBlock]) -> str:
    """The text of a run from a prompt's blocks: text as is, a linked file as `@path`, an embedded resource's text
    (an editor's unsaved buffer) quoted under its URI. Images and audio are refused (not advertised)."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"@{_uri_path(block.uri)}")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f"<file uri={_uri_path(resource.uri)!r}>\n{resource.text}\n</file>")
            else:
                parts.append(f"@{_uri_path(resource.uri)}")
        else:
            raise ValueError(f"a prompt's {block.type} block is not supported (the agent advertises text only)")
    text = "\n".join(parts)
    if len(text) > MAX_PROMPT_CHARS:
        raise ValueError(f"the prompt has {len(text)} characters, more than the {MAX_PROMPT_CHARS} accepted")
    return text


def _uri_path(uri: str) -> str:
    return uri.removeprefix("file://") if uri.startswith("file://") else uri


MAX_CLIENT_MCP_SERVERS = 32


def client_mcp_servers(servers: Sequence[object] | None) -> list[McpServerSpec]:
    """The MCP servers a client passes in `session/new` (its user's own, like the user's config: level `platform`, never
    on the workspace's trust surface), as BearAgent entries; stdio and HTTP servers. A bad entry is a `ValueError`
    naming it and the fix."""
    out: list[McpServerSpec] = []
    if len(servers or ()) > MAX_CLIENT_MCP_SERVERS:
        raise ValueError(
            f"mcpServers has {len(servers or ())} entries, more than the {MAX_CLIENT_MCP_SERVERS} accepted"
        )
    for i, server in enumerate(servers or ()):
        where = f"mcpServers[{i}]"
        try:
            if isinstance(server, McpServerStdio):
                out.append(
                    McpServerSpec(
                        name=server.name,
                        transport="stdio",
                        command=server.command,
                        args=tuple(server.args),
                        env={e.name: e.value for e in server.env},
                        source="ACP client",
                        level="platform",
                    )
                )
            elif isinstance(server, HttpMcpServer):
                out.append(
                    McpServerSpec(
                        name=server.name,
                        transport="http",
                        url=server.url,
                        headers={h.name: h.value for h in server.headers},
                        source="ACP client",
                        level="platform",
                    )
                )
            else:
                kind = getattr(server, "type", type(server).__name__)
                raise ValueError(f"{where}: a {kind} MCP server is not supported; pass a stdio or http server")
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ValueError(f"{where} ({getattr(server, 'name', '?')!r}): {first['msg']}") from None
    return out
