"""HookRegistry: `hooks:` entries (config.yaml, agent frontmatter) and plugin Python handlers, validated at load.

Execution is `bearagent.hooks`' job; this module only parses and checks: unknown event names (with did-you-mean),
unknown handler keys, and commands that do not exist or are not executable are diagnostics at load time.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast, get_args

from pydantic import ValidationError

from bearagent.config.files import YamlDoc, did_you_mean, suggestion
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import AgentSpec, HookEventName, HookHandlerSpec, HookMatcherSpec, Level
from bearagent.registries._base import entry_reporter, first_error, severity_of, unknown_key

if TYPE_CHECKING:
    from bearagent.plugins.contributions import PythonHookHandler

HOOK_EVENTS: tuple[str, ...] = get_args(HookEventName)
HANDLER_TYPES = ("command", "http", "prompt", "agent")
HANDLER_KEYS = frozenset(
    {"type", "command", "args", "url", "headers", "prompt", "model", "agent", "timeout", "on_failure", "capabilities"}
)
_SHELL_BUILTINS = frozenset(
    {"cd", "exit", "true", "false", ":", "echo", "test", "[", "printf", "exec", "export", "set"}
)
_INTERPRETERS = frozenset({"bash", "sh", "zsh", "python", "python3", "node", "ruby", "perl", "uv", "deno", "bun"})
_PROJECT_VARS = ("CLAUDE_PROJECT_DIR", "BEARAGENT_PROJECT_DIR")


class HookRegistry:
    """All hook matcher groups by event (workspace config first, then user config), agent-scoped hooks, and Python
    handlers from plugins. Every configured group runs; hooks do not shadow each other."""

    def __init__(
        self,
        matchers: Sequence[HookMatcherSpec],
        python_handlers: Sequence[PythonHookHandler] = (),
        diagnostics: Sequence[Diagnostic] = (),
    ) -> None:
        self._matchers = tuple(matchers)
        self._python = tuple(python_handlers)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)

    def all(self) -> tuple[HookMatcherSpec, ...]:
        return self._matchers

    def python_handlers(self, event: str | None = None) -> tuple[PythonHookHandler, ...]:
        return tuple(h for h in self._python if event is None or h.event == event)

    def matchers(self, event: str, *, agent: AgentSpec | None = None) -> tuple[HookMatcherSpec, ...]:
        """The config matcher groups for `event`, plus those of `agent` (active only while it runs)."""
        found = [m for m in self._matchers if m.event == event]
        if agent is not None:
            found.extend(m for m in agent.hooks if m.event == event)
        return tuple(found)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)


def parse_hooks(
    raw: Mapping[str, object],
    *,
    path: Path,
    level: Level,
    root: Path,
    env: Mapping[str, str],
    doc: YamlDoc | None = None,
    agent: str | None = None,
    prefix: str = "hooks",
) -> tuple[list[HookMatcherSpec], list[Diagnostic]]:
    """Turn `{event: [{matcher, hooks: [handler...]}]}` into matcher specs. A bad group or handler is skipped with an
    error; a missing or non-executable command is an error (the runtime refuses to run until it is fixed)."""
    out: list[HookMatcherSpec] = []
    diags: list[Diagnostic] = []

    def line(key: str) -> int | None:
        return doc.line_of(key) if doc else None

    def err(code: str, message: str, fix: str, key: str, field: str, severity: str = "error") -> None:
        diags.append(
            Diagnostic(
                severity=severity_of(severity),
                code=code,
                message=message,
                source=str(path),
                line=line(key),
                field=field,
                fix=fix,
                subject=agent,
            )
        )

    for event, groups in raw.items():
        if event not in HOOK_EVENTS:
            guess = did_you_mean(event, HOOK_EVENTS)
            err(
                "hooks.unknown_event",
                f"unknown hook event {event!r}"
                + (f" (did you mean {guess!r}?)" if guess else "")
                + "; its hooks would never fire",
                f"rename it to {guess!r}" if guess else f"use one of: {', '.join(HOOK_EVENTS)}",
                event,
                f"{prefix}.{event}",
            )
            continue
        if not isinstance(groups, list):
            err(
                "hooks.invalid",
                f"{prefix}.{event} must be a list of {{matcher, hooks}} groups",
                "write `- matcher: Bash` then `hooks: [...]`",
                event,
                f"{prefix}.{event}",
            )
            continue
        for gi, group in enumerate(cast(list[object], groups)):
            where = f"{prefix}.{event}[{gi}]"
            if not isinstance(group, dict):
                err(
                    "hooks.invalid",
                    f"{where} must be a mapping with `matcher` and `hooks`",
                    "write `- matcher: Bash` then `hooks: [...]`",
                    event,
                    where,
                )
                continue
            g = cast(dict[str, object], group)
            for key in g:
                if key not in ("matcher", "hooks"):
                    err(
                        "config.unknown_key",
                        f"unknown key {key!r} in {where}" + suggestion(key, ("matcher", "hooks")),
                        "keep only `matcher` and `hooks`",
                        key,
                        f"{where}.{key}",
                        "warning",
                    )
            matcher = g.get("matcher")
            if matcher is not None and not isinstance(matcher, str):
                err(
                    "hooks.invalid",
                    f"{where}.matcher must be a string (tool name, A|B, or a regex)",
                    "quote the matcher",
                    event,
                    f"{where}.matcher",
                )
                continue
            handlers_raw = g.get("hooks")
            if not isinstance(handlers_raw, list) or not handlers_raw:
                err(
                    "hooks.invalid",
                    f"{where}.hooks must be a non-empty list of handlers",
                    "add `hooks: [{type: command, command: ./script.sh}]`",
                    event,
                    f"{where}.hooks",
                )
                continue
            handlers: list[HookHandlerSpec] = []
            for hi, handler_raw in enumerate(cast(list[object], handlers_raw)):
                hwhere = f"{where}.hooks[{hi}]"
                handler = _parse_handler(handler_raw, hwhere, root, env, diags, path, line(event), agent)
                if handler is not None:
                    handlers.append(handler)
            if handlers:
                out.append(
                    HookMatcherSpec(
                        event=cast(HookEventName, event),
                        matcher=matcher,
                        hooks=tuple(handlers),
                        source=str(path),
                        level=level,
                        agent=agent,
                    )
                )
    return out, diags


def _parse_handler(
    raw: object,
    where: str,
    root: Path,
    env: Mapping[str, str],
    diags: list[Diagnostic],
    path: Path,
    line: int | None,
    agent: str | None,
) -> HookHandlerSpec | None:
    add = entry_reporter(diags, source=str(path), line=line, field=where, subject=agent)

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
        if key not in HANDLER_KEYS:
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
    required = {"command": "command", "http": "url", "prompt": "prompt", "agent": "prompt"}[cast(str, kind)]
    if kind == "agent" and "prompt" not in data and "agent" in data:
        required = "agent"
    if not isinstance(data.get(required), str) or not data.get(required):
        add(
            "error",
            "hooks.invalid",
            f"{where}: a {kind} handler needs `{required}`",
            f"add `{required}: ...` to the handler",
        )
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
        problem = check_command(spec, root, env)
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
