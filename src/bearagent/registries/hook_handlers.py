"""One hook handler entry: its keys (BearAgent's and Claude Code's), the fields its type needs, and whether its
command can run. A bad handler is skipped with an error (the runtime refuses to run until it is fixed: a guard must
not silently disappear); a key without an equivalent is a warning naming it.

Claude Code's handler keys: `if` (one permission rule; a rule BearAgent cannot read stops the run, as a broken
hook does; on an event that is not about a tool the handler never runs, which is a warning), `async` (command
handlers only; `asyncRewake` runs in the background the same way, and its exit 2 wakes the agent with its stderr
when it would stop), `once`, and the `mcp_tool`
handler's `server`, `tool` and `input`. `once` is honoured where BearAgent's own files write it (config.yaml,
`.bearagent/agents/`); in Claude Code's files (`.claude/settings*.json`, `.claude/agents/`) it is ignored with a
warning, as Claude Code ignores it there (it honours `once` only in skill frontmatter): a guard marked `once` keeps
running on every call, as it does in Claude Code. `statusMessage` (at most 200 printable characters) is shown in
the terminal while the handler runs. `shell` and the other keys without an equivalent are warnings naming them.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from pydantic import ValidationError

from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import HookHandlerSpec
from bearagent.registries._base import EntryReporter, entry_reporter, first_error, unknown_key

HANDLER_TYPES = ("command", "http", "prompt", "agent", "mcp_tool")
HANDLER_KEYS = frozenset(
    {
        "type",
        "command",
        "args",
        "url",
        "headers",
        "prompt",
        "model",
        "agent",
        "timeout",
        "on_failure",
        "capabilities",
        "if",
        "once",
        "async",
        "asyncRewake",
        "server",
        "tool",
        "input",
        "statusMessage",
    }
)
UNSUPPORTED_HANDLER_KEYS: Mapping[str, str] = {
    "shell": "command hooks run under /bin/sh (or exec form with `args`)",
    "allowedEnvVars": "http headers expand `${VAR}` from the hook environment",
    "continueOnBlock": "a prompt hook's `ok: false` blocks as its event allows",
}
"""Claude Code handler keys without an equivalent: a warning each, the handler still loads."""
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
_SHELL_BUILTINS = frozenset(
    {"cd", "exit", "true", "false", ":", "echo", "test", "[", "printf", "exec", "export", "set"}
)
_INTERPRETERS = frozenset({"bash", "sh", "zsh", "python", "python3", "node", "ruby", "perl", "uv", "deno", "bun"})
_PROJECT_VARS = ("CLAUDE_PROJECT_DIR", "BEARAGENT_PROJECT_DIR")


@dataclass(frozen=True, slots=True)
class HandlerContext:
    event: str
    root: Path
    env: Mapping[str, str]
    path: Path
    line: int | None
    agent: str | None
    claude_file: bool
    """The handler is in one of Claude Code's files (`.claude/...`): Claude Code's meaning of `once` applies."""


def is_claude_file(path: Path, root: Path) -> bool:
    try:
        return path.resolve().relative_to(root.resolve()).parts[:1] == (".claude",)
    except (ValueError, OSError):
        return False


def parse_handler(raw: object, where: str, context: HandlerContext, diags: list[Diagnostic]) -> HookHandlerSpec | None:
    add = entry_reporter(diags, source=str(context.path), line=context.line, field=where, subject=context.agent)

    if not isinstance(raw, dict):
        add(
            "error",
            "hooks.invalid",
            f"{where} must be a mapping like {{type: command, command: ...}}",
            "write `{type: command, command: ./hook.sh}`",
        )
        return None
    data = dict(cast(dict[str, object], raw))
    for key in list(data):
        if key in UNSUPPORTED_HANDLER_KEYS:
            add(
                "warning",
                "hooks.unsupported_key",
                f"Claude Code handler key {key!r} in {where} has no effect in BearAgent; it is ignored",
                UNSUPPORTED_HANDLER_KEYS[key],
            )
            del data[key]
        elif key not in HANDLER_KEYS:
            add("warning", "config.unknown_key", *unknown_key(key, HANDLER_KEYS, f"{key!r} in {where}"))
            del data[key]
    kind = data.get("type", "command")
    if kind not in HANDLER_TYPES:
        add(
            "error",
            "hooks.invalid",
            f"{where}.type {kind!r} is not a handler type",
            f"use one of: {', '.join(HANDLER_TYPES)} (Python handlers come from plugins)",
        )
        return None
    required = {"command": "command", "http": "url", "prompt": "prompt", "agent": "prompt", "mcp_tool": "server"}[
        cast(str, kind)
    ]
    if kind == "agent" and "prompt" not in data and "agent" in data:
        required = "agent"
    for needed in (required, "tool") if kind == "mcp_tool" else (required,):
        if not isinstance(data.get(needed), str) or not data.get(needed):
            add(
                "error",
                "hooks.invalid",
                f"{where}: a {kind} handler needs `{needed}`",
                f"add `{needed}: ...` to the handler",
            )
            return None
    if not _claude_keys(data, cast(str, kind), where, context, add):
        return None
    if "timeout" in data:
        data["timeout_s"] = data.pop("timeout")
    if "args" in data and isinstance(data["args"], list):
        data["args"] = tuple(str(a) for a in cast(list[object], data["args"]))
    if "capabilities" in data and isinstance(data["capabilities"], list):
        data["capabilities"] = frozenset(cast(list[str], data["capabilities"]))
    data["type"] = kind
    try:
        spec = HookHandlerSpec.model_validate(data)
    except ValidationError as exc:
        loc, problem = first_error(exc)
        add("error", "hooks.invalid", f"{where}.{loc}: {problem}", f"fix {where}.{loc} (see docs/config.md#hooks)")
        return None
    if spec.type == "command":
        problem = check_command(spec, context.root, context.env)
        if problem is not None:
            message, fix, severity = problem
            add(
                severity,
                "hooks.command_not_executable" if severity == "error" else "hooks.command_unverified",
                f"{where}: {message}",
                fix,
            )
            if severity == "error":
                return None
    return spec


def _claude_keys(data: dict[str, object], kind: str, where: str, context: HandlerContext, add: EntryReporter) -> bool:
    """Turn Claude Code's `if`, `once`, `async`, `asyncRewake` and `input` into the spec's fields (in `data`);
    False when the handler cannot load (an `if` that is not a permission rule)."""
    from bearagent.hooks.matching import condition_error

    if "statusMessage" in data:
        status = data.pop("statusMessage")
        if not isinstance(status, str) or not status.strip() or len(status) > 200 or not status.isprintable():
            add(
                "warning",
                "hooks.invalid_status_message",
                f"{where}.statusMessage must be one line of at most 200 printable characters; it is ignored",
                "shorten it to a single line of plain text, e.g. statusMessage: 'Checking the command...'",
            )
        else:
            data["status_message"] = status.strip()
    if "if" in data:
        condition = data.pop("if")
        problem = condition_error(condition, context.root) if isinstance(condition, str) and condition.strip() else None
        if not isinstance(condition, str) or not condition.strip() or problem is not None:
            add(
                "error",
                "hooks.invalid",
                f"{where}.if must be one permission rule such as 'Bash(git *)'" + (f": {problem}" if problem else ""),
                "fix the rule, or remove `if` to run the handler on every call its matcher selects",
            )
            return False
        if context.event not in _TOOL_EVENTS:
            add(
                "warning",
                "hooks.condition_never_matches",
                f"{where} has `if`, which only applies to tool events; on {context.event} this handler never runs "
                "(as in Claude Code)",
                "remove `if`, or move the handler to PreToolUse / PostToolUse",
            )
        data["condition"] = condition.strip()
    for key in ("once", "async", "asyncRewake"):
        if key in data and not isinstance(data[key], bool):
            add(
                "warning",
                "hooks.invalid_value",
                f"{where}.{key} must be true or false; it is ignored",
                f"write `{key}: true`",
            )
            del data[key]
    if data.pop("once", False) is True:
        if context.claude_file:
            add(
                "warning",
                "hooks.once_ignored",
                f"{where}: `once` is ignored in Claude Code's files (Claude Code honours it only in skill "
                "frontmatter); the handler runs on every event its matcher selects",
                "to run it once per session, move the hook to .bearagent/config.yaml",
            )
        else:
            data["once"] = True
    rewake = data.pop("asyncRewake", False) is True
    if data.pop("async", False) is True or rewake:
        if kind != "command":
            add(
                "warning",
                "hooks.async_ignored",
                f"{where}: `async` applies to command handlers only; this {kind} handler runs in the foreground",
                "remove `async`",
            )
        else:
            data["run_async"] = True
            if rewake:
                data["async_rewake"] = True
            if data.get("on_failure") == "block":
                add(
                    "warning",
                    "hooks.async_ignored",
                    f"{where}: an async handler cannot block (its answer is ignored), so `on_failure: block` has no "
                    "effect",
                    "remove `async` to make it a gate",
                )
    if "input" in data:
        value = data.pop("input")
        if kind != "mcp_tool" or not isinstance(value, dict):
            add(
                "warning" if kind != "mcp_tool" else "error",
                "hooks.invalid_value",
                f"{where}.input is the arguments object of an mcp_tool handler"
                + ("; it is ignored" if kind != "mcp_tool" else ""),
                'write `"input": {"path": "${tool_input.file_path}"}`',
            )
            if kind == "mcp_tool":
                return False
        else:
            data["arguments"] = value
    if kind != "mcp_tool":
        for key in ("server", "tool"):
            if key in data:
                add(
                    "warning",
                    "hooks.invalid_value",
                    f"{where}.{key} is only read by mcp_tool handlers; ignored",
                    "remove it",
                )
                del data[key]
    return True


def check_command(spec: HookHandlerSpec, root: Path, env: Mapping[str, str]) -> tuple[str, str, str] | None:
    """`(message, fix, severity)` when the handler's executable cannot be found or run, else None."""
    assert spec.command is not None
    if spec.args is not None:
        words = [spec.command, *spec.args]
    else:
        try:
            words = shlex.split(spec.command)
        except ValueError as exc:
            return (f"cannot parse the command {spec.command!r}: {exc}", "fix the quoting of the command", "error")
        while words and "=" in words[0] and not words[0].startswith(("/", ".")):
            words = words[1:]  # leading VAR=value assignments
    if not words:
        return ("the command is empty", "write the path of an executable", "error")
    exe = _expand_project_vars(words[0], root)
    if "$" in exe:
        return (
            f"cannot verify {words[0]!r} at load time (it uses a variable)",
            "use a path relative to the workspace root",
            "warning",
        )
    if exe in _SHELL_BUILTINS:
        return None
    found = _resolve_executable(exe, root, env)
    if isinstance(found, str):
        return (found, _fix_for(exe, root), "error")
    if Path(exe).name in _INTERPRETERS and len(words) > 1 and not words[1].startswith("-"):
        script = _expand_project_vars(words[1], root)
        if "/" in script and "$" not in script:
            script_path = Path(script) if Path(script).is_absolute() else root / script
            if not script_path.exists():
                return (
                    f"script {words[1]!r} does not exist (looked at {script_path})",
                    "create the script or fix its path (relative to the workspace root)",
                    "error",
                )
    return None


def _expand_project_vars(word: str, root: Path) -> str:
    for var in _PROJECT_VARS:
        word = word.replace("${" + var + "}", str(root)).replace("$" + var, str(root))
    return word


def _resolve_executable(exe: str, root: Path, env: Mapping[str, str]) -> Path | str:
    if "/" in exe:
        candidate = Path(exe).expanduser()
        if not candidate.is_absolute():
            candidate = root / candidate
        if not candidate.exists():
            return f"command {exe!r} does not exist (looked at {candidate})"
        if not candidate.is_file() or not os.access(candidate, os.X_OK):
            return f"command {exe!r} is not an executable file ({candidate})"
        return candidate
    found = shutil.which(exe, path=env.get("PATH", os.defpath))
    if found is None:
        return f"command {exe!r} was not found on PATH"
    return Path(found)


def _fix_for(exe: str, root: Path) -> str:
    if "/" in exe:
        target = Path(exe) if Path(exe).is_absolute() else root / exe
        if target.exists():
            return f"make it executable: chmod +x {exe}"
        return "create the script, or fix the path (relative paths start at the workspace root)"
    return f"install {exe!r} or write its full path"
