"""The interactive session's status line and its `/model`, `/mcp`, `/permissions` and `/cost` commands.

The status line (shown under the prompt by the line editor) holds the agent, the model, the permission mode, the
sandbox state, the MCP servers' state once they started (`mcp 2/3 ready`), the background shells still running
(`1 shell`) and the session's tokens and cost so far. Every name in it comes from workspace files: it goes through
`safe_text.visible`.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from bearagent.cli.safe_text import visible
from bearagent.domain.diagnostics import name_list
from bearagent.domain.errors import BearAgentError

if TYPE_CHECKING:
    from bearagent.cli.status_command import StatusCommand
    from bearagent.service.runner import RunResult, WorkspaceRuntime

SESSION_COMMANDS: dict[str, str] = {
    "model": "show or switch the model of the session",
    "mcp": "MCP servers and their state",
    "permissions": "permission mode and rules in force",
    "cost": "tokens, cost and time of the session",
}


@dataclass
class SessionTotals:
    """What the session's runs used so far."""

    runs: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_microusd: int = 0
    wall_time_s: float = 0.0

    def add(self, result: RunResult, wall_time_s: float) -> None:
        usage = result.usage
        self.runs += 1
        self.model_calls += usage.model_iterations
        self.tool_calls += usage.tool_calls
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cost_microusd += usage.cost_microusd
        self.wall_time_s += wall_time_s

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'s' if n != 1 else ''}"


def model_in_use(runtime: WorkspaceRuntime, agent: str, override: str | None) -> str:
    """The model entry a prompt of `agent` would use now: the session's `/model` (or `-m`) choice, else the agent's
    own, else the workspace default; `none` when there is none."""
    if override:
        return override
    try:
        projection = runtime.loaded.project(agent, require_model=False)
    except BearAgentError:
        return "none"
    return projection.model.name if projection.model is not None else "none"


def permission_mode(runtime: WorkspaceRuntime, agent: str) -> str:
    spec = runtime.loaded.agents.get(agent)
    if spec is None:
        return "?"
    return runtime.mode_in_force(spec).mode


def activity(runtime: WorkspaceRuntime, session: str | None) -> tuple[str, ...]:
    """What runs in the session's background: its MCP servers' state once they started (`mcp 3 ready`, `mcp 2/3
    ready`, failed ones named: `mcp 2/3 ready, deploy failed`) and its running background shells (`2 shells`)."""
    parts: list[str] = []
    states = runtime.resources.mcp_status()
    if states:
        ready = sum(1 for s in states if s.state == "ready")
        failed = [s.name for s in states if s.state == "failed"]
        text = f"mcp {ready} ready" if ready == len(states) else f"mcp {ready}/{len(states)} ready"
        if failed:
            shown = ", ".join(failed[:2]) + (f" +{len(failed) - 2}" if len(failed) > 2 else "")
            text += f", {shown} failed"
        parts.append(text)
    if session is not None:
        from bearagent.tools.background import running_shells

        shells = running_shells(session)
        if shells:
            parts.append(f"{shells} shell{'s' if shells != 1 else ''}")
    return tuple(parts)


def status_line(
    runtime: WorkspaceRuntime,
    agent: str,
    model: str | None,
    sandbox: str,
    totals: SessionTotals,
    width: int = 0,
    extra: Sequence[str] = (),
) -> str:
    """`writer · gpt · default · sandbox bubblewrap · mcp 2 ready · 1 shell · 1,234 tokens · $0.0012`, cut to the
    terminal width (`extra`: `activity`'s parts)."""
    parts = [
        agent,
        model_in_use(runtime, agent, model),
        permission_mode(runtime, agent),
        f"sandbox {sandbox}",
        *extra,
        f"{totals.tokens:,} tokens",
        f"${totals.cost_microusd / 1_000_000:.4f}",
    ]
    line = visible(" · ".join(parts))
    width = width or shutil.get_terminal_size((80, 24)).columns
    return line if len(line) < width else line[: max(1, width - 2)] + "…"


