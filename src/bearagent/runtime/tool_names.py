"""The names tools are offered to the model under: provider-safe (`[A-Za-z0-9_-]{1,64}`, what every provider API
accepts) and unique within one projection, else a configuration error naming both origins."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Protocol

from bearagent.domain.errors import BearAgentError, ErrorInfo


class NamedTool(Protocol):
    """What the collision check reads of a projected tool (`runtime.projection.ProjectedTool`, which imports this
    module: the check needs only these fields, so it names them here instead of importing back)."""

    @property
    def name(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def internal_name(self) -> str: ...
    @property
    def origin(self) -> str: ...


PROVIDER_SAFE_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ACTION_PREFIX = "action__"


def provider_safe_name(name: str) -> str:
    """`name` with every character outside `[A-Za-z0-9_-]` replaced by `_`, shortened to 64 with a hash suffix."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name) or "_"
    if len(safe) > 64:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        safe = f"{safe[:55]}_{digest}"
    return safe


def mcp_tool_name(server: str, tool: str) -> str:
    """An MCP tool as the model sees it: `mcp__<server>__<tool>`, made provider-safe."""
    return provider_safe_name(f"mcp__{server}__{tool}")


def action_tool_name(action: str) -> str:
    """An action as the model sees it: `action__<name>`, made provider-safe."""
    return provider_safe_name(ACTION_PREFIX + action)


def check_collisions(agent_name: str, tools: Sequence[NamedTool]) -> None:
    """Raise `BearAgentError(configuration.tool_name_collision)` if two tools got one projected name."""
    seen: dict[str, NamedTool] = {}
    for tool in tools:
        if not PROVIDER_SAFE_RE.match(tool.name):  # pragma: no cover - provider_safe_name guarantees it
            raise AssertionError(tool.name)
        other = seen.get(tool.name)
        if other is not None:
            raise BearAgentError(
                ErrorInfo.of(
                    "configuration",
                    "tool_name_collision",
                    f"agent {agent_name!r}: tool name {tool.name!r} is projected twice: {other.source} {other.internal_name!r} "
                    f"from {other.origin} and {tool.source} {tool.internal_name!r} from {tool.origin}",
                    tool=tool.name,
                ),
                hint="rename one of them, or remove one from the agent's allowlists (`tools`, `disallowed_tools`, `mcp`)",
            )
        seen[tool.name] = tool
