"""`bearagent replay RUN [--dry]` and `bearagent diff RUN_A RUN_B`: a run re-driven from its log, two runs aligned.

What the tables show came from models and tools: it goes through `safe_text.visible` (control sequences shown,
never interpreted); `--json` prints it exactly. Exit codes: 0 every step matches (replay), the log is valid
(`--dry`) or the runs are the same (diff); 1 a mismatch, an invalid log, or a difference; 2 usage or configuration.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from bearagent.cli._config_common import emit_json, json_option, print_table, short, workspace_option
from bearagent.cli.safe_text import visible

if TYPE_CHECKING:
    from bearagent.app import LoadedWorkspace
    from bearagent.domain._base import JsonMapping, JsonValue
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.events import Event
    from bearagent.replay_runs import DryReplay, RunReplay, StepVerdict
    from bearagent.runtime.log_check import LogCheck
    from bearagent.runtime.run_alignment import FieldChange, Row
    from bearagent.runtime.run_steps import ModelStep, RunSteps, ToolStep
    from bearagent.store.sqlite import SqliteEventStore

EXIT_OK = 0
EXIT_DIFFERENT = 1
EXIT_USAGE = 2
BROKEN_LOG_FIX = (
    "the log was changed outside BearAgent (or written by a bug): restore .bearagent/state.db from a backup"
)
PREVIEW = 60


def _fail(what: str, fix: str | None, code: int = EXIT_USAGE) -> NoReturn:
    import sys

    click.echo(visible(f"error: {what}"), err=True)
    if fix:
        click.echo(visible(f"fix: {fix}"), err=True)
    sys.exit(code)


def _fail_with(exc: BearAgentError, fix: str | None = None) -> NoReturn:
    _fail(exc.info.message, exc.hint or fix)


def _open(workspace: Path | None) -> tuple[LoadedWorkspace, SqliteEventStore]:
    from bearagent.cli._config_common import load
    from bearagent.domain.errors import BearAgentError
    from bearagent.resources import open_store

    loaded = load(workspace)
    try:
        return loaded, open_store(loaded, create=False)
    except BearAgentError as exc:
        _fail_with(exc)


def _resolve(store: SqliteEventStore, ref: str) -> str:
    from bearagent.domain.errors import BearAgentError

    try:
        return str(store.resolve_run_ref(ref))
    except BearAgentError as exc:
        _fail_with(exc, "list the runs with `bearagent runs list`")


def _reader(store: SqliteEventStore) -> Callable[[str], Sequence[Event]]:
    def events_of(run_id: str) -> Sequence[Event]:
        return _reader_events(store, run_id)

    return events_of


# ---- cells ------------------------------------------------------------------------------------------------------


def _one_line(text: str, limit: int = PREVIEW) -> str:
    return visible(short(text, limit))


def _tool_label(name: str, arguments: JsonMapping | None) -> str:
    from bearagent.cli.render import preview_arguments

    if arguments:
        return visible(f"{name}({preview_arguments(arguments)})")
    return visible(name)


def _model_cell(step: ModelStep) -> str:
    if step.error is not None:
        return _one_line(f"failed: {step.error.code}")
    parts: list[str] = []
    if step.text:
        parts.append(f'"{short(step.text, 40)}"')
    elif step.text is None:
        parts.append("(text not recorded)")
    calls = step.tool_calls if step.tool_calls is not None else ()
    names = [c.name for c in calls] or [t.name for t in step.tools]
    if names:
        parts.append("→ " + ", ".join(names))
    parts.append(f"{step.usage.input_tokens}/{step.usage.output_tokens} tok")
    if step.switched_to:
        parts.append(f"switch → {step.switched_to}")
    return visible(" · ".join(parts))


def _tool_cell(step: ToolStep) -> str:
    label = _tool_label(step.name, step.arguments)
    if step.outcome == "unfinished":
        return f"{label} → (no result)"
    state = "error" if step.is_error else "ok"
    if step.content is None:
        return f"{label} → {step.outcome}"
    return f"{label} → {state}: {_one_line(step.content, 40)}"


def _end_cell(steps: RunSteps) -> str:
    if steps.error is not None and steps.status != "succeeded":
        return _one_line(f"{steps.status}: {steps.error.code}")
    if steps.final_text:
        return _one_line(f"{steps.status}: {steps.final_text}")
    return visible(steps.status)


def _cell(step: object) -> str:
    from bearagent.runtime.run_steps import ModelStep, RunSteps, ToolStep

    if isinstance(step, ModelStep):
        return _model_cell(step)
    if isinstance(step, ToolStep):
        return _tool_cell(step)
    if isinstance(step, RunSteps):
        return _end_cell(step)
    return "-"


def _print_changes(label: str, changes: Sequence[FieldChange]) -> None:
    for change in changes:
        if not change.diff:  # one-line values say it all
            click.echo(visible(f"  {label} {change.field}: {change.a} → {change.b}"))
            continue
        click.echo(visible(f"  {label} {change.field}:"))
        for line in change.diff:
            click.echo(visible(f"      {line}"))


def _change_json(change: FieldChange) -> dict[str, JsonValue]:
    return {"field": change.field, "a": change.a, "b": change.b, "diff": list(change.diff)}


def _header(steps: RunSteps, what: str) -> str:
    agent = steps.agent_name or "(agent not recorded)"
    return visible(f"{what} {steps.run_id} · agent {agent} · {steps.status}")


# ---- replay --dry ----------------------------------------------------------------------------------------------


def _problems_json(check: LogCheck) -> list[dict[str, JsonValue]]:
    return [{"severity": p.severity, "sequence": p.sequence, "message": p.message} for p in check.problems]


def _dry_json(dry: DryReplay) -> dict[str, JsonValue]:
    from bearagent.runtime.run_steps import steps_json

    return {
        "run_id": dry.check.run_id,
        "valid": dry.check.valid,
        "status": dry.check.status,
        "events": dry.check.events,
        "problems": _problems_json(dry.check),
        "notes": list(dry.notes),
        "steps": [*steps_json(dry.steps)],
        "children": [_dry_json(child) for child in dry.children],
    }


def _step_rows(steps: RunSteps) -> list[list[str]]:
    rows: list[list[str]] = []
    for turn in steps.turns:
        outcome = turn.stop_reason or ("failed" if turn.error is not None else "-")
        rows.append([str(turn.index), "model", visible(turn.agent or "-"), _model_cell(turn), outcome])
        for i, tool in enumerate(turn.tools, start=1):
            rows.append([f"{turn.index}.{i}", "tool", "", _tool_cell(tool), tool.outcome])
    rows.append(["end", "end", "", _end_cell(steps), steps.status])
    return rows


def _print_dry(dry: DryReplay, *, child: bool = False) -> None:
    check = dry.check
    verdict = "the log is a valid run" if check.valid else "the log is NOT a valid run"
    click.echo(_header(dry.steps, "child run" if child else "run") + f" · {check.events} events: {verdict}")
    print_table(["STEP", "KIND", "AGENT", "WHAT", "OUTCOME"], _step_rows(dry.steps))
    for problem in check.problems:
        click.echo(visible(f"  {problem.severity}: {problem.message}"))
    for note in dry.notes:
        click.echo(visible(f"  note: {note}"))
    for sub in dry.children:
        click.echo("")
        _print_dry(sub, child=True)


def _first_error(dry: DryReplay) -> LogCheck | None:
    if not dry.check.valid:
        return dry.check
    for child in dry.children:
        found = _first_error(child)
        if found is not None:
            return found
    return None


# ---- replay ----------------------------------------------------------------------------------------------------


def _verdict_json(v: StepVerdict) -> dict[str, JsonValue]:
    return {
        "step": v.step,
        "kind": v.kind,
        "name": v.name,
        "verdict": v.verdict,
        "note": v.note,
        "changes": [_change_json(c) for c in v.changes],
    }


def _replay_json(r: RunReplay) -> dict[str, JsonValue]:
    return {
        "run_id": r.run_id,
        "agent": r.recorded.agent_name,
        "ok": r.ok,
        "valid": r.check.valid,
        "recorded_status": r.recorded.status,
        "replayed_status": r.replayed_status,
        "mismatches": r.mismatches,
        "problems": _problems_json(r.check),
        "steps": [_verdict_json(v) for v in r.verdicts],
        "notes": list(r.notes),
        "children": [_replay_json(child) for child in r.children],
    }


def _print_replay(r: RunReplay, *, child: bool = False) -> None:
    click.echo(_header(r.recorded, "child run" if child else "replay of run"))
    if not r.check.valid:
        for problem in r.check.errors:
            click.echo(visible(f"  error: {problem.message}"))
        click.echo("  not replayed: the log is not a valid run")
    else:
        rows = [
            [
                v.step,
                v.kind,
                _tool_label(v.name, v.arguments) if v.kind == "tool" else visible(v.name),
                v.verdict,
                visible(v.note),
            ]
            for v in r.verdicts
        ]
        print_table(["STEP", "KIND", "NAME", "VERDICT", "NOTE"], rows)
        mismatched = [v for v in r.verdicts if v.changes]
        if mismatched:
            click.echo("mismatches:")
            for v in mismatched:
                _print_changes(v.step, v.changes)
        if r.notes:
            click.echo("notes:")
            for note in r.notes:
                click.echo(visible(f"  - {note}"))
        counts = {name: sum(1 for v in r.verdicts if v.verdict == name) for name in ("match", "mismatch", "reused")}
        skipped = sum(1 for v in r.verdicts if v.verdict == "skipped")
        click.echo(
            f"{len(r.verdicts)} steps: {counts['match']} match, {counts['mismatch']} mismatch, "
            f"{counts['reused']} reused, {skipped} skipped · replayed run {r.replayed_status}"
        )
    for sub in r.children:
        click.echo("")
        _print_replay(sub, child=True)


@click.command("replay")
@click.argument("run_ref", metavar="RUN")
@workspace_option
@click.option("--dry", is_flag=True, help="Execute nothing: check that the log is a valid run and list its steps.")
@json_option
def replay(run_ref: str, workspace: Path | None, dry: bool, as_json: bool) -> None:
    """Re-drive a recorded run from its log and report whether every step matches.

    No model is called: the loop gets the recorded model turns, in order. Read-only tool calls (Read, Grep, Glob,
    Skill, SwitchAgent, read-only MCP tools) run again through the workspace's tools and their results are compared
    with the log; every other call (Write, Edit, Bash, WebFetch, Task, actions) returns its recorded result
    without executing. Hooks are not fired. Child runs are replayed from their own logs. Nothing is written to the
    workspace's store (the replay goes to a scratch file that is deleted).

    RUN is a full run id, a unique prefix of one, or `last`. Exit codes: 0 every step matches (with --dry: the log
    is valid), 1 a mismatch (an invalid log), 2 usage or configuration error.
    """
    from bearagent.domain.errors import BearAgentError
    from bearagent.replay_runs import dry_replay, replay_run

    loaded, store = _open(workspace)
    try:
        run_id = _resolve(store, run_ref)
        events_of = _reader(store)
        if dry:
            result = dry_replay(events_of, run_id)
            if as_json:
                emit_json(_dry_json(result))
            else:
                _print_dry(result)
            broken = _first_error(result)
            if broken is not None:
                first = broken.errors[0]
                _fail(f"the log of run {broken.run_id} is not a valid run: {first.message}", BROKEN_LOG_FIX, 1)
            return
        try:
            replayed = asyncio.run(replay_run(loaded, events_of, run_id))
        except BearAgentError as exc:
            _fail_with(exc)
    finally:
        store.close()
    if as_json:
        emit_json(_replay_json(replayed))
    else:
        _print_replay(replayed)
    if not replayed.ok:
        _exit_different(replayed)


def _exit_different(r: RunReplay) -> NoReturn:
    import sys

    if not r.check.valid:
        _fail(f"the log of run {r.run_id} is not a valid run: {r.check.errors[0].message}", BROKEN_LOG_FIX, 1)
    for child in r.children:
        if not child.ok:
            _exit_different(child)
    click.echo(visible(f"the replay of run {r.run_id} does not match its log ({r.mismatches} mismatch(es))"), err=True)
    sys.exit(EXIT_DIFFERENT)


# ---- diff ------------------------------------------------------------------------------------------------------


def _row_json(row: Row) -> dict[str, JsonValue]:
    from bearagent.runtime.run_steps import ModelStep, RunSteps, ToolStep, end_json, model_step_json, tool_step_json

    def side(step: object) -> dict[str, JsonValue] | None:
        if isinstance(step, ModelStep):
            return model_step_json(step)
        if isinstance(step, ToolStep):
            return tool_step_json(step)
        if isinstance(step, RunSteps):
            return end_json(step)
        return None

    return {
        "step": row.step,
        "kind": row.kind,
        "status": row.status,
        "a": side(row.a),
        "b": side(row.b),
        "changes": [_change_json(c) for c in row.changes],
    }


@click.command("diff")
@click.argument("run_a", metavar="RUN_A")
@click.argument("run_b", metavar="RUN_B")
@workspace_option
@json_option
def diff(run_a: str, run_b: str, workspace: Path | None, as_json: bool) -> None:
    """Align two runs step by step: model text, tool calls and arguments, tool results, usage.

    Model turn N of RUN_A stands beside model turn N of RUN_B, each followed by its tool calls in order, then how
    each run ended. A step only one run has is `added` (only in RUN_B) or `removed` (only in RUN_A); a step both
    have is `same` or `changed`, with the fields that differ. Ids are not compared (they differ between any two
    runs). Nothing is executed.

    RUN_A and RUN_B are full run ids, unique prefixes, or `last`. Exit codes: 0 the runs are the same step by step,
    1 they differ, 2 usage error.
    """
    import sys

    from bearagent.runtime.log_check import read_log
    from bearagent.runtime.run_alignment import DIFF, align

    _loaded, store = _open(workspace)
    try:
        ids = (_resolve(store, run_a), _resolve(store, run_b))
        logs = [read_log(run_id, _reader_events(store, run_id)) for run_id in ids]
    finally:
        store.close()
    for check, _steps in logs:
        if not check.valid:
            click.echo(
                visible(f"warning: the log of run {check.run_id} is not a valid run: {check.errors[0].message}"),
                err=True,
            )
    a, b = logs[0][1], logs[1][1]
    rows = align(a, b, DIFF)
    differing = [row for row in rows if row.status != "same"]
    if as_json:
        emit_json(
            {
                "a": {"run_id": a.run_id, "agent": a.agent_name, "status": a.status, "goal": a.goal},
                "b": {"run_id": b.run_id, "agent": b.agent_name, "status": b.status, "goal": b.goal},
                "same": not differing,
                "rows": [_row_json(row) for row in rows],
            }
        )
    else:
        click.echo(_header(a, "A"))
        click.echo(_header(b, "B"))
        table = [
            [row.step, row.kind, row.status, _cell(row.a), "=" if row.status == "same" else _cell(row.b)]
            for row in rows
        ]
        print_table(["STEP", "KIND", "STATUS", "RUN A", "RUN B"], table)
        changed = [row for row in differing if row.changes]
        if changed:
            click.echo("changes:")
            for row in changed:
                _print_changes(row.step, row.changes)
        if differing:
            click.echo(f"{len(differing)} of {len(rows)} steps differ")
        else:
            click.echo(f"the runs are the same step by step ({len(rows)} steps)")
    sys.exit(EXIT_DIFFERENT if differing else EXIT_OK)


def _reader_events(store: SqliteEventStore, run_id: str) -> Sequence[Event]:
    from bearagent.domain.ids import RunId

    return store.read_events(RunId(run_id))
