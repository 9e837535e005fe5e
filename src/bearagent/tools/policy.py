"""Tool policy: the agent's tool grant, the workspace kind, permission rules and the permission-mode defaults.

Order of a decision for one call:
1. workspace kind `chat` -> deny (a chat workspace has no tools);
2. the agent's tool grant (`ToolGrant`: `disallowed_tools` removed first, then `tools`; `*` = all) -> deny if the
   tool is not granted. Its specifier entries are rules: `tools: ["Bash(git *)"]` allows, `disallowed_tools:
   ["Bash(rm *)"]` denies;
3. a write to BearAgent's own state (`.bearagent/state.db`, `locks/`, `transcripts/`) -> deny, whatever the rules;
4. permission rules: deny, then ask, then allow (first match wins); a write to a protected control file
   (`tools/protected.py`) is only allowed by an allow rule whose path names it, otherwise it asks, in every mode;
   the control files of an additional directory (`extra_roots`: its `.git/hooks`, `.claude`, ...) always ask;
5. otherwise the default of the permission mode for the tool's side-effect class (table in docs/tools.md). The
   shell (`Bash`) has its own default: outside the shell sandbox it asks in every mode except a
   `bypassPermissions` the user set; inside the sandbox it is allowed (plan and dontAsk still deny).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias
from urllib.parse import urlsplit

from bearagent.domain._base import JsonValue
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.grant import ToolGrant
from bearagent.domain.permission_modes import DEFAULT_PERMISSION_MODE as DEFAULT_PERMISSION_MODE
from bearagent.domain.permission_modes import PERMISSION_MODES as PERMISSION_MODES
from bearagent.domain.permission_modes import PermissionMode as PermissionMode
from bearagent.domain.permission_modes import parse_permission_mode as parse_permission_mode
from bearagent.domain.tools import SideEffect, ToolSpec
from bearagent.sandbox.git_paths import bare_repository_reason, git_control_reason
from bearagent.tools.paths import PathRefused, WorkspacePaths
from bearagent.tools.permissions import PATH_TOOLS, PermissionRule, PermissionRules, RuleError, RuleKind, RuleMatch
from bearagent.tools.protected import protected_reason, protected_top, state_reason
from bearagent.tools.shell_split import split_commands

WorkspaceKind: TypeAlias = Literal["project", "chat"]
ExecutionPolicy: TypeAlias = Literal["local", "none"]
SHELL_TOOL = "Bash"
"""The tool whose default depends on the shell sandbox (`ToolPolicy(shell_sandboxed=...)`)."""
PATH_ARGUMENTS = ("file_path", "path", "notebook_path")
"""Arguments of a `write` tool that name the file it changes (checked against the protected paths)."""

# What happens to a call that no rule matched: mode -> side effect -> decision. The shell (`Bash`) is the exception
# to the `execute` column: see `ToolPolicy._shell_default`.
MODE_DEFAULTS: Mapping[PermissionMode, Mapping[SideEffect, RuleKind]] = {
    "default": {"read_only": "allow", "write": "ask", "execute": "ask", "network": "ask"},
    "acceptEdits": {"read_only": "allow", "write": "allow", "execute": "allow", "network": "allow"},
    "plan": {"read_only": "allow", "write": "deny", "execute": "deny", "network": "allow"},
    "dontAsk": {"read_only": "allow", "write": "deny", "execute": "deny", "network": "deny"},
    "bypassPermissions": {"read_only": "allow", "write": "allow", "execute": "allow", "network": "allow"},
}
SANDBOX_HINT = "or turn on the shell sandbox (`sandbox: workspace-write` in config.yaml)"


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """`allow`, `ask` or `deny`, why, and (for ask/deny by default) the config line that would allow the call.
    `alternative` is what else would let an `ask` through without a prompt (shown in a non-interactive denial)."""

    outcome: RuleKind
    reason: str
    rule: str | None = None
    suggested_rule: str | None = None
    alternative: str | None = None
    person_only: bool = False
    """An `ask` only a person may answer: a PreToolUse hook's or a plugin's `allow` does not lift it (control
    files)."""


_KIND: Mapping[SideEffect, str] = {
    "read_only": "a read-only",
    "write": "a write",
    "execute": "an execute",
    "network": "a network",
}
_ALLOWED_BY_MODE = PolicyDecision("allow", "allowed by the permission mode's default for this side-effect class")


class ToolPolicy:
    """Everything the gate asks before running a tool.

    `grant` is the agent's resolved tool grant (the same value the invocation projection used). `shell_sandboxed`
    says Bash runs inside the OS sandbox (then its calls are allowed by default in `default`, `acceptEdits` and
    `bypassPermissions`); `user_bypass` says a `bypassPermissions` mode came from the user (their config or a
    command-line flag), which lets Bash run unconfined without asking. `unsandboxed_reason` words why Bash is
    unconfined, for the message of a call that needs approval.
    """

    def __init__(
        self,
        *,
        rules: PermissionRules | None = None,
        mode: PermissionMode = DEFAULT_PERMISSION_MODE,
        grant: ToolGrant | None = None,
        workspace_kind: WorkspaceKind = "project",
        execution_policy: ExecutionPolicy = "local",
        root: Path | None = None,
        shell_sandboxed: bool = False,
        user_bypass: bool = False,
        unsandboxed_reason: str | None = None,
        extra_roots: tuple[str, ...] = (),
        run_deny: tuple[str, ...] = (),
    ) -> None:
        self.mode: PermissionMode = mode
        self.run_deny = frozenset(run_deny)
        """The deny rules the run's caller added (`run --disallowed-tools`): a denial by one names that flag."""
        self.extra_roots = extra_roots
        self.workspace_kind: WorkspaceKind = workspace_kind
        self.execution_policy: ExecutionPolicy = execution_policy
        self.grant = grant if grant is not None else ToolGrant()
        self.shell_sandboxed = shell_sandboxed
        self.user_bypass = user_bypass
        self.unsandboxed_reason = unsandboxed_reason
        if self.grant.problems:
            problem = self.grant.problems[0]
            raise _grant_error(problem.key, problem.entry, "it is not 'Tool' or 'Tool(specifier)'")
        grant_rules = PermissionRules(
            allow=[_grant_rule("tools", raw, "allow", root) for raw in self.grant.allow_rules],
            deny=[_grant_rule("disallowed_tools", raw, "deny", root) for raw in self.grant.deny_rules],
        )
        self.rules = (rules or PermissionRules()).merged(grant_rules)

    def available(self, tool_name: str) -> bool:
        """Whether the agent's grant lets it see this tool at all."""
        if self.workspace_kind == "chat" or self.execution_policy == "none":
            return False
        return self.grant.permits(tool_name)

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
        if self.execution_policy == "none":
            return PolicyDecision(
                "deny",
                f"{name} is not available: this workspace's execution_policy is none, so no tool runs here. "
                "To use tools, remove `execution_policy: none` from its configuration (or the server config).",
            )
        if not self.available(name):
            return PolicyDecision(
                "deny",
                f"{name} is not allowed for this agent (its tools/disallowed_tools list excludes it). "
                f"To allow it, add {name!r} to the agent's 'tools' list and remove it from 'disallowed_tools'.",
            )
        target = write_target(spec, arguments, root)
        if target is not None:
            state = state_reason(target)
            if state is not None:
                return PolicyDecision(
                    "deny",
                    f"{name} may not write {target}: {state}, which BearAgent keeps itself; no permission rule or "
                    "mode lets a tool change it. Read it with `bearagent runs` instead.",
                )
        match = self.rules.evaluate(name, arguments, root)
        if match is not None and match.decision == "deny":
            return PolicyDecision(
                "deny",
                f"{name} call denied by the permission rule {match.rule.raw!r} "
                f"({_rule_list(match.rule, self.grant, self.run_deny)}). {_rule_fix(match.rule, self.run_deny)}",
                rule=match.rule.raw,
            )
        if target is not None:
            reason = protected_reason(target) or git_control_reason(root, target)
            if reason is not None:
                return self._protected(spec, arguments, root, target, reason, match)
        elif self.extra_roots and (outside := extra_write_target(spec, arguments, self.extra_roots)) is not None:
            absolute, rel = outside
            extra_root = Path(absolute[: len(absolute) - len(rel)] if rel else absolute)
            reason = protected_reason(rel) or state_reason(rel) or bare_repository_reason(extra_root, rel)
            if reason is not None:
                return self._protected(spec, arguments, root, absolute, reason, match)
        if match is not None:
            if match.decision == "ask":
                return PolicyDecision(
                    "ask",
                    f"{name} call needs approval (permission rule {match.rule.raw!r} in permissions.ask).",
                    rule=match.rule.raw,
                    suggested_rule=suggest_rule(name, arguments, root),
                )
            return PolicyDecision("allow", f"allowed by {match.rule.raw!r}", rule=match.rule.raw)
        if name == SHELL_TOOL:
            return self._shell_default(spec, arguments, root)
        default = MODE_DEFAULTS[self.mode][spec.side_effect]
        if default == "allow":
            return _ALLOWED_BY_MODE
        suggestion = suggest_rule(name, arguments, root)
        if default == "ask":
            return PolicyDecision(
                "ask",
                f"{name} is {_KIND[spec.side_effect]} tool, which needs approval in permission mode {self.mode!r}.",
                suggested_rule=suggestion,
                alternative="or run with permission mode acceptEdits",
            )
        return _mode_denial(name, spec.side_effect, self.mode, suggestion)

    def _shell_default(self, spec: ToolSpec, arguments: Mapping[str, JsonValue], root: Path) -> PolicyDecision:
        """Bash with no matching rule: plan/dontAsk deny; the sandbox, or the user's own bypass, allow; else ask."""
        suggestion = suggest_rule(spec.name, arguments, root)
        if MODE_DEFAULTS[self.mode]["execute"] == "deny":
            return _mode_denial(spec.name, spec.side_effect, self.mode, suggestion)
        if self.shell_sandboxed:
            return PolicyDecision("allow", "allowed: Bash runs inside the shell sandbox")
        if self.mode == "bypassPermissions" and self.user_bypass:
            return PolicyDecision("allow", "allowed by your own bypassPermissions mode (Bash runs unconfined)")
        why = self.unsandboxed_reason or "no shell sandbox is active"
        alternative = SANDBOX_HINT
        if self.mode == "bypassPermissions":
            why += (
                ", and bypassPermissions was set by the workspace, not by you (only your own config or "
                "--permission-mode lets Bash run unconfined unasked)"
            )
            alternative += ", or pass --permission-mode bypassPermissions yourself"
        return PolicyDecision(
            "ask",
            f"Bash runs unconfined here because {why}, so a shell command needs approval "
            f"in permission mode {self.mode!r}.",
            suggested_rule=suggestion,
            alternative=alternative,
        )

    def _protected(
        self,
        spec: ToolSpec,
        arguments: Mapping[str, JsonValue],
        root: Path,
        target: str,
        reason: str,
        match: RuleMatch | None,
    ) -> PolicyDecision:
        """A write to a control file: an ask rule asks; only an allow rule naming the path allows; else it asks
        (or, in a mode that denies writes, is denied)."""
        name = spec.name
        suggestion = suggest_rule(name, arguments, root)
        why = f"{target} is a control file of this workspace ({reason})"
        if match is not None and match.decision == "ask":
            return PolicyDecision(
                "ask",
                f"{name} would change {target}: {why}; permission rule {match.rule.raw!r} asks for approval.",
                rule=match.rule.raw,
                suggested_rule=suggestion,
                person_only=True,
            )
        top = protected_top(target) or target
        explicit = self.rules.explicit_path_allow(name, arguments, root, names=top)
        if explicit is not None:
            return PolicyDecision("allow", f"allowed by {explicit.raw!r}", rule=explicit.raw)
        if MODE_DEFAULTS[self.mode]["write"] == "deny":
            return _mode_denial(name, spec.side_effect, self.mode, suggestion)
        return PolicyDecision(
            "ask",
            f"{name} would change {target}: {why}. Changing a control file needs approval in every permission "
            f"mode; only an allow rule whose path names it counts (a bare Edit or Write rule does not).",
            suggested_rule=suggestion,
            person_only=True,
        )


