"""`bearagent runs list`, `inspect RUN` and `events RUN [--json] [--follow]`: reading the event log.

What the log holds came from models, tools and workspace files: the text output shows it through
`safe_text.visible` (control sequences shown, never interpreted); `--json` prints it exactly."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bearagent.cli._config_common import (
    emit_json,
    fail,
    json_option,
    open_command_store,
    print_table,
    short,
    workspace_option,
)
from bearagent.cli._groups import ListGroup
from bearagent.cli.safe_text import visible

if TYPE_CHECKING:
    from bearagent.domain.events import Event
    from bearagent.domain.ids import RunId
    from bearagent.domain.state import RunProjection
    from bearagent.ports import WorkspaceStore
    from bearagent.runtime.step_records import RunStepRecord
    from bearagent.workspace import LoadedWorkspace

FOLLOW_POLL_S = 0.2


def open_recovered(workspace: Path | None) -> WorkspaceStore:
    """The workspace's store, after recording `RunInterrupted` for runs whose process died (`service/leases.py`), so a
    listing never shows a phantom `running`."""
    from bearagent.cli._config_common import load

    return recovered_store(load(workspace))


def recovered_store(loaded: LoadedWorkspace) -> WorkspaceStore:
    """`open_recovered` for a workspace the command loaded already."""
    import asyncio

    from bearagent.app.stores import writer_over
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.ids import Uuid4IdGenerator
    from bearagent.ports import SystemClock
    from bearagent.service.leases import recover_interrupted

    try:
        store = open_command_store(loaded)
        asyncio.run(recover_interrupted(store, writer_over(loaded, store), SystemClock(), Uuid4IdGenerator()))
        return store
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)


def resolve_ref(store: WorkspaceStore, ref: str) -> RunId:
    from bearagent.domain.errors import BearAgentError

    try:
        return store.resolve_run_ref(ref)
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint or "list the runs with `bearagent runs list`")


def when(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S") if value is not None else "-"


@click.group(
    "runs",
    cls=ListGroup,
    lazy={
        "export": "bearagent.cli.run_export:export",
        "search": "bearagent.cli.run_search:search",
        "diff": "bearagent.cli.run_files_diff:diff",
        "pin": "bearagent.cli.run_state:pin",
        "unpin": "bearagent.cli.run_state:unpin",
        "cancel": "bearagent.cli.run_state:cancel",
    },
)
def runs() -> None:
    """List the runs stored in this workspace's event log."""


@runs.command("resume")
@click.argument("run_ref", metavar="RUN")
@workspace_option
@json_option
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
def resume(run_ref: str, workspace: Path | None, as_json: bool, debug: bool) -> None:
    """Continue an interrupted run (its process died) from its log: completed model calls are not made again,
    a read-only call in flight runs again, any other is reported to the model as of unknown outcome. Exit codes as
    for `bearagent run`."""
    from bearagent.app.runtime import open_runtime
    from bearagent.cli._config_common import load
    from bearagent.cli._run_common import die_from, execute_and_exit
    from bearagent.cli.render import make_console
    from bearagent.cli.terminal_stream import attach_terminal
    from bearagent.domain.errors import BearAgentError
    from bearagent.runtime.observer import NullObserver, RunObserver
    from bearagent.service.runner import RunResult

    store = open_recovered(workspace)
    run_id = resolve_ref(store, run_ref)
    store.close()
    try:
        runtime = open_runtime(load(workspace))
    except BearAgentError as exc:
        die_from(exc, debug=debug)

    async def go() -> RunResult:
        observer: RunObserver = NullObserver() if as_json else attach_terminal(runtime, run_id, make_console())
        return await runtime.resume(run_id, observer)

    execute_and_exit(runtime, go, output="json" if as_json else "text", debug=debug)


