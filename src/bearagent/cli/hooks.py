"""`bearagent hooks list` and `bearagent hooks test EVENT < payload.json`.

The commands take the workspace's hooks from a loader function (`HookWorkspaceLoader`), so they can be built over
any source of specs (`make_hooks_group(loader)`); the registered `hooks` group uses `load_hook_workspace`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast, get_args

import click

from bearagent.cli._groups import ListGroup
from bearagent.domain._base import JsonValue
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.errors import BearAgentError
from bearagent.domain.run_events import HookExecutedV1
from bearagent.domain.specs import HookEventName, HookMatcherSpec
from bearagent.hooks.bridge import assemble_hook_groups
from bearagent.hooks.capability_view import declared, effective, label
from bearagent.hooks.dispatcher import HookDispatcher, HookOutcome, HookSettings
from bearagent.hooks.hook_input import CommonInput
from bearagent.hooks.runners import PythonHookFunction, describe_handler
from bearagent.hooks.transcript import TranscriptWriter
from bearagent.rewind.workspace_writes import record_for_env
from bearagent.trust import TrustSurface, require_trust, workspace_trust_surface

if TYPE_CHECKING:
    from bearagent.sandbox.settings import SandboxSettings
    from bearagent.workspace import LoadedWorkspace

HOOK_EVENTS: tuple[str, ...] = get_args(HookEventName)
_COMMON_FIELDS = frozenset(CommonInput.model_fields)


@dataclass(frozen=True, slots=True)
class HookWorkspace:
    """What the hook commands need of a loaded workspace."""

    root: Path
    groups: tuple[HookMatcherSpec, ...]
    python_handlers: Mapping[str, PythonHookFunction] = field(default_factory=dict[str, PythonHookFunction])
    surface: TrustSurface = field(default_factory=TrustSurface)
    diagnostics: tuple[Diagnostic, ...] = ()
    refusal: BearAgentError | None = None
    """Why no hook runs here (execution_policy none, a chat workspace too: `config/execution.py`); None: they run."""
    env: Mapping[str, str] | None = None
    """The environment the handlers get (None = this process's); a run's: with the Claude Code settings' `env`."""
    sandbox: SandboxSettings | None = None
    """The merged sandbox settings (`hooks: true` runs command handlers confined, as in a run); None = off."""


HookWorkspaceLoader = Callable[[Path | None], HookWorkspace]


def hook_workspace(ws: LoadedWorkspace) -> HookWorkspace:
    """The hook view of a loaded workspace: the same groups a run uses (`assemble_hook_groups`)."""
    groups, functions = assemble_hook_groups(
        ws.hooks.all(),
        ws.agents.all(),
        ws.hooks.python_handlers(),
        workspace_agent_hooks=ws.hooks.disabled_by is None,
    )
    return HookWorkspace(
        root=ws.root,
        groups=tuple(groups),
        python_handlers=functions,
        surface=workspace_trust_surface(ws),
        diagnostics=tuple(ws.hooks.diagnostics),
        refusal=_refusal(ws),
        env=ws.child_env(),
        sandbox=ws.config.sandbox,
    )


def _refusal(ws: LoadedWorkspace) -> BearAgentError | None:
    from bearagent.config.execution import require_execution

    try:
        require_execution(ws.config, "running hooks")
    except BearAgentError as exc:
        return exc
    return None


def load_hook_workspace(workspace: Path | None) -> HookWorkspace:
    """`bearagent.workspace.load_workspace` (config files, agents, plugins), seen through `hook_workspace`."""
    from bearagent.workspace import load_workspace

    return hook_workspace(load_workspace(workspace))


def _fail(exc: BearAgentError) -> None:
    click.echo(f"error: {exc.info.message}", err=True)
    if exc.hint:
        click.echo(f"  fix: {exc.hint}", err=True)
    sys.exit(2)


def _print_diagnostics(diagnostics: tuple[Diagnostic, ...]) -> None:
    for diagnostic in diagnostics:
        click.echo(diagnostic.render(), err=True)


def hook_rows(ws: HookWorkspace) -> list[dict[str, JsonValue]]:
    rows: list[dict[str, JsonValue]] = []
    for group in ws.groups:
        for spec in group.hooks:
            rows.append(
                {
                    "event": group.event,
                    "matcher": group.matcher or "*",
                    "handler": describe_handler(spec),
                    "type": spec.type,
                    "source": group.source or group.level,
                    "level": group.level,
                    "agent": group.agent,
                    "capabilities": effective(spec),
                    "capabilities_declared": declared(spec),
                    "capabilities_label": label(spec),
                    "on_failure": spec.on_failure,
                    "timeout_s": spec.timeout_s,
                }
            )
    return rows


def _render_outcome(outcome: HookOutcome) -> None:
    click.echo(f"{outcome.event}: {outcome.matched} handler{'s' if outcome.matched != 1 else ''} matched")
    for h in outcome.handlers:
        line = f"  {h.label}  [{h.decision}]  {h.duration_ms} ms  ({h.source or 'config'})"
        click.echo(line)
        if h.failure is not None:
            click.echo(f"    error: {h.failure.message}")
        if h.refused:
            click.echo(f"    refused (beyond declared capabilities): {', '.join(h.refused)}")
    if not outcome.continue_:
        click.echo(f"decision: stop the run — {outcome.stop_reason}")
    elif outcome.blocked:
        click.echo(f"decision: block — {outcome.block_reason}")
    elif outcome.permission is not None:
        reason = f" — {outcome.permission_reason}" if outcome.permission_reason else ""
        click.echo(f"decision: {outcome.permission}{reason}")
    else:
        click.echo("decision: proceed")
    if outcome.updated_input is not None:
        click.echo(f"updated input: {json.dumps(outcome.updated_input, ensure_ascii=False)}")
    if outcome.updated_request is not None:
        click.echo("updated model request: yes")
    if outcome.additional_context:
        click.echo(f"additional context: {outcome.additional_context}")
    for message in outcome.system_messages:
        click.echo(f"message: {message}")


def make_hooks_group(loader: HookWorkspaceLoader) -> click.Group:
    @click.group(name="hooks", cls=ListGroup)
    def hooks_group() -> None:
        """Inspect and try the hooks of this workspace."""

    @hooks_group.command(name="list")
    @click.option("-w", "--workspace", type=click.Path(file_okay=False, path_type=Path), default=None)
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line.")
    def list_command(workspace: Path | None, as_json: bool) -> None:
        """Every configured hook: event, matcher, handler, source, capabilities, on_failure."""
        ws = loader(workspace)
        _print_diagnostics(ws.diagnostics)
        rows = hook_rows(ws)
        if as_json:
            for row in rows:
                click.echo(json.dumps(row, ensure_ascii=False))
            return
        if not rows:
            click.echo(f"No hooks configured in {ws.root} (add `hooks:` to .bearagent/config.yaml).")
            return
        if ws.refusal is not None:
            click.echo(f"note: these hooks never run here: {ws.refusal.info.message}")
        for row in rows:
            agent = f"  agent={row['agent']}" if row["agent"] else ""
            caps = row["capabilities_label"]
            click.echo(
                f"{row['event']}  matcher={row['matcher']}  {row['handler']}  source={row['source']}  "
                f"capabilities={caps}  on_failure={row['on_failure']}{agent}"
            )

    @hooks_group.command(name="test")
    @click.argument("event")
    @click.option("-w", "--workspace", type=click.Path(file_okay=False, path_type=Path), default=None)
    @click.option("--agent", "agent_name", default=None, help="Also run the hooks of this agent.")
    @click.option("--json", "as_json", is_flag=True, help="Print the merged decision as JSON.")
    def test_command(event: str, workspace: Path | None, agent_name: str | None, as_json: bool) -> None:
        """Run the hooks matching EVENT with the JSON payload read from stdin, and print the merged decision."""
        if event not in HOOK_EVENTS:
            from bearagent.config.files import did_you_mean

            guess = did_you_mean(event, HOOK_EVENTS)
            click.echo(
                f"error: unknown hook event {event!r}" + (f" (did you mean {guess!r}?)" if guess else ""), err=True
            )
            click.echo(f"  fix: use one of {', '.join(HOOK_EVENTS)} (names are case-sensitive)", err=True)
            sys.exit(2)
        text = sys.stdin.read()
        try:
            payload: object = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            click.echo(f"error: stdin is not valid JSON ({exc.msg} at line {exc.lineno})", err=True)
            click.echo("  fix: pipe a JSON object, e.g. `bearagent hooks test PreToolUse < payload.json`", err=True)
            sys.exit(2)
        if not isinstance(payload, dict):
            click.echo("error: the payload on stdin must be a JSON object", err=True)
            click.echo(
                '  fix: e.g. {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t1"}', err=True
            )
            sys.exit(2)
        fields = {k: v for k, v in cast(dict[str, JsonValue], payload).items() if k not in _COMMON_FIELDS}
        ws = loader(workspace)
        _print_diagnostics(ws.diagnostics)
        if ws.refusal is not None:
            _fail(ws.refusal)
        try:
            require_trust(ws.root, ws.surface)
        except BearAgentError as exc:
            _fail(exc)
        try:
            outcome = asyncio.run(_run_test(ws, cast(HookEventName, event), fields, agent_name))
        except ValueError as exc:
            click.echo(f"error: {exc}", err=True)
            click.echo(f"  fix: give the fields of a {event} hook input (see docs/hooks.md#input)", err=True)
            sys.exit(2)
        if as_json:
            click.echo(json.dumps(outcome.to_json(), ensure_ascii=False, indent=2))
        else:
            _render_outcome(outcome)

    return hooks_group


async def _run_test(
    ws: HookWorkspace, event: HookEventName, fields: dict[str, JsonValue], agent_name: str | None
) -> HookOutcome:
    records: list[HookExecutedV1] = []
    with tempfile.TemporaryDirectory(prefix="bearagent-hooks-test-") as tmp:
        session_id = f"hooks-test-{uuid.uuid4()}"
        transcript = TranscriptWriter.for_session(Path(tmp), session_id, cwd=ws.root)
        dispatcher = HookDispatcher(
            ws.groups,
            python_handlers=ws.python_handlers,
            record=records.append,
            transcript=transcript,
            settings=HookSettings(
                workspace_root=ws.root,
                session_id=session_id,
                env=ws.env,
                sandbox=ws.sandbox,
                writes=record_for_env(os.environ),  # the user config dir `require_trust` read
            ),
        )
        outcome = await dispatcher.fire(event, fields, agent_name=agent_name)
        background = await dispatcher.wait_background()  # `async` handlers: shown, though they decide nothing
        return replace(outcome, handlers=(*outcome.handlers, *background)) if background else outcome


hooks = make_hooks_group(load_hook_workspace)