class StatusLine:
    """`status_line` for the line editor, which asks on every redraw: the model and mode are looked up again only
    when the agent, the model choice, the session, the number of runs or the background activity changed. With
    Claude Code's `statusLine` command (`command`, only for a trusted workspace) its first line is shown instead."""

    def __init__(self, runtime: WorkspaceRuntime, sandbox: str, command: StatusCommand | None = None) -> None:
        self._runtime = runtime
        self._sandbox = sandbox
        self._command = command
        self._key: tuple[str, str | None, int, int, str | None, tuple[str, ...]] | None = None
        self._line = ""

    def __call__(self, agent: str, model: str | None, totals: SessionTotals, session: str | None = None) -> str:
        width = shutil.get_terminal_size((80, 24)).columns
        extra = activity(self._runtime, session)
        key = (agent, model, totals.runs, width, session, extra)
        if key != self._key:
            self._key = key
            own = status_line(self._runtime, agent, model, self._sandbox, totals, width, extra)
            self._line = self._commanded(agent, model, totals, session, width) or own
        return self._line

    def _commanded(
        self, agent: str, model: str | None, totals: SessionTotals, session: str | None, width: int
    ) -> str | None:
        if self._command is None:
            return None
        from bearagent import __version__
        from bearagent.cli.status_command import status_input

        loaded = self._runtime.loaded
        transcript = str(self._runtime.sessions.transcript(session).path) if session else ""
        style = loaded.output_style.name if loaded.output_style is not None else "default"
        payload = status_input(
            session_id=session,
            transcript_path=transcript,
            root=loaded.root,
            model=model_in_use(self._runtime, agent, model),
            output_style=style,
            cost_usd=totals.cost_microusd / 1_000_000,
            duration_ms=int(totals.wall_time_s * 1000),
            version=__version__,
        )
        line = self._command.line(payload)
        return line if line is None or len(line) < width else line[: max(1, width - 2)] + "…"


def run_session_command(
    name: str,
    arg: str,
    runtime: WorkspaceRuntime,
    *,
    agent: str,
    model: str | None,
    session_rules: Sequence[str],
    totals: SessionTotals,
    console: Console,
) -> str | None:
    """Run `/model`, `/mcp`, `/permissions` or `/cost`. Returns the new model choice for `/model NAME` (the caller
    keeps it), else None."""
    loaded = runtime.loaded
    if name == "model":
        if not arg:
            in_use = model_in_use(runtime, agent, model)
            console.print(visible(f"model: {in_use}"), markup=False)
            current = loaded.models.get(in_use)
            for entry in loaded.models.all():
                what = entry.model or entry.provider
                mark = " *" if current is not None and entry.ref == current.ref else ""
                console.print(visible(f"  {entry.name:<20} {entry.provider:<18} {what}{mark}"), markup=False)
            console.print(
                "/model NAME switches the session's model; `bearagent models list --remote` shows what the servers "
                "list",
                style="dim",
                markup=False,
            )
            return None
        if loaded.models.get(arg) is None:
            names = name_list(e.name for e in loaded.models.all()) or "none configured"
            console.print(Text(visible(f"no model entry named {arg!r}; models: {names}"), style="red"))
            return None
        console.print(Text(visible(f"model: {arg}"), style="magenta"))
        return arg
    if name == "mcp":
        specs = loaded.mcp.all()
        states = {s.name: s for s in runtime.resources.mcp_status() or []}
        if not specs and not states:
            console.print("no MCP servers", markup=False)
        for spec in specs:
            where = spec.url if spec.transport == "http" else " ".join((spec.command or "", *spec.args))
            status = states.get(spec.name)
            state = (
                f"{status.state}, {status.tool_count} tool{'s' if status.tool_count != 1 else ''}"
                if status is not None
                else "not started (starts with the first prompt that uses it)"
            )
            console.print(visible(f"  {spec.name:<16} {spec.transport:<6} {state}"), markup=False)
            console.print(Text(visible(f"    {where}"), style="dim"))
            if status is not None and status.last_error:
                console.print(Text(visible(f"    {status.last_error}"), style="red"))
        return None
    if name == "permissions":
        spec = loaded.agents.get(agent)
        if spec is not None:
            force = runtime.mode_in_force(spec)
            console.print(visible(f"mode: {force.mode}" + (f" ({force.capped})" if force.capped else "")), markup=False)
        rules = loaded.config.permissions
        for kind, values in (("allow", rules.allow), ("ask", rules.ask), ("deny", rules.deny)):
            console.print(visible(f"  {kind:<6} {', '.join(values) if values else '-'}"), markup=False)
        if session_rules:
            console.print(visible(f"  allowed this session: {', '.join(sorted(session_rules))}"), markup=False)
        return None
    if name == "cost":
        console.print(
            visible(
                f"{_count(totals.runs, 'run')} · {_count(totals.model_calls, 'model call')} · "
                f"{_count(totals.tool_calls, 'tool call')} · "
                f"{totals.input_tokens:,} in + {totals.output_tokens:,} out tokens · "
                f"${totals.cost_microusd / 1_000_000:.4f} · {totals.wall_time_s:.1f}s"
            ),
            markup=False,
        )
        return None
    raise ValueError(f"not a session command: {name}")