@runs.command("list")
@workspace_option
@json_option
@click.option("--session", "session", default=None, help="Only runs of this session id.")
@click.option(
    "--status",
    type=click.Choice(["queued", "running", "waiting", "interrupted", "succeeded", "failed", "cancelled"]),
    default=None,
    help="Only runs in this state.",
)
@click.option("--limit", type=click.IntRange(1, 10_000), default=20, show_default=True, help="How many runs.")
def list_runs(workspace: Path | None, as_json: bool, session: str | None, status: str | None, limit: int) -> None:
    """Newest runs first: id, status, agent, trigger, usage and goal."""
    from bearagent.domain.ids import SessionId

    store = open_recovered(workspace)
    session_id = None
    if session is not None:
        try:
            session_id = SessionId(session)
        except ValueError:
            fail(f"--session {session!r} is not a session id", "copy a session id from `bearagent runs list --json`")
    found = store.list_runs(session_id=session_id, status=status, limit=limit)  # pyright: ignore[reportArgumentType]
    if as_json:
        emit_json([run.model_dump(mode="json") for run in found])
        return
    if not found:
        click.echo('no runs yet: start one with `bearagent run "..."`')
        return
    rows = [
        [
            str(run.run_id)[:8] + ("  (child)" if run.parent_run_id else ""),
            run.status,
            run.effective_agent_name or run.agent_name or "-",
            run.trigger_type,
            when(run.created_at),
            str(run.usage.model_iterations),
            str(run.usage.tool_calls),
            str(run.usage.total_tokens),
            short(run.goal or "", 50),
        ]
        for run in found
    ]
    rows = [[visible(cell) for cell in row] for row in rows]
    print_table(["RUN", "STATUS", "AGENT", "TRIGGER", "CREATED", "MODEL", "TOOLS", "TOKENS", "GOAL"], rows)


def _budget_rows(run: RunProjection) -> list[list[str]]:
    limits = run.budget_limits
    usage = run.usage
    pairs = [
        ("model iterations", usage.model_iterations, limits.max_model_iterations),
        ("tool calls", usage.tool_calls, limits.max_tool_calls),
        ("tokens", usage.total_tokens, limits.max_tokens),
        ("cost (micro-USD)", usage.cost_microusd, limits.max_cost_microusd),
        ("wall time (ms)", usage.wall_time_ms, limits.max_wall_time_ms),
    ]
    return [
        [name, str(used), str(limit), f"{(100 * used / limit):.0f}%" if limit else "-"] for name, used, limit in pairs
    ]


@click.command("inspect")
@click.argument("run_ref", metavar="RUN")
@workspace_option
@json_option
def inspect(run_ref: str, workspace: Path | None, as_json: bool) -> None:
    """Show one run: status, agent, usage against every budget, activities, steps, errors and child runs.

    RUN is a full run id, a unique prefix of one, or `last`.
    """
    store = open_recovered(workspace)
    run_id = resolve_ref(store, run_ref)
    run = store.get_run(run_id)
    if run is None:
        fail(f"run {run_id} has no projection", "rebuild projections or check the store file")
    activities = store.list_activities(run_id)
    children = store.list_runs(parent_run_id=run_id, limit=1_000)
    events = store.read_events(run_id)
    switches = [e for e in events if e.event_type == "AgentSwitched"]
    hooks = [e for e in events if e.event_type == "HookExecuted"]
    from bearagent.runtime.step_records import run_step_records

    steps = run_step_records(str(run_id), events, status=run.status)
    if as_json:
        emit_json(
            {
                "run": run.model_dump(mode="json"),
                "activities": [a.model_dump(mode="json") for a in activities],
                "children": [c.model_dump(mode="json") for c in children],
                "agent_switches": [dict(e.model_dump(mode="json")["payload"]) for e in switches],
                "hook_executions": len(hooks),
                "steps": [s.to_json() for s in steps],
            }
        )
        return
    click.echo(f"run       {run.run_id}")
    click.echo(f"status    {run.status}")
    agent = run.agent_name or "-"
    if run.effective_agent_name and run.effective_agent_name != run.agent_name:
        agent = f"{agent} -> {run.effective_agent_name} ({run.switch_count} switch(es))"
    click.echo(visible(f"agent     {agent}"))
    click.echo(f"session   {run.session_id or '-'}")
    if run.parent_run_id:
        click.echo(f"parent    {run.parent_run_id}")
    click.echo(visible(f"trigger   {run.trigger_type}"))
    click.echo(f"goal      {short(visible(run.goal or ''), 100)}")
    click.echo(f"created   {when(run.created_at)}   ended {when(run.ended_at)}")
    if run.error is not None:
        click.echo(visible(f"error     [{run.error.code}] {run.error.message}"))
    if run.final_text:
        click.echo(f"final     {short(visible(run.final_text), 100)}")
    click.echo("")
    print_table(["BUDGET", "USED", "LIMIT", "%"], _budget_rows(run), title="usage")
    click.echo("")
    rows: list[list[str]] = []
    for act in activities:
        took = "-"
        if act.started_at is not None and act.ended_at is not None:
            took = f"{(act.ended_at - act.started_at).total_seconds() * 1000:.0f} ms"
        outcome = act.status
        if act.error is not None:
            outcome = f"{act.status}: {short(visible(act.error.message), 60)}"
        kind = "model" if act.kind == "model_call" else "tool"
        rows.append([str(act.requested_sequence), kind, visible(act.name or "-"), took, outcome])
    print_table(["SEQ", "KIND", "NAME", "TOOK", "OUTCOME"], rows, title="activities")
    if steps:
        click.echo("")
        print_table(["STEP", "TYPE", "NAME", "AGENT", "STATUS", "EVENTS", "TOOK"], _step_rows(steps), title="steps")
    if children:
        click.echo("")
        print_table(
            ["CHILD RUN", "AGENT", "STATUS"],
            [[str(c.run_id), visible(c.agent_name or "-"), c.status] for c in children],
            title="child runs",
        )
    if switches or hooks:
        click.echo("")
        click.echo(f"agent switches: {len(switches)}   hook executions: {len(hooks)}")


