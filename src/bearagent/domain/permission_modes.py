"""The permission-mode vocabulary, in one place (issue 30: it was spread over `tools/policy.py`, `trust/modes.py`,
`trust/widening.py` and the config readers): the modes and their Claude Code spellings, the default, how a
written value is read, and how much each mode allows without asking. What a mode decides for a tool call is the
policy's (`tools/policy.py`); which mode is in force, the trust boundary's (`trust/modes.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias

from bearagent.domain.errors import BearAgentError, ErrorInfo

PermissionMode: TypeAlias = Literal["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"]
PERMISSION_MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
DEFAULT_PERMISSION_MODE: PermissionMode = "acceptEdits"
BYPASS: PermissionMode = "bypassPermissions"
MODE_ALIASES: Mapping[str, PermissionMode] = {
    "manual": "default",
    "accept_edits": "acceptEdits",
    "dont_ask": "dontAsk",
    "bypass_permissions": "bypassPermissions",
}
"""Other spellings accepted where a mode is written (snake case, and `manual` for `default`)."""
MODE_LOOSENESS: Mapping[str, int] = {"plan": 0, "dontAsk": 0, "default": 1, "acceptEdits": 2, "bypassPermissions": 3}


def parse_permission_mode(value: str, *, where: str = "permission_mode") -> PermissionMode:
    """Accept the Claude Code spellings (and `manual`); a wrong value is an error naming the allowed ones."""
    if value in PERMISSION_MODES:
        return value  # type: ignore[return-value]
    if value in MODE_ALIASES:
        return MODE_ALIASES[value]
    raise BearAgentError(
        ErrorInfo.of(
            "configuration",
            "invalid_permission_mode",
            f"{where}: {value!r} is not a permission mode. Use one of: {', '.join(PERMISSION_MODES)}.",
            value=value[:100],
        )
    )


def mode_looseness(mode: str) -> int:
    """How much a permission mode allows without asking (unknown spellings count as the strictest)."""
    return MODE_LOOSENESS.get(mode, 0)