def write_target(spec: ToolSpec, arguments: Mapping[str, JsonValue], root: Path) -> str | None:
    """The workspace-relative path a `write` tool call changes, normalised exactly as the file tools do (absolute
    paths inside the root, `./`, `..`); None for other tools or a path the file tools would refuse anyway."""
    if spec.side_effect != "write":
        return None
    for key in PATH_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            try:
                return WorkspacePaths(root).normalise(value)
            except PathRefused:
                return None
    return None


def extra_write_target(
    spec: ToolSpec, arguments: Mapping[str, JsonValue], extra_roots: tuple[str, ...]
) -> tuple[str, str] | None:
    """`(absolute path, path relative to its additional directory)` of a `write` call into one (its arguments are
    already normalised by the file tools: absolute for such a path), else None."""
    if spec.side_effect != "write":
        return None
    for key in PATH_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and posixpath.isabs(value):
            norm = posixpath.normpath(value)
            for root in extra_roots:
                if norm == root or norm.startswith(root.rstrip("/") + "/"):
                    return norm, norm[len(root) :].lstrip("/")
    return None


def _mode_denial(name: str, side_effect: SideEffect, mode: PermissionMode, suggestion: str) -> PolicyDecision:
    return PolicyDecision(
        "deny",
        f"{name} is {_KIND[side_effect]} tool, which permission mode {mode!r} does not allow. "
        f"To allow this call, add {json.dumps(suggestion)} to permissions.allow in .bearagent/config.yaml.",
        suggested_rule=suggestion,
    )


