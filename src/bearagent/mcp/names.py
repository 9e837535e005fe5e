"""Projected names and side-effect classes of MCP tools (no SDK import)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from bearagent.domain.tools import TOOL_NAME_RE, SideEffect

MCP_PREFIX = "mcp__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]")
_MAX_NAME = 128


def exact_tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>` exactly as the server spells the tool (what hooks and allowlists match)."""
    return f"{MCP_PREFIX}{server}__{tool}"


def projected_tool_name(server: str, tool: str) -> str:
    """The `ToolSpec.name` for a server tool.

    It is `mcp__<server>__<tool>` whenever that is a valid BearAgent tool name (the usual case). A tool name with
    characters outside `[A-Za-z0-9_.:-]` (spaces, slashes, non-ASCII) or a name too long for 128 characters gets
    those characters replaced by `_` and a short hash suffix of the exact name, so two different server names can
    never collapse into one. The exact server-side name is kept on the tool and is what goes over the wire.
    """
    exact = exact_tool_name(server, tool)
    if TOOL_NAME_RE.match(exact):
        return exact
    digest = hashlib.sha256(exact.encode("utf-8")).hexdigest()[:8]
    safe = _UNSAFE.sub("_", exact)
    return f"{safe[: _MAX_NAME - 9]}_{digest}"


def side_effect_from_annotations(annotations: Mapping[str, object] | None) -> SideEffect:
    """Side-effect class from MCP tool annotations (they are hints, so the safer reading wins):

    - `openWorldHint: true` -> `network` (the tool reaches outside the machine, even when it only reads);
    - else `readOnlyHint: true` -> `read_only`;
    - else (no annotations, or neither hint set) -> `execute`.
    """
    if not annotations:
        return "execute"
    if annotations.get("openWorldHint") is True:
        return "network"
    if annotations.get("readOnlyHint") is True:
        return "read_only"
    return "execute"
