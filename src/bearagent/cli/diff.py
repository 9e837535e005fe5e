"""`bearagent diff RUN_A RUN_B`: two runs of the log aligned step by step (`runtime/run_alignment.py`), nothing
executed. Exit codes as diff(1): 0 the runs are the same step by step, 1 they differ, 2 usage error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bearagent.cli._config_common import emit_json, json_option, print_table, workspace_option
from bearagent.cli.run_steps_view import (
    EXIT_DIFFERENT,
    EXIT_OK,
    cell,
    change_json,
    end_json,
    header,
    model_step_json,
    open_log,
    print_changes,
    read_events,
    resolve_run,
    tool_step_json,
)
from bearagent.cli.safe_text import visible

if TYPE_CHECKING:
    from bearagent.domain._base import JsonValue
    from bearagent.runtime.run_alignment import Row


def _row_json(row: Row) -> dict[str, JsonValue]:
    from bearagent.runtime.run_steps import ModelStep, RunSteps, ToolStep

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
        "changes": [change_json(c) for c in row.changes],
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
    from bearagent.runtime.log_check import read_log
    from bearagent.runtime.run_alignment import DIFF, align

    _loaded, store = open_log(workspace)
    try:
        ids = (resolve_run(store, run_a), resolve_run(store, run_b))
        logs = [read_log(run_id, read_events(store, run_id)) for run_id in ids]
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
        click.echo(header(a, "A"))
        click.echo(header(b, "B"))
        table = [
            [row.step, row.kind, row.status, cell(row.a), "=" if row.status == "same" else cell(row.b)] for row in rows
        ]
        print_table(["STEP", "KIND", "STATUS", "RUN A", "RUN B"], table)
        changed = [row for row in differing if row.changes]
        if changed:
            click.echo("changes:")
            for row in changed:
                print_changes(row.step, row.changes)
        if differing:
            click.echo(f"{len(differing)} of {len(rows)} steps differ")
        else:
            click.echo(f"the runs are the same step by step ({len(rows)} steps)")
    sys.exit(EXIT_DIFFERENT if differing else EXIT_OK)
