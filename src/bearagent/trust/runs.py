"""What a workspace runs outside the model's tool calls: its hook handlers (config files and agent frontmatter) and
its MCP servers, each with the content of the workspace files it runs; and the remote A2A agents it delegates to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

from bearagent.a2a.specs import A2AAgentSpec
from bearagent.domain._base import JsonValue
from bearagent.domain.specs import HOOK_HANDLER_EXTENSIONS, HookMatcherSpec, McpServerSpec
from bearagent.hooks.capability_view import label as capability_label
from bearagent.trust.collector import Collector, line_containing, split_command


def hook_group(c: Collector, group: HookMatcherSpec, *, owner: str = "") -> None:
    """Each handler of a workspace hook group, with the files its command runs."""
    file = c.rel(group.source)
    for index, spec in enumerate(group.hooks):
        data = cast(dict[str, JsonValue], spec.model_dump(mode="json"))
        data["headers"] = sorted(spec.headers)
        data["capabilities"] = sorted(spec.capabilities)
        for extension in HOOK_HANDLER_EXTENSIONS:  # unused: the digest stays the one trusted before they existed
            if data.get(extension) in (None, False):
                data.pop(extension, None)
        what = spec.command or spec.url or spec.handler or spec.agent or (spec.prompt or "")
        if spec.type == "mcp_tool":
            what = f"{spec.server}.{spec.tool}"
        label = f"{group.event}[{group.matcher or '*'}]#{index + 1}"
        key = f"hook {owner}{label} {file}".strip()
        files: list[str] = []
        if spec.type == "command" and spec.command:
            words = [spec.command, *spec.args] if spec.args is not None else split_command(spec.command)
            files = c.files_run_by(words, f"hook {label}")
        canonical: JsonValue = {
            "event": group.event,
            "matcher": group.matcher,
            "agent": group.agent,
            "handler": data,
            "files": cast(JsonValue, files),
        }
        summary = f"{spec.type} hook on {group.event}" + (f" ({group.matcher})" if group.matcher else "")
        summary += f" runs {what!r}" if what else ""  # whole: a payload after padding is shown too
        summary += (
            f"; capabilities: {capability_label(spec)}"  # shown, not part of the digest (`hooks/capability_view.py`)
        )
        c.add(
            "hook",
            key,
            summary,
            canonical,
            file=file,
            line=line_containing(group.source, spec.command or spec.url or "")
            or line_containing(group.source, json.dumps(spec.command or spec.url or "")[1:-1]),
        )


def mcp_server(c: Collector, server: McpServerSpec) -> None:
    """A workspace MCP server: what it launches or dials, with the files a stdio server runs."""
    file = c.rel(server.source)
    data = cast(dict[str, JsonValue], server.model_dump(mode="json", exclude={"source", "level"}))
    data["headers"] = sorted(server.headers)
    if server.transport == "stdio":
        cwd = Path(server.cwd) if server.cwd else None
        if cwd is not None and not cwd.is_absolute() and c.root is not None:
            cwd = c.root / cwd
        data["files"] = cast(
            JsonValue, c.files_run_by([server.command or "", *server.args], f"MCP server {server.name}", cwd)
        )
        what = " ".join([server.command or "", *server.args])
    else:
        what = server.url or ""
    c.add(
        "mcp",
        f"mcp {server.name}",
        f"MCP server {server.name!r} ({server.transport}) runs {what!r}",
        cast(JsonValue, data),
        file=file,
        line=line_containing(server.source, f"{server.name}"),
    )


def a2a_agent(c: Collector, spec: A2AAgentSpec) -> None:
    """A workspace's remote A2A agent: the URL a delegated prompt goes to, with the headers (as written) it carries."""
    c.add(
        "a2a",
        f"a2a {spec.name}",
        f"remote A2A agent {spec.name!r} at {spec.url!r} (tool {spec.tool_name})",
        spec.canonical(),
        file=c.rel(spec.source),
        line=spec.line or line_containing(spec.source, spec.name),
    )