def _rule_list(rule: PermissionRule, grant: ToolGrant, run_deny: frozenset[str]) -> str:
    if rule.raw in run_deny:
        return "this run's --disallowed-tools"
    return "the agent's disallowed_tools" if rule.raw in grant.deny_rules else "permissions.deny"


def _rule_fix(rule: PermissionRule, run_deny: frozenset[str]) -> str:
    if rule.raw in run_deny:  # the caller's own flag: the fix is on their command line, not in a file
        return "To allow it, run again without that rule in --disallowed-tools."
    return "Remove or narrow that rule to allow it."


def _grant_error(key: str, entry: str, why: str) -> RuleError:
    return RuleError(
        ErrorInfo.of(
            "configuration",
            "invalid_tool_entry",
            f"the agent's {key} entry {entry!r} is invalid: {why}. Write a tool name, optionally followed by a "
            "specifier in parentheses, e.g. 'Bash(git *)'.",
            entry=entry[:200],
            list=key,
        )
    )


def _grant_rule(key: str, raw: str, kind: str, root: Path | None) -> PermissionRule:
    try:
        return PermissionRule.parse(raw, kind, root=root)
    except RuleError as exc:
        raise _grant_error(key, raw, exc.info.message.split(" is invalid: ", 1)[-1].rstrip(".")) from None


