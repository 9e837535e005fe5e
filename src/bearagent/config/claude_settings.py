"""Claude Code's project settings: `.claude/settings.json` and `.claude/settings.local.json`.

Each file becomes one `ConfigFile` of level `workspace` (the same type as a `config.yaml`), so the one precedence
rule, the guard check and the trust surface treat it like BearAgent's own config:

- `permissions.allow` / `ask` / `deny` land in `settings["permissions"]` (lists merge across every file; deny from
  any file wins); `permissions.defaultMode` is `settings["permission_mode"]`. Precedence, highest first:
  `.bearagent/config.yaml`, `.claude/settings.local.json`, `.claude/settings.json`, the user config. The user
  config's `permission_mode` stays a ceiling nothing in a workspace can loosen.
- `hooks` are Claude Code's shape already; they become hook groups with level `workspace` and the settings file as
  their source. Events Claude Code has and BearAgent does not fire (`Notification`, `PreCompact`, ...) are a
  warning naming the event, never a silent drop.
- `env` is kept apart (`settings["env"]`): after `bearagent trust` it is added to the environment of hook commands
  and MCP servers, never to Bash (Bash's environment is only what `shell_env` in config.yaml passes).

Everything here is trust surface (allow rules, a looser mode, hooks, env) except deny/ask rules and a stricter mode,
which apply at once. Both files are workspace files: read with the file tools' path safety, and a file that does not
parse is an error (`config.json_syntax`) that stops a run (`trust/guards.py`), since it may hold deny rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from bearagent.config.files import YamlDoc, did_you_mean
from bearagent.config.model import ConfigFile
from bearagent.config.safe_read import read_workspace_text
from bearagent.domain.diagnostics import Diagnostic

SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json")
"""Lowest first: the local file outranks the shared one, as in Claude Code."""

MAX_SETTINGS_BYTES = 1_048_576

SUPPORTED_KEYS = frozenset({"permissions", "hooks", "env", "disableAllHooks", "$schema"})
PERMISSION_KEYS = ("allow", "ask", "deny", "defaultMode", "additionalDirectories")
PERMISSION_IGNORED = frozenset({"disableBypassPermissionsMode", "disableAutoMode"})

IGNORED_KEYS: Mapping[str, str] = {
    "model": "set `default_model:` in .bearagent/config.yaml",
    "availableModels": "model entries live under `models:` in config.yaml",
    "fallbackModel": "model entries live under `models:` in config.yaml",
    "effortLevel": "not a BearAgent setting",
    "alwaysThinkingEnabled": "not a BearAgent setting",
    "outputStyle": "not a BearAgent setting",
    "statusLine": "BearAgent has no status line; its command is never run",
    "apiKeyHelper": "BearAgent never runs a key helper from a workspace; keys come from `api_key_env`",
    "awsAuthRefresh": "never run by BearAgent",
    "awsCredentialExport": "never run by BearAgent",
    "gcpAuthRefresh": "never run by BearAgent",
    "otelHeadersHelper": "never run by BearAgent",
    "enableAllProjectMcpServers": "BearAgent asks for `bearagent trust` for every .mcp.json server instead",
    "enabledMcpjsonServers": "BearAgent asks for `bearagent trust` for every .mcp.json server instead",
    "disabledMcpjsonServers": "remove the server from .mcp.json, or restrict it with an agent's `mcp:` list",
    "allowedMcpServers": "restrict MCP servers with an agent's `mcp:` list",
    "deniedMcpServers": "deny their tools with `permissions.deny: [mcp__server]`",
    "enabledPlugins": "BearAgent plugins are Python packages (`bearagent plugins install`)",
    "extraKnownMarketplaces": "BearAgent plugins are Python packages (`bearagent plugins install`)",
    "sandbox": "BearAgent's Bash sandbox is configured by `sandbox:` in config.yaml (on by default)",
    "includeCoAuthoredBy": "not a BearAgent setting",
    "attribution": "not a BearAgent setting",
    "cleanupPeriodDays": "not a BearAgent setting",
    "respectGitignore": "Glob and Grep always honour .gitignore",
    "forceLoginMethod": "not a BearAgent setting",
    "spinnerTipsEnabled": "not a BearAgent setting",
    "disableSkillShellExecution": "BearAgent never runs `!` commands of command and skill files",
    "skillOverrides": "narrow skills with an agent's `skills:` list",
    "allowedHttpHookUrls": "not a BearAgent setting",
    "httpHookAllowedEnvVars": "not a BearAgent setting",
    "allowManagedHooksOnly": "a managed setting; not read from a project",
    "allowManagedPermissionRulesOnly": "a managed setting; not read from a project",
    "agent": "pass `-a NAME` or set `default_agent:` in config.yaml",
    "companyAnnouncements": "not a BearAgent setting",
    "language": "not a BearAgent setting",
    "autoUpdates": "not a BearAgent setting",
}
"""Claude Code settings BearAgent does not implement: an info diagnostic each (what to do instead), never silent."""

CLAUDE_HOOK_EVENTS = frozenset(
    {
        "PermissionRequest",
        "PermissionDenied",
        "Setup",
        "Notification",
        "PreCompact",
        "PostCompact",
        "ConfigChange",
        "DirectoryAdded",
        "FileChanged",
        "StopFailure",
        "InstructionsLoaded",
        "UserPromptExpansion",
        "Elicitation",
        "ElicitationResult",
        "PostToolBatch",
        "TeammateIdle",
        "TaskCreated",
        "TaskCompleted",
        "WorktreeCreate",
        "WorktreeRemove",
        "MessageDisplay",
        "CwdChanged",
    }
)
"""Hook events of Claude Code that BearAgent never fires (its own events are `registries.hooks.HOOK_EVENTS`)."""


def load_claude_settings(
    root: Path, diagnostics: list[Diagnostic], hook_diagnostics: list[Diagnostic] | None = None
) -> list[ConfigFile]:
    """The project's Claude Code settings files that exist, lowest precedence first. A file that cannot be read or
    parsed adds an error diagnostic (it stops a run) and contributes nothing. Problems with `hooks` go to
    `hook_diagnostics` (the hook registry's, so a broken hook entry stops a run as one in config.yaml does)."""
    out: list[ConfigFile] = []
    for rel in SETTINGS_FILES:
        path = root / rel
        if not path.is_file() and not path.is_symlink():
            continue
        cf = _load_one(root, path, diagnostics, diagnostics if hook_diagnostics is None else hook_diagnostics)
        if cf is not None:
            out.append(cf)
    return out


def _diag(
    path: Path, doc: YamlDoc | None, severity: str, code: str, message: str, fix: str, key: str | None = None
) -> Diagnostic:
    line = doc.line_of(key.split(".")[-1]) if doc is not None and key else None
    return Diagnostic(
        severity="error" if severity == "error" else ("warning" if severity == "warning" else "info"),
        code=code,
        message=message,
        source=str(path),
        line=line,
        field=key,
        fix=fix,
    )


def _load_one(
    root: Path, path: Path, diagnostics: list[Diagnostic], hook_diagnostics: list[Diagnostic]
) -> ConfigFile | None:
    name = path.name
    text = read_workspace_text(root, path, diagnostics, what=f".claude/{name}")
    if text is None:
        return None
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SETTINGS_BYTES:
        diagnostics.append(
            _diag(
                path,
                None,
                "error",
                "config.yaml_too_large",
                f"{name} is larger than {MAX_SETTINGS_BYTES:,} bytes; the file was skipped",
                "shorten it",
            )
        )
        return None
    try:
        data: object = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        diagnostics.append(
            Diagnostic(
                severity="error",
                code="config.json_syntax",
                message=f"invalid JSON in .claude/{name}: {exc.msg} (column {exc.colno}); the file was skipped",
                source=str(path),
                line=exc.lineno,
                fix="fix the JSON syntax at that line (a trailing comma or a missing quote?)",
            )
        )
        return None
    if not isinstance(data, dict):
        diagnostics.append(
            Diagnostic(
                severity="error",
                code="config.not_a_mapping",
                message=f".claude/{name} must be a JSON object, got {type(data).__name__}; the file was skipped",
                source=str(path),
                line=1,
                fix='write {"permissions": {"deny": ["Bash(curl:*)"]}}',
            )
        )
        return None
    raw = {str(k): v for k, v in cast(dict[object, object], data).items()}
    doc = YamlDoc(path=path, data=raw, text=text)
    cf = ConfigFile(path=path, level="workspace", doc=doc)
    for key in raw:
        if key in SUPPORTED_KEYS:
            continue
        if key in IGNORED_KEYS:
            diagnostics.append(
                _diag(
                    path,
                    doc,
                    "info",
                    "claude.setting_unsupported",
                    f"Claude Code setting {key!r} has no effect in BearAgent; it is ignored",
                    IGNORED_KEYS[key],
                    key,
                )
            )
            continue
        guess = did_you_mean(key, sorted({*SUPPORTED_KEYS, *IGNORED_KEYS} - {"$schema"}))
        diagnostics.append(
            _diag(
                path,
                doc,
                "warning",
                "config.unknown_key",
                f"unknown key {key!r} in .claude/{name}"
                + (f" (did you mean {guess!r}?)" if guess else "")
                + "; it is ignored",
                f"rename it to {guess!r}" if guess else "remove it; BearAgent reads permissions, hooks and env",
                key,
            )
        )
    _permissions(cf, raw.get("permissions"), diagnostics)
    _env(cf, raw.get("env"), diagnostics)
    disable = raw.get("disableAllHooks")
    if disable is not None and not isinstance(disable, bool):
        diagnostics.append(
            _diag(
                path,
                doc,
                "error",
                "config.invalid_value",
                "disableAllHooks must be true or false",
                'write `"disableAllHooks": true`',
                "disableAllHooks",
            )
        )
    hooks = raw.get("hooks")
    if disable is True:
        cf.settings["disable_all_hooks"] = True
        if hooks:
            diagnostics.append(
                _diag(
                    path,
                    doc,
                    "info",
                    "claude.hooks_disabled",
                    f"disableAllHooks is true: the hooks of .claude/{name} are not loaded",
                    "remove disableAllHooks to load them",
                    "disableAllHooks",
                )
            )
    elif hooks is not None:
        if isinstance(hooks, dict):
            cf.hooks = _supported_hooks(path, doc, cast(dict[str, object], hooks), hook_diagnostics)
        else:
            hook_diagnostics.append(
                _diag(
                    path,
                    doc,
                    "error",
                    "hooks.invalid",
                    f"hooks in .claude/{name} must be an object of event -> groups",
                    'write {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [...]}]}}',
                    "hooks",
                )
            )
    return cf


def _string_list(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in cast(list[object], value)):
        return tuple(cast(list[str], value))
    return None


def _permissions(cf: ConfigFile, value: object, diagnostics: list[Diagnostic]) -> None:
    from bearagent.tools.permissions import PermissionRule, RuleError

    path, doc = cf.path, cast(YamlDoc, cf.doc)
    if value is None:
        return
    if not isinstance(value, dict):
        diagnostics.append(
            _diag(
                path,
                doc,
                "error",
                "config.invalid_value",
                "permissions must be an object with allow/ask/deny lists",
                'write {"permissions": {"deny": ["Bash(curl:*)"]}}',
                "permissions",
            )
        )
        return
    rules: dict[str, tuple[str, ...]] = {}
    for key, item in cast(dict[str, object], value).items():
        field = f"permissions.{key}"
        if key in PERMISSION_IGNORED:
            diagnostics.append(
                _diag(
                    path,
                    doc,
                    "warning",
                    "claude.setting_unsupported",
                    f"{field} is not supported by BearAgent and has no effect",
                    "cap the permission mode with `permission_mode:` in your user config "
                    "(~/.config/bearagent/config.yaml)",
                    field,
                )
            )
            continue
        if key not in PERMISSION_KEYS:
            guess = did_you_mean(key, PERMISSION_KEYS)
            diagnostics.append(
                _diag(
                    path,
                    doc,
                    "warning",
                    "config.unknown_key",
                    f"unknown key {field!r} in .claude/{path.name}"
                    + (f" (did you mean {guess!r}?)" if guess else "")
                    + "; it is ignored",
                    f"rename it to {guess!r}" if guess else f"known keys: {', '.join(PERMISSION_KEYS)}",
                    field,
                )
            )
            continue
        if key == "defaultMode":
            _default_mode(cf, item, diagnostics)
            continue
        strings = _string_list(item) if item is not None else ()
        if strings is None:
            diagnostics.append(
                _diag(
                    path,
                    doc,
                    "error",
                    "config.invalid_value",
                    f"{field} must be a list of strings",
                    f'write "{key}": ["Bash(npm run test:*)"]' if key != "additionalDirectories" else '"../shared"',
                    field,
                )
            )
            continue
        if key == "additionalDirectories":
            if strings:
                diagnostics.append(
                    _diag(
                        path,
                        doc,
                        "warning",
                        "claude.setting_unsupported",
                        f"{field} ({', '.join(strings)[:200]}) is not supported: BearAgent's file tools never leave "
                        "the workspace, so these directories are not reachable",
                        "run BearAgent in a directory that contains them",
                        field,
                    )
                )
            continue
        good: list[str] = []
        for rule in strings:
            try:
                PermissionRule.parse(rule, key, root=cf.path.parent.parent)
            except RuleError as exc:
                diagnostics.append(
                    _diag(path, doc, "error", "config.invalid_value", exc.info.message, "fix or remove the rule", field)
                )
                continue
            good.append(rule)
        rules[key] = tuple(good)
    cf.settings["permissions"] = rules


def _default_mode(cf: ConfigFile, value: object, diagnostics: list[Diagnostic]) -> None:
    from bearagent.domain.errors import BearAgentError
    from bearagent.tools.policy import PERMISSION_MODES, parse_permission_mode

    path, doc = cf.path, cast(YamlDoc, cf.doc)
    if value == "auto":
        diagnostics.append(
            _diag(
                path,
                doc,
                "warning",
                "claude.setting_unsupported",
                "permissions.defaultMode 'auto' is ignored (Claude Code ignores it in project settings too)",
                f"use one of: {', '.join(PERMISSION_MODES)}",
                "permissions.defaultMode",
            )
        )
        return
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        cf.settings["permission_mode"] = parse_permission_mode(value)
    except (BearAgentError, ValueError):
        diagnostics.append(
            Diagnostic(
                severity="error",
                code="config.invalid_value",
                message=f"permissions.defaultMode: {value!r} is not a permission mode",
                source=str(path),
                line=doc.line_of("defaultMode"),
                field="permission_mode",
                fix=f"use one of: {', '.join(PERMISSION_MODES)}",
            )
        )


def _env(cf: ConfigFile, value: object, diagnostics: list[Diagnostic]) -> None:
    if value is None:
        return
    path, doc = cf.path, cast(YamlDoc, cf.doc)
    if not isinstance(value, dict):
        diagnostics.append(
            _diag(
                path,
                doc,
                "error",
                "config.invalid_value",
                "env must be an object of NAME -> string",
                'write {"env": {"NODE_ENV": "test"}}',
                "env",
            )
        )
        return
    env: dict[str, str] = {}
    for name, item in cast(dict[str, object], value).items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not isinstance(item, (str, int, float, bool)):
            diagnostics.append(
                _diag(
                    path,
                    doc,
                    "error",
                    "config.invalid_value",
                    f"env.{name}: must be a variable name with a string value; it is ignored",
                    'write {"env": {"NAME": "value"}}',
                    name,
                )
            )
            continue
        env[name] = ("true" if item else "false") if isinstance(item, bool) else str(item)
    cf.settings["env"] = env


def _supported_hooks(
    path: Path, doc: YamlDoc, hooks: dict[str, object], diagnostics: list[Diagnostic]
) -> dict[str, object]:
    """The hook events BearAgent fires; each Claude Code event it never fires is a warning naming it."""
    out: dict[str, object] = {}
    for event, groups in hooks.items():
        if event in CLAUDE_HOOK_EVENTS:
            diagnostics.append(
                _diag(
                    path,
                    doc,
                    "warning",
                    "claude.hook_event_unsupported",
                    f"hook event {event!r} is a Claude Code event BearAgent never fires; its hooks do not run",
                    "see docs/claude-code.md#hooks for the events BearAgent fires",
                    event,
                )
            )
            continue
        out[event] = groups
    return out


def settings_env(files: list[ConfigFile]) -> dict[str, str]:
    """The merged `env` of the Claude Code settings files (the local file wins name by name)."""
    merged: dict[str, str] = {}
    for cf in files:
        merged.update(cast(dict[str, str], cf.settings.get("env", {})))
    return merged
