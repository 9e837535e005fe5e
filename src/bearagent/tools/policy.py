"""Tool policy: the agent's allowlist, the workspace kind, permission rules and the permission-mode defaults.

Order of a decision for one call:
1. workspace kind `chat` -> deny (a chat workspace has no tools);
2. the agent's allowlist (`disallowed_tools` removed first, then `tools`; `*` = all) -> deny if not listed;
3. permission rules: deny, then ask, then allow (first match wins);
4. otherwise the default of the permission mode for the tool's side-effect class (table in docs/tools.md).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias
from urllib.parse import urlsplit

from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.tools import SideEffect, ToolSpec
from bearagent.tools.permissions import PermissionRule, PermissionRules, RuleKind
from bearagent.tools.shell_split import split_commands

PermissionMode: TypeAlias = Literal["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"]
WorkspaceKind: TypeAlias = Literal["project", "chat"]
DEFAULT_PERMISSION_MODE: PermissionMode = "acceptEdits"
PERMISSION_MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
_MODE_ALIASES: Mapping[str, PermissionMode] = {
    "manual": "default",
    "accept_edits": "acceptEdits",
    "dont_ask": "dontAsk",
    "bypass_permissions": "bypassPermissions",
}

# What happens to a call that no rule matched: mode -> side effect -> decision.
MODE_DEFAULTS: Mapping[PermissionMode, Mapping[SideEffect, RuleKind]] = {
    "default": {"read_only": "allow", "write": "ask", "execute": "ask", "network": "ask"},
    "acceptEdits": {"read_only": "allow", "write": "allow", "execute": "allow", "network": "allow"},
    "plan": {"read_only": "allow", "write": "deny", "execute": "deny", "network": "allow"},
    "dontAsk": {"read_only": "allow", "write": "deny", "execute": "deny", "network": "deny"},
    "bypassPermissions": {"read_only": "allow", "write": "allow", "execute": "allow", "network": "allow"},
}


def parse_permission_mode(value: str, *, where: str = "permission_mode") -> PermissionMode:
    """Accept the Claude Code spellings (and `manual`); a wrong value is an error naming the allowed ones."""
    if value in PERMISSION_MODES:
        return value  # type: ignore[return-value]
    if value in _MODE_ALIASES:
        return _MODE_ALIASES[value]
    raise BearAgentError(
        ErrorInfo.of(
            "configuration",
            "invalid_permission_mode",
            f"{where}: {value!r} is not a permission mode. Use one of: {', '.join(PERMISSION_MODES)}.",
            value=value[:100],
        )
    )


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """`allow`, `ask` or `deny`, why, and (for ask/deny by default) the config line that would allow the call."""

    outcome: RuleKind
    reason: str
    rule: str | None = None
    suggested_rule: str | None = None


_KIND: Mapping[SideEffect, str] = {
    "read_only": "a read-only",
    "write": "a write",
    "execute": "an execute",
    "network": "a network",
}
_ALLOWED_BY_MODE = PolicyDecision("allow", "allowed by the permission mode's default for this side-effect class")


class ToolPolicy:
    """Everything the gate asks before running a tool."""

    def __init__(
        self,
        *,
        rules: PermissionRules | None = None,
        mode: PermissionMode = DEFAULT_PERMISSION_MODE,
        tools: Iterable[str] | None = None,
        disallowed_tools: Iterable[str] = (),
        workspace_kind: WorkspaceKind = "project",
        root: Path | None = None,
    ) -> None:
        self.mode: PermissionMode = mode
        self.workspace_kind: WorkspaceKind = workspace_kind
        rules = rules or PermissionRules()
        extra_allow: list[PermissionRule] = []
        extra_deny: list[PermissionRule] = []
        allowed: set[str] | None = None
        if tools is not None:
            allowed = set()
            for entry in tools:
                name = entry.strip()
                if "(" in name:  # `tools: [Bash(git *)]` names the tool and pre-approves that pattern
                    extra_allow.append(PermissionRule.parse(name, "allow", root=root))
                    name = name.split("(", 1)[0]
                allowed.add(name)
        blocked: set[str] = set()
        for entry in disallowed_tools:
            name = entry.strip()
            if "(" in name:  # `disallowed_tools: [Bash(rm *)]` is a deny rule, not a removal
                extra_deny.append(PermissionRule.parse(name, "deny", root=root))
            else:
                blocked.add(name)
        self._allowed = allowed
        self._blocked = frozenset(blocked)
        self.rules = rules.merged(PermissionRules(allow=extra_allow, deny=extra_deny))

    def available(self, tool_name: str) -> bool:
        """Whether the allowlist lets the agent see this tool at all."""
        if self.workspace_kind == "chat":
            return False
        if tool_name in self._blocked:
            return False
        if self._allowed is None or "*" in self._allowed:
            return True
        if tool_name in self._allowed:
            return True
        return any(a.startswith("mcp__") and (tool_name == a or tool_name.startswith(a + "__")) for a in self._allowed)

    def add_allow_rule(self, rule: PermissionRule) -> None:
        """Remember an `allow_always` answer for the rest of this policy's life."""
        self.rules = self.rules.with_allow(rule)

    def decide(self, spec: ToolSpec, arguments: Mapping[str, JsonValue], root: Path) -> PolicyDecision:
        name = spec.name
        if self.workspace_kind == "chat":
            return PolicyDecision(
                "deny",
                f"{name} is not available: this is a chat workspace (kind: chat), which has no tools. "
                "To use tools, run in a project workspace (set 'kind: project' in .bearagent/config.yaml).",
            )
        if not self.available(name):
            return PolicyDecision(
                "deny",
                f"{name} is not allowed for this agent (its tools/disallowed_tools list excludes it). "
                f"To allow it, add {name!r} to the agent's 'tools' list and remove it from 'disallowed_tools'.",
            )
        match = self.rules.evaluate(name, arguments, root)
        if match is not None:
            if match.decision == "deny":
                return PolicyDecision(
                    "deny",
                    f"{name} call denied by the permission rule {match.rule.raw!r} (permissions.deny). "
                    "Remove or narrow that rule to allow it.",
                    rule=match.rule.raw,
                )
            if match.decision == "ask":
                return PolicyDecision(
                    "ask",
                    f"{name} call needs approval (permission rule {match.rule.raw!r} in permissions.ask).",
                    rule=match.rule.raw,
                    suggested_rule=suggest_rule(name, arguments, root),
                )
            return PolicyDecision("allow", f"allowed by {match.rule.raw!r}", rule=match.rule.raw)
        default = MODE_DEFAULTS[self.mode][spec.side_effect]
        if default == "allow":
            return _ALLOWED_BY_MODE
        suggestion = suggest_rule(name, arguments, root)
        if default == "ask":
            return PolicyDecision(
                "ask",
                f"{name} is {_KIND[spec.side_effect]} tool, which needs approval in permission mode {self.mode!r}.",
                suggested_rule=suggestion,
            )
        return PolicyDecision(
            "deny",
            f"{name} is {_KIND[spec.side_effect]} tool, which permission mode {self.mode!r} does not allow. "
            f"To allow this call, add {json.dumps(suggestion)} to permissions.allow in .bearagent/config.yaml.",
            suggested_rule=suggestion,
        )