_FILE_FAMILY: Mapping[str, str] = {
    "Write": "Edit",
    "Edit": "Edit",
    "MultiEdit": "Edit",
    "NotebookEdit": "Edit",
    "Read": "Read",
    "NotebookRead": "Read",
}
"""The rule a file tool's suggestion is written with: one `Edit(path)` rule covers every editing tool."""


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
    if tool_name in _FILE_FAMILY:
        path = arguments.get("notebook_path" if tool_name.startswith("Notebook") else "file_path")
        if isinstance(path, str) and path and "(" not in path and ")" not in path:
            try:
                rel = WorkspacePaths(root).normalise(path)
            except PathRefused:
                rel = path.replace("\\", "/")
                if posixpath.isabs(rel):
                    base = str(root).rstrip("/") + "/"
                    rel = rel[len(base) :] if rel.startswith(base) else rel
            return f"{_FILE_FAMILY[tool_name]}(/{rel.lstrip('/')})"
        return _FILE_FAMILY[tool_name] if _FILE_FAMILY[tool_name] == "Edit" else tool_name
    for key in PATH_ARGUMENTS if tool_name not in PATH_TOOLS else ():
        value = arguments.get(key)
        if isinstance(value, str) and value and "(" not in value and ")" not in value:
            return f"{tool_name}({key}:{value})"
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
