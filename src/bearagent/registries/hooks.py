"""HookRegistry: `hooks:` entries (config.yaml, agent frontmatter) and plugin Python handlers, validated at load.

Execution is `bearagent.hooks`' job; this module only parses and checks: unknown event names (with did-you-mean),
unknown handler keys, and commands that do not exist or are not executable are diagnostics at load time.

One handler entry is `registries/hook_handlers.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast, get_args

from bearagent.config.files import YamlDoc, did_you_mean, suggestion
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import AgentSpec, HookEventName, HookHandlerSpec, HookMatcherSpec, Level
from bearagent.registries._base import severity_of
from bearagent.registries.hook_handlers import HandlerContext, is_claude_file, parse_handler

if TYPE_CHECKING:
    from bearagent.config.config_files import ConfigFiles
    from bearagent.plugins.contributions import PythonHookHandler

HOOK_EVENTS: tuple[str, ...] = get_args(HookEventName)


class HookRegistry:
    """All hook matcher groups by event (workspace config first, then user config), agent-scoped hooks, and Python
    handlers from plugins. Every configured group runs; hooks do not shadow each other."""

    def __init__(
        self,
        matchers: Sequence[HookMatcherSpec],
        python_handlers: Sequence[PythonHookHandler] = (),
        diagnostics: Sequence[Diagnostic] = (),
        *,
        disabled_by: str | None = None,
    ) -> None:
        self._matchers = tuple(matchers)
        self._python = tuple(python_handlers)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        self.disabled_by = disabled_by
        """The settings file whose `disableAllHooks: true` turned the workspace's hooks off (its config files' and
        its agents'); None when they run. The user's and the plugins' hooks always run."""

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


def load_hooks(
    files: ConfigFiles,
    handlers: Sequence[PythonHookHandler],
    *,
    root: Path,
    env: Mapping[str, str],
    plugin_hooks: Sequence[tuple[Path, Mapping[str, object], Level]] = (),
) -> HookRegistry:
    """The hook registry of a workspace: `hooks:` of every config file, highest first (workspace config.yaml,
    Claude Code's settings, the user's config.yaml; additive: every group runs), and the plugins' Python handlers.
    A workspace whose execution_policy is none (a chat one too) ignores configured hooks, with a warning for each file that has some."""
    diags = list(files.hook_diagnostics)
    matchers: list[HookMatcherSpec] = []
    disabled_by = next((str(cf.path) for cf in reversed(files.claude) if cf.settings.get("disable_all_hooks")), None)
    for cf in files.highest_first():
        if not cf.hooks:
            continue
        if disabled_by is not None and cf.level == "workspace":
            diags.append(
                Diagnostic(
                    severity="info",
                    code="claude.hooks_disabled",
                    message=f"disableAllHooks is true in {disabled_by}: the hooks of {cf.path} are not loaded",
                    source=str(cf.path),
                    line=cf.line_of("hooks"),
                    fix="remove disableAllHooks to load them",
                )
            )
            continue
        if files.config.execution_policy == "none":
            chat = files.config.kind == "chat"
            diags.append(
                Diagnostic(
                    severity="warning",
                    code="hooks.ignored_in_chat" if chat else "hooks.ignored_no_execution",
                    message="hooks are ignored in a chat workspace (kind: chat)"
                    if chat
                    else f"hooks are ignored: execution_policy is none (set by {files.config.execution_policy_by})",
                    source=str(cf.path),
                    line=cf.line_of("hooks"),
                    fix="remove `hooks:` or set `kind: project`" if chat else "remove `hooks:` or the `none` policy",
                )
            )
            continue
        found, d = parse_hooks(cf.hooks, path=cf.path, level=cf.level, root=root, env=env, doc=cf.doc)
        matchers.extend(found)
        diags.extend(d)
    if files.config.execution_policy != "none":
        # Claude Code plugins' hooks.json (plugins/claude_plugins.py): after the config files', additive as they are;
        # disableAllHooks drops a workspace plugin's as it drops the workspace files' hooks
        for path, raw, level in plugin_hooks:
            if disabled_by is not None and level == "workspace":
                continue
            found, d = _plugin_hooks(path, raw, level, root=root, env=env)
            matchers.extend(found)
            diags.extend(d)
    return HookRegistry(matchers, handlers, diags, disabled_by=disabled_by)


def _plugin_hooks(
    path: Path, raw: Mapping[str, object], level: Level, *, root: Path, env: Mapping[str, str]
) -> tuple[list[HookMatcherSpec], list[Diagnostic]]:
    """A Claude Code plugin's hooks: a Claude Code event BearAgent does not fire, and a command that cannot be found
    (`node` not installed), are warnings naming the plugin, not errors: a plugin written for Claude Code must not stop
    every run of every workspace. Either hook is skipped; the plugin's other hooks load."""
    from bearagent.config.claude_keys import CLAUDE_HOOK_EVENTS

    diags: list[Diagnostic] = []
    kept: dict[str, object] = {}
    for event, groups in raw.items():
        if event in CLAUDE_HOOK_EVENTS and event not in HOOK_EVENTS:
            diags.append(
                Diagnostic(
                    severity="warning",
                    code="claude.hook_event_unsupported",
                    message=f"hook event {event!r} is a Claude Code event BearAgent never fires; the plugin's hooks for it do not run",
                    source=str(path),
                    field=f"hooks.{event}",
                    fix="see docs/claude-code.md#hooks for the events BearAgent fires",
                )
            )
        else:
            kept[event] = groups
    found, parsed = parse_hooks(kept, path=path, level=level, root=root, env=env)
    for d in parsed:
        if d.code == "hooks.command_not_executable" and d.severity == "error":
            d = d.model_copy(update={"severity": "warning", "fix": f"{d.fix}; or disable the plugin"})
        diags.append(d)
    return found, diags


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
                context = HandlerContext(event, root, env, path, line(event), agent, is_claude_file(path, root))
                handler = parse_handler(handler_raw, hwhere, context, diags)
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