def suggest_rule(tool_name: str, arguments: Mapping[str, JsonValue], root: Path) -> str:
    """The narrowest sensible rule that would allow this call (shown in denials and used by `allow_always`)."""
    if tool_name == "Bash":
        command = arguments.get("command")
        if isinstance(command, str):
            parts = split_commands(command)
            if len(parts) == 1 and "(" not in parts[0] and ")" not in parts[0]:
                words = parts[0].split()
                prefix = " ".join(words[:2]) if len(words) > 2 else " ".join(words)
                return f"Bash({prefix} *)" if len(words) > 2 else f"Bash({prefix})"
        return "Bash"
    if tool_name in ("Write", "Edit", "Read"):
        path = arguments.get("file_path")
        if isinstance(path, str) and path and "(" not in path and ")" not in path:
            rel = path.replace("\\", "/")
            if posixpath.isabs(rel):
                base = str(root).rstrip("/") + "/"
                rel = rel[len(base) :] if rel.startswith(base) else rel
            family = "Edit" if tool_name in ("Write", "Edit") else "Read"
            return f"{family}(/{rel.lstrip('/')})"
        return "Edit" if tool_name in ("Write", "Edit") else tool_name
    if tool_name == "WebFetch":
        url = arguments.get("url")
        if isinstance(url, str):
            try:
                host = urlsplit(url).hostname
            except ValueError:
                host = None
            if host:
                return f"WebFetch(domain:{host})"
    return tool_name


def permission_config_line(rule: str) -> str:
    return f"permissions: {{allow: [{json.dumps(rule)}]}}"
