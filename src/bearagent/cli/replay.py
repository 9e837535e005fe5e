"""`bearagent replay RUN [--dry]`: a run re-driven from its log (`service/replay.py`), each step judged, or only its
log checked. Exit codes: 0 every step matches (`--dry`: the log is valid); 1 a mismatch or an invalid log; 2 usage
or configuration."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from bearagent.cli._config_common import emit_json, json_option, print_table, workspace_option
from bearagent.cli.run_steps_view import (
    EXIT_DIFFERENT,
    change_json,
    end_cell,
    events_reader,
    fail,
    fail_with,
    header,
    model_cell,
    open_log,
    print_changes,
    resolve_run,
    steps_json,
    tool_cell,
    tool_label,
)
from bearagent.cli.safe_text import visible

if TYPE_CHECKING:
    from bearagent.domain._base import JsonValue
    from bearagent.runtime.log_check import LogCheck
    from bearagent.runtime.run_steps import RunSteps
    from bearagent.service.replay import DryReplay, RunReplay, StepVerdict

BROKEN_LOG_FIX = (
    "the log was changed outside BearAgent (or written by a bug): restore .bearagent/state.db from a backup"
)


# ---- replay --dry ----------------------------------------------------------------------------------------------


def _problems_json(check: LogCheck) -> list[dict[str, JsonValue]]:
    return [{"severity": p.severity, "sequence": p.sequence, "message": p.message} for p in check.problems]


def _dry_json(dry: DryReplay) -> dict[str, JsonValue]:
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
        rows.append([str(turn.index), "model", visible(turn.agent or "-"), model_cell(turn), outcome])
        for i, tool in enumerate(turn.tools, start=1):
            rows.append([f"{turn.index}.{i}", "tool", "", tool_cell(tool), tool.outcome])
    rows.append(["end", "end", "", end_cell(steps), steps.status])
    return rows


def _print_dry(dry: DryReplay, *, child: bool = False) -> None:
    check = dry.check
    verdict = "the log is a valid run" if check.valid else "the log is NOT a valid run"
    click.echo(header(dry.steps, "child run" if child else "run") + f" · {check.events} events: {verdict}")
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
        "changes": [change_json(c) for c in v.changes],
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
    click.echo(header(r.recorded, "child run" if child else "replay of run"))
    if not r.check.valid:
        for problem in r.check.errors:
            click.echo(visible(f"  error: {problem.message}"))
        click.echo("  not replayed: the log is not a valid run")
    else:
        rows = [
            [
                v.step,
                v.kind,
                tool_label(v.name, v.arguments) if v.kind == "tool" else visible(v.name),
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
                print_changes(v.step, v.changes)
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
    from bearagent.app.replay import replay_run
    from bearagent.domain.errors import BearAgentError
    from bearagent.service.replay import dry_replay

    loaded, store = open_log(workspace)
    try:
        run_id = resolve_run(store, run_ref)
        events_of = events_reader(store)
        if dry:
            result = dry_replay(events_of, run_id)
            if as_json:
                emit_json(_dry_json(result))
            else:
                _print_dry(result)
            broken = _first_error(result)
            if broken is not None:
                first = broken.errors[0]
                fail(f"the log of run {broken.run_id} is not a valid run: {first.message}", BROKEN_LOG_FIX, 1)
            return
        try:
            replayed = asyncio.run(replay_run(loaded, events_of, run_id))
        except BearAgentError as exc:
            fail_with(exc)
    finally:
        store.close()
    if as_json:
        emit_json(_replay_json(replayed))
    else:
        _print_replay(replayed)
    if not replayed.ok:
        _exit_different(replayed)


def _exit_different(r: RunReplay) -> NoReturn:
    if not r.check.valid:
        fail(f"the log of run {r.run_id} is not a valid run: {r.check.errors[0].message}", BROKEN_LOG_FIX, 1)
    for child in r.children:
        if not child.ok:
            _exit_different(child)
    click.echo(visible(f"the replay of run {r.run_id} does not match its log ({r.mismatches} mismatch(es))"), err=True)
    sys.exit(EXIT_DIFFERENT)
