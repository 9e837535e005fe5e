"""`bearagent action run NAME [k=v...]`: run a named action with its agent. A skill runs the same way, as the slash
command it is (`bearagent action run commit-helper fix the typo`; `cli/slash_commands.py` has the precedence)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bearagent.cli._config_common import workspace_option
from bearagent.cli._run_common import budget_options, collect_budgets, die, execute_and_exit

if TYPE_CHECKING:
    from bearagent.workspace import LoadedWorkspace


def parse_inputs(pairs: tuple[str, ...]) -> dict[str, object]:
    """`k=v` pairs; a value that parses as JSON (numbers, true/false, lists, objects, "quoted") is taken as JSON,
    anything else as a plain string."""
    out: dict[str, object] = {}
    for pair in pairs:
        if "=" not in pair:
            die(f"argument {pair!r} is not key=value", "pass action inputs as key=value, e.g. doc=docs/project.md")
        key, _, value = pair.partition("=")
        key = key.strip()
        if not key:
            die(f"argument {pair!r} has an empty key", "pass action inputs as key=value")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


@click.group("action")
def action() -> None:
    """Run named actions (`actions/<name>.md`)."""


@action.command("run")
@click.argument("name")
@click.argument("inputs", nargs=-1)
@workspace_option
@click.option("-m", "--model", default=None, help="Model entry to use instead of the action's or the agent's.")
@click.option("--json", "as_json", is_flag=True, help="Print only the final record as one JSON object.")
@budget_options
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
def run_action(
    name: str,
    inputs: tuple[str, ...],
    workspace: Path | None,
    model: str | None,
    as_json: bool,
    debug: bool,
    **budget_flags: object,
) -> None:
    """Render action NAME with INPUTS (key=value ...) and run it with the action's agent. A custom command
    (`.claude/commands/*.md`) takes its arguments as typed: `bearagent action run review 42 high`."""
    from bearagent.app.runtime import open_runtime
    from bearagent.cli._config_common import load
    from bearagent.cli.render import make_console
    from bearagent.cli.terminal_stream import attach_terminal
    from bearagent.domain._base import JsonValue
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.ids import RunId
    from bearagent.runtime.observer import NullObserver, RunObserver
    from bearagent.service.runner import RunResult

    loaded = load(workspace)
    from bearagent.cli.slash_commands import invocable_skill

    skill = invocable_skill(loaded, name)
    found = loaded.actions.get(name)
    if skill is not None and (found is None or found.kind == "command"):
        _run_skill(loaded, name, inputs, model, as_json, debug, budget_flags)
        return
    try:
        spec = loaded.actions.require(name)
    except BearAgentError as exc:
        die(exc.info.message, exc.hint or "`bearagent actions list` shows the actions")
    if spec.kind == "command" and not all("=" in i and i.split("=", 1)[0] == "arguments" for i in inputs):
        from bearagent.registries.commands import render_command

        values: dict[str, object] = {"arguments": inputs[0] if len(inputs) == 1 else shlex.join(inputs)}
        for note in render_command(spec, str(values["arguments"]), root=loaded.root).notes:
            click.echo(f"note: {note}", err=True)
    else:
        values = parse_inputs(inputs)
    runtime = open_runtime(loaded)
    plain: dict[str, JsonValue] = {k: v for k, v in values.items()}  # pyright: ignore[reportAssignmentType]
    budgets = collect_budgets(budget_flags)
    run_id = runtime.ids.new(RunId)

    async def go() -> RunResult:
        observer: RunObserver = NullObserver() if as_json else attach_terminal(runtime, run_id, make_console())
        return await runtime.run_action(name, plain, observer=observer, budgets=budgets, model=model, run_id=run_id)

    execute_and_exit(runtime, go, output="json" if as_json else "text", debug=debug)


def _run_skill(
    loaded: LoadedWorkspace,
    name: str,
    inputs: tuple[str, ...],
    model: str | None,
    as_json: bool,
    debug: bool,
    budget_flags: dict[str, object],
) -> None:
    """`bearagent action run SKILL args`: the skill's instructions with its arguments, its allowed-tools pre-approved
    for this run, by the default agent."""
    from bearagent.app.runtime import open_runtime
    from bearagent.cli.render import make_console
    from bearagent.cli.slash_commands import invocable_skill, skill_invocation
    from bearagent.cli.terminal_stream import attach_terminal
    from bearagent.domain.ids import RunId
    from bearagent.runtime.observer import NullObserver, RunObserver
    from bearagent.runtime.plan import CommandExpansion
    from bearagent.service.runner import RunOptions, RunResult

    skill = invocable_skill(loaded, name)
    assert skill is not None
    arguments = inputs[0] if len(inputs) == 1 else shlex.join(inputs)
    invocation = skill_invocation(skill, arguments, loaded)
    for note in invocation.notes:
        click.echo(f"note: {note}", err=True)
    runtime = open_runtime(loaded)
    options = RunOptions(
        agent=loaded.config.default_agent,
        model=model,
        trigger_type="manual_action",
        trigger_ref=skill.name,
        budgets=dict(collect_budgets(budget_flags)),
        allowed_tools=invocation.allowed_tools,
        run_id=runtime.ids.new(RunId),
        expansion=CommandExpansion.of(invocation.action, arguments),
    )

    async def go() -> RunResult:
        assert options.run_id is not None
        observer: RunObserver = NullObserver() if as_json else attach_terminal(runtime, options.run_id, make_console())
        return await runtime.run(invocation.prompt, options, observer)

    execute_and_exit(runtime, go, output="json" if as_json else "text", debug=debug)