def _step_rows(steps: Sequence[RunStepRecord]) -> list[list[str]]:
    """One row per RunStep (`runtime/step_records.py`): what ran, as which agent, how it ended, its log range."""
    rows: list[list[str]] = []
    for step in steps:
        took = "-"
        if step.started_at is not None and step.ended_at is not None:
            took = f"{(step.ended_at - step.started_at).total_seconds() * 1000:.0f} ms"
        span = (
            f"{step.started_seq}-{step.ended_seq}"
            if step.ended_seq not in (None, step.started_seq)
            else str(step.started_seq)
        )
        rows.append(
            [
                str(step.seq),
                step.step_type,
                visible(short(step.name, 40)),
                visible(step.agent_name or "-"),
                step.status,
                span,
                took,
            ]
        )
    return rows


def _summary(event: Event) -> str:
    """A short `key=value` of the event's most telling field, safe for a terminal."""
    return visible(_raw_summary(event))


def _raw_summary(event: Event) -> str:
    payload = event.payload
    for key in ("tool_name", "goal", "final_text", "text", "model_ref", "to_agent", "hook_event"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return short(f"{key}={value}", 80)
    error = payload.get("error")
    if isinstance(error, Mapping):
        message = error.get("message")
        if isinstance(message, str):
            return short(f"error={message}", 80)
    result = payload.get("result")
    if isinstance(result, Mapping):
        status = result.get("status")
        if isinstance(status, str):
            return f"result={status}"
    return ""


@click.command("events")
@click.argument("run_ref", metavar="RUN")
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="One JSON envelope per line (JSONL).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events until the run ends.")
def events(run_ref: str, workspace: Path | None, as_json: bool, follow: bool) -> None:
    """Print the stored events of a run, in sequence order.

    RUN is a full run id, a unique prefix of one, or `last`.
    """
    store = open_recovered(workspace)
    run_id = resolve_ref(store, run_ref)

    def show(event: Event) -> None:
        if as_json:
            click.echo(json.dumps(event.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")))
        else:
            stamp = event.occurred_at.astimezone().strftime("%H:%M:%S.%f")[:-3]
            click.echo(f"#{event.sequence:<4} {stamp}  {event.event_type}.v{event.schema_version}  {_summary(event)}")

    if not follow:
        for event in store.read_events(run_id, 1):
            show(event)
        return
    import asyncio

    asyncio.run(_follow_events(store, run_id, show))


async def _follow_events(store: WorkspaceStore, run_id: RunId, show: Callable[[Event], None]) -> None:
    """The run's events through the store's one follower (`runtime.log_follower`), until its terminal event."""
    from bearagent.runtime.log_follower import follow_log
    from bearagent.runtime.run_writer import TokenDelta

    async for item in follow_log(store, None, run_id, poll_s=FOLLOW_POLL_S, max_poll_s=FOLLOW_POLL_S):
        if not isinstance(item, TokenDelta):  # no writer here: only the log's events come
            show(item)
