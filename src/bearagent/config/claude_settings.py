"""Claude Code's project settings: `.claude/settings.json` and `.claude/settings.local.json`.

Each file becomes one `ConfigFile` of level `workspace` (the same type as a `config.yaml`), so the one precedence
rule, the guard check and the trust surface treat it like BearAgent's own config:

- `permissions.allow` / `ask` / `deny` land in `settings["permissions"]` (lists merge across every file; deny from
  any file wins); `permissions.defaultMode` is `settings["permission_mode"]`. Precedence, highest first:
  `.bearagent/config.yaml`, `.claude/settings.local.json`, `.claude/settings.json`, the user config. The user
  config's `permission_mode` stays a ceiling nothing in a workspace can loosen.
- `permissions.additionalDirectories` (`settings["additional_directories"]`): directories the file tools (and a
  sandboxed Bash) may use besides the workspace; `~` is the home directory, a relative path starts at the project
  root. A directory that does not exist is a warning and is left out.
- `permissions.disableBypassPermissionsMode: "disable"` (`settings["disable_bypass"]`): no bypassPermissions
  mode, from any source (`trust/modes.py`).
- `hooks` are Claude Code's shape already; they become hook groups with level `workspace` and the settings file as
  their source. Events Claude Code has and BearAgent does not fire (`Notification`, `PreCompact`, ...) are a
  warning naming the event, never a silent drop.
- `env` is kept apart (`settings["env"]`): after `bearagent trust` it is added to the environment of hook commands
  and MCP servers, never to Bash (Bash's environment is only what `shell_env` in config.yaml passes).

Everything that widens is trust surface (allow rules, a looser mode, additional directories, hooks, env); deny/ask
rules, a stricter mode and `disableBypassPermissionsMode` apply at once. Both files are workspace files: read with
the file tools' path safety, and a file that does not parse is an error (`config.json_syntax`) that stops a run
(`trust/guards.py`), since it may hold deny rules. Every section is read through one `_Reader`, which owns the
wording of its problems (which file, which line, which key, what to write instead). Which keys exist, and what to
use instead of the ones BearAgent does not implement, is `config/claude_keys.py`.

Why it is over 400 lines: it is one file format read by one `_Reader`, one method per section; the sections share
the reader's wording of problems and the trust rules above, and splitting them would split the one answer to "what
does BearAgent do with this key of settings.json".
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from bearagent.config.claude_keys import (
    CLAUDE_HOOK_EVENTS,
    IGNORED_KEYS,
    MCP_KEYS,
    PERMISSION_KEYS,
    SUPPORTED_KEYS,
)
from bearagent.config.files import YamlDoc, did_you_mean
from bearagent.config.model import ConfigFile, resolve_directory
from bearagent.config.safe_read import read_workspace_text, stray_file
from bearagent.domain.diagnostics import Diagnostic

SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json")
"""Lowest first: the local file outranks the shared one, as in Claude Code."""

MAX_SETTINGS_BYTES = 1_048_576

Severity = Literal["error", "warning", "info"]


def load_claude_settings(
    root: Path, diagnostics: list[Diagnostic], hook_diagnostics: list[Diagnostic] | None = None
) -> list[ConfigFile]:
    """The project's Claude Code settings files that exist, lowest precedence first. A file that cannot be read or
    parsed adds an error diagnostic (it stops a run) and contributes nothing. Problems with `hooks` go to
    `hook_diagnostics` (the hook registry's, so a broken hook entry stops a run as one in config.yaml does)."""
    out: list[ConfigFile] = []
    for rel in SETTINGS_FILES:
        path = root / rel
        if not path.is_file():
            stray_file(path, diagnostics, what=rel)  # there but not a file: an error, never "absent"
            continue
        data = _read_json(root, path, diagnostics)
        if data is None:
            continue
        cf = ConfigFile(path=path, level="workspace", doc=YamlDoc(path=path, data=data[0], text=data[1]))
        reader = _Reader(cf, root, diagnostics, diagnostics if hook_diagnostics is None else hook_diagnostics)
        reader.read()
        out.append(cf)
    return out


def _read_json(root: Path, path: Path, diagnostics: list[Diagnostic]) -> tuple[dict[str, object], str] | None:
    """The file's top-level object and text, or None (with an error naming the file) when it is not one."""
    name = path.name
    text = read_workspace_text(root, path, diagnostics, what=f".claude/{name}")
    if text is None:
        return None
    problem: tuple[str, str, int | None, str] | None = None  # code, message, line, fix
    data: object = None
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SETTINGS_BYTES:
        problem = (
            "config.yaml_too_large",
            f"{name} is larger than {MAX_SETTINGS_BYTES:,} bytes; the file was skipped",
            None,
            "shorten it",
        )
    else:
        try:
            data = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            problem = (
                "config.json_syntax",
                f"invalid JSON in .claude/{name}: {exc.msg} (column {exc.colno}); the file was skipped",
                exc.lineno,
                "fix the JSON syntax at that line (a trailing comma or a missing quote?)",
            )
        else:
            if not isinstance(data, dict):
                problem = (
                    "config.not_a_mapping",
                    f".claude/{name} must be a JSON object, got {type(data).__name__}; the file was skipped",
                    1,
                    'write {"permissions": {"deny": ["Bash(curl:*)"]}}',
                )
    if problem is not None:
        code, message, line, fix = problem
        diagnostics.append(
            Diagnostic(severity="error", code=code, message=message, source=str(path), line=line, fix=fix)
        )
        return None
    return {str(k): v for k, v in cast(dict[object, object], data).items()}, text


@dataclass
class _Reader:
    """Reads the sections of one settings file into its `ConfigFile`; every problem is worded here."""

    cf: ConfigFile
    root: Path
    diagnostics: list[Diagnostic]
    hook_diagnostics: list[Diagnostic]

    @property
    def doc(self) -> YamlDoc:
        return cast(YamlDoc, self.cf.doc)

    @property
    def name(self) -> str:
        return f".claude/{self.cf.path.name}"

    def report(
        self, severity: Severity, code: str, message: str, fix: str, key: str | None, *, to_hooks: bool = False
    ) -> None:
        """One diagnostic on the line of `key`'s last part (`permissions.deny` -> the `"deny"` line)."""
        (self.hook_diagnostics if to_hooks else self.diagnostics).append(
            Diagnostic(
                severity=severity,
                code=code,
                message=message,
                source=str(self.cf.path),
                line=self.doc.line_of(key.split(".")[-1]) if key else None,
                field=key,
                fix=fix,
            )
        )

    def section(
        self, key: str, value: object, what: str, example: str, *, to_hooks: bool = False
    ) -> dict[str, object] | None:
        """`value` as an object (None when it is absent, or not an object: then an error saying what it must be)."""
        if value is None:
            return None
        if isinstance(value, dict):
            return {str(k): v for k, v in cast(dict[object, object], value).items()}
        self.report(
            "error",
            "hooks.invalid" if to_hooks else "config.invalid_value",
            f"{key} must be {what}",
            example,
            key,
            to_hooks=to_hooks,
        )
        return None

    def unknown(self, key: str, known: Sequence[str], fallback_fix: str) -> None:
        guess = did_you_mean(key.split(".")[-1], known)
        self.report(
            "warning",
            "config.unknown_key",
            f"unknown key {key!r} in {self.name}"
            + (f" (did you mean {guess!r}?)" if guess else "")
            + "; it is ignored",
            f"rename it to {guess!r}" if guess else fallback_fix,
            key,
        )

    def unsupported(self, key: str, why: str, fix: str, severity: Severity = "info") -> None:
        self.report(severity, "claude.setting_unsupported", f"Claude Code setting {key!r} {why}", fix, key)

    # ---- the sections ----

    def read(self) -> None:
        raw = self.doc.data
        for key in raw:
            if key in SUPPORTED_KEYS:
                continue
            if key in IGNORED_KEYS:
                self.unsupported(key, "has no effect in BearAgent; it is ignored", IGNORED_KEYS[key])
            else:
                self.unknown(
                    key,
                    sorted({*SUPPORTED_KEYS, *IGNORED_KEYS} - {"$schema"}),
                    "remove it; BearAgent reads permissions, hooks and env",
                )
        self.permissions(raw.get("permissions"))
        self.env(raw.get("env"))
        self.hooks(raw.get("hooks"), raw.get("disableAllHooks"))
        self.mcp_servers(raw)
        self.output_style(raw.get("outputStyle"))
        self.api_key_helper(raw.get("apiKeyHelper"))
        self.status_line(raw.get("statusLine"))
        self.models(raw.get("model"), raw.get("availableModels"))
        self.fallback_model(raw.get("fallbackModel"))

    def permissions(self, value: object) -> None:
        section = self.section(
            "permissions",
            value,
            "an object with allow/ask/deny lists",
            'write {"permissions": {"deny": ["Bash(curl:*)"]}}',
        )
        if section is None:
            return
        rules: dict[str, tuple[str, ...]] = {}
        for key, item in section.items():
            field = f"permissions.{key}"
            if key not in PERMISSION_KEYS:
                self.unknown(field, PERMISSION_KEYS, f"known keys: {', '.join(PERMISSION_KEYS)}")
            elif key == "defaultMode":
                self.default_mode(item)
            elif key == "disableBypassPermissionsMode":
                self.disable_bypass(item)
            elif key == "disableAutoMode":
                self.unsupported(
                    field, "has no effect: BearAgent has no auto mode", "nothing to do", severity="warning"
                )
            else:
                strings = self.strings(field, item, key)
                if strings is None:
                    continue
                if key == "additionalDirectories":
                    self.additional_directories(strings)
                else:
                    rules[key] = self.rules(field, key, strings)
        self.cf.settings["permissions"] = rules

    def strings(self, field: str, value: object, key: str) -> tuple[str, ...] | None:
        if value is None:
            return ()
        if isinstance(value, list) and all(isinstance(v, str) for v in cast(list[object], value)):
            return tuple(cast(list[str], value))
        example = '"../shared"' if key == "additionalDirectories" else f'write "{key}": ["Bash(npm run test:*)"]'
        self.report("error", "config.invalid_value", f"{field} must be a list of strings", example, field)
        return None

    def rules(self, field: str, kind: str, strings: tuple[str, ...]) -> tuple[str, ...]:
        from bearagent.tools.permissions import PermissionRule, RuleError

        good: list[str] = []
        for rule in strings:
            try:
                PermissionRule.parse(rule, kind, root=self.root)
            except RuleError as exc:
                self.report("error", "config.invalid_value", exc.info.message, "fix or remove the rule", field)
                continue
            good.append(rule)
        return tuple(good)

    def additional_directories(self, entries: tuple[str, ...]) -> None:
        field = "permissions.additionalDirectories"
        found: list[str] = []
        for entry in entries:
            path = resolve_directory(entry, self.root)
            if path is None or not os.path.isdir(path):
                self.report(
                    "warning",
                    "claude.directory_missing",
                    f"{field}: {entry!r} is not a directory"
                    + (f" ({path})" if path is not None and path != entry else "")
                    + "; it is left out",
                    "create it, or fix the path (`~/x`, an absolute path, or one relative to the project root)",
                    field,
                )
                continue
            if path not in found:
                found.append(path)
        self.cf.settings["additional_directories"] = tuple(found)

    def default_mode(self, value: object) -> None:
        from bearagent.domain.errors import BearAgentError
        from bearagent.domain.permission_modes import PERMISSION_MODES, parse_permission_mode

        if value == "auto":
            self.unsupported(
                "permissions.defaultMode",
                "'auto' is ignored (Claude Code ignores it in project settings too)",
                f"use one of: {', '.join(PERMISSION_MODES)}",
                severity="warning",
            )
            return
        try:
            if not isinstance(value, str):
                raise ValueError(value)
            self.cf.settings["permission_mode"] = parse_permission_mode(value)
        except (BearAgentError, ValueError):
            self.diagnostics.append(
                Diagnostic(
                    severity="error",
                    code="config.invalid_value",
                    message=f"permissions.defaultMode: {value!r} is not a permission mode",
                    source=str(self.cf.path),
                    line=self.doc.line_of("defaultMode"),
                    field="permission_mode",
                    fix=f"use one of: {', '.join(PERMISSION_MODES)}",
                )
            )

    def disable_bypass(self, value: object) -> None:
        """Claude Code's only value is "disable"; anything else is an error (it is a guard: never dropped)."""
        if value == "disable":
            self.cf.settings["disable_bypass"] = True
            return
        self.report(
            "error",
            "config.invalid_value",
            f'permissions.disableBypassPermissionsMode must be "disable", got {value!r}',
            'write "disableBypassPermissionsMode": "disable" (or remove the key)',
            "permissions.disableBypassPermissionsMode",
        )

    def env(self, value: object) -> None:
        section = self.section("env", value, "an object of NAME -> string", 'write {"env": {"NODE_ENV": "test"}}')
        if section is None:
            return
        env: dict[str, str] = {}
        for name, item in section.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not isinstance(item, (str, int, float, bool)):
                self.report(
                    "error",
                    "config.invalid_value",
                    f"env.{name}: must be a variable name with a string value; it is ignored",
                    'write {"env": {"NAME": "value"}}',
                    name,
                )
                continue
            env[name] = ("true" if item else "false") if isinstance(item, bool) else str(item)
        self.cf.settings["env"] = env

    def hooks(self, value: object, disable: object) -> None:
        if disable is not None and not isinstance(disable, bool):
            self.report(
                "error",
                "config.invalid_value",
                "disableAllHooks must be true or false",
                'write `"disableAllHooks": true`',
                "disableAllHooks",
            )
        if disable is True:  # every workspace hook is left out (`registries/hooks.py`), this file's said here
            self.cf.settings["disable_all_hooks"] = True
            if value:
                self.report(
                    "info",
                    "claude.hooks_disabled",
                    f"disableAllHooks is true: the hooks of {self.name} are not loaded",
                    "remove disableAllHooks to load them",
                    "disableAllHooks",
                )
            return
        section = self.section(
            "hooks",
            value,
            "an object of event -> groups",
            'write {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [...]}]}}',
            to_hooks=True,
        )
        if section is None:
            return
        supported: dict[str, object] = {}
        for event, groups in section.items():
            if event in CLAUDE_HOOK_EVENTS:
                self.report(
                    "warning",
                    "claude.hook_event_unsupported",
                    f"hook event {event!r} is a Claude Code event BearAgent never fires; its hooks do not run",
                    "see docs/claude-code.md#hooks for the events BearAgent fires",
                    event,
                    to_hooks=True,
                )
            else:
                supported[event] = groups
        self.cf.hooks = supported

    def mcp_servers(self, raw: Mapping[str, object]) -> None:
        """Claude Code's MCP server switches, kept as `cf.settings["mcp"]` for `registries/mcp.py`: a wrong type
        stops the run (they may be what keeps a server off)."""
        kept: dict[str, object] = {}
        for key in MCP_KEYS:
            value = raw.get(key)
            if value is None:
                continue
            if key == "enableAllProjectMcpServers":
                if isinstance(value, bool):
                    kept[key] = value
                else:
                    self.report("error", "config.invalid_value", f"{key} must be true or false", f'"{key}": true', key)
                continue
            if key in ("allowedMcpServers", "deniedMcpServers"):
                names = self.server_names(key, value)
            elif isinstance(value, list) and all(isinstance(v, str) for v in cast(list[object], value)):
                names = tuple(cast(list[str], value))
            else:
                names = None
                example = f'"{key}": ["github", "memory"]'
                self.report("error", "config.invalid_value", f"{key} must be a list of server names", example, key)
            if names is not None:
                kept[key] = names
        if kept:
            self.cf.settings["mcp"] = kept

    def output_style(self, value: object) -> None:
        if value is None:
            return
        if isinstance(value, str) and value.strip():
            self.cf.settings["output_style"] = value.strip()
            return
        self.report(
            "warning",
            "config.invalid_value",
            "outputStyle must be a style name; the default style is used",
            '"outputStyle": "Explanatory"',
            "outputStyle",
        )

    def api_key_helper(self, value: object) -> None:
        """A command that prints the Anthropic API key (`app/key_helper.py`); trust surface, run only in a run."""
        if value is None:
            return
        if isinstance(value, str) and value.strip():
            self.cf.settings["api_key_helper"] = value.strip()
            return
        self.report(
            "error",
            "config.invalid_value",
            "apiKeyHelper must be a shell command that prints the key",
            '"apiKeyHelper": "~/bin/get-anthropic-key.sh"',
            "apiKeyHelper",
        )

    def status_line(self, value: object) -> None:
        """`{"type": "command", "command": "..."}`: the interactive session's status line (`cli/status_command.py`);
        trust surface, like a hook."""
        if value is None:
            return
        entry = cast(dict[str, object], value) if isinstance(value, dict) else {}
        command = entry.get("command")
        if entry.get("type", "command") == "command" and isinstance(command, str) and command.strip():
            self.cf.settings["status_line"] = command.strip()
            return
        self.report(
            "warning",
            "config.invalid_value",
            'statusLine must be {"type": "command", "command": "..."}; BearAgent\'s own status line is shown',
            '"statusLine": {"type": "command", "command": "~/.claude/statusline.sh"}',
            "statusLine",
        )

    def models(self, model: object, available: object) -> None:
        """`model` (the default model, below config.yaml's `default_model`) and `availableModels` (the models a
        `--model` / `/model` may pick); resolved against the model entries in `workspace.py`."""
        if isinstance(model, str) and model.strip():
            self.cf.settings["claude_model"] = model.strip()
        elif model is not None:
            self.report("warning", "config.invalid_value", "model must be a model name", '"model": "sonnet"', "model")
        if available is None:
            return
        if isinstance(available, list) and all(isinstance(v, str) for v in cast(list[object], available)):
            self.cf.settings["available_models"] = tuple(cast(list[str], available))
            return
        self.report(
            "error",
            "config.invalid_value",
            "availableModels must be a list of model names",
            '"availableModels": ["sonnet", "haiku"]',
            "availableModels",
        )

    def fallback_model(self, value: object) -> None:
        """`fallbackModel`: the model a run switches to when its own is overloaded or unavailable (resolved
        against the model entries in `workspace.py`)."""
        if isinstance(value, str) and value.strip():
            self.cf.settings["fallback_model"] = value.strip()
        elif value is not None:
            self.report(
                "warning",
                "config.invalid_value",
                "fallbackModel must be a model name",
                '"fallbackModel": "haiku"',
                "fallbackModel",
            )

    def server_names(self, key: str, value: object) -> tuple[str, ...] | None:
        """`allowedMcpServers` / `deniedMcpServers`: `[{"serverName": "github"}, ...]` (Claude Code's shape)."""
        example = f'"{key}": [{{"serverName": "github"}}]'
        if not isinstance(value, list):
            self.report(
                "error", "config.invalid_value", f"{key} must be a list of {{serverName}} objects", example, key
            )
            return None
        names: list[str] = []
        for item in cast(list[object], value):
            entry = cast(dict[str, object], item) if isinstance(item, dict) else {}
            name = entry.get("serverName")
            if isinstance(name, str) and name:
                names.append(name)
                continue
            other = sorted(str(k) for k in entry if k != "serverName")
            self.report(
                "error",
                "config.invalid_value",
                f"{key} entry {item!r} has no serverName"
                + (f" (BearAgent matches servers by name only, not by {', '.join(other)})" if other else ""),
                example,
                key,
            )
            return None
        return tuple(names)


def mcp_switches(files: Sequence[ConfigFile]) -> dict[str, object]:
    """The MCP switches of Claude Code's settings files (lowest first): name lists add up, `enableAllProjectMcpServers`
    comes from the highest file that sets it; each value is paired with the file that said it (for diagnostics)."""
    merged: dict[str, object] = {}
    for cf in files:
        for key, value in cast(dict[str, object], cf.settings.get("mcp", {})).items():
            if isinstance(value, bool):
                merged[key] = (value, str(cf.path))
            else:
                before = cast(dict[str, str], merged.setdefault(key, {}))
                for name in cast(tuple[str, ...], value):
                    before.setdefault(name, str(cf.path))
    return merged


def settings_env(files: list[ConfigFile]) -> dict[str, str]:
    """The merged `env` of the Claude Code settings files (the local file wins name by name)."""
    merged: dict[str, str] = {}
    for cf in files:
        merged.update(cast(dict[str, str], cf.settings.get("env", {})))
    return merged
