"""`bearagent runs pin`, `unpin` and `cancel`: the commands that change a stored run's state rather than read it.

`cancel` calls `service/cancelling.py`, which owns what a cancel does in each state; this module parses and says
what happened."""

from __future__ import annotations

from pathlib import Path

import click

from bearagent.cli._config_common import EXIT_CONFIG, fail, workspace_option
from bearagent.cli.runs import open_recovered, recovered_store, resolve_ref


@click.command("pin")
@click.argument("run_ref", metavar="RUN")
@workspace_option
def pin(run_ref: str, workspace: Path | None) -> None:
    """Keep RUN (and its subagents' runs) through every `bearagent db prune`."""
    _set_pin(run_ref, workspace, pinned=True)


@click.command("unpin")
@click.argument("run_ref", metavar="RUN")
@workspace_option
def unpin(run_ref: str, workspace: Path | None) -> None:
    """Let `bearagent db prune` remove RUN again once it is old enough."""
    _set_pin(run_ref, workspace, pinned=False)


def _set_pin(run_ref: str, workspace: Path | None, *, pinned: bool) -> None:
    from bearagent.domain.errors import BearAgentError

    store = open_recovered(workspace)
    run_id = resolve_ref(store, run_ref)
    try:
        changed = store.set_pinned(run_id, pinned)
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)
    state = "pinned" if pinned else "not pinned"
    click.echo(f"run {run_id} is {state}" + ("" if changed else " (it already was)"))


@click.command("cancel")
@click.argument("run_ref", metavar="RUN")
@workspace_option
@click.option(
    "--wait",
    "wait_s",
    type=click.FloatRange(0, 600),
    default=10.0,
    show_default=True,
    help="A running run: seconds to wait for the process that executes it to stop it.",
)
def cancel(run_ref: str, workspace: Path | None, wait_s: float) -> None:
    """Cancel RUN: queued, waiting for an answer or interrupted, it ends cancelled at once; running, the worker that
    executes it (serve, worker) is asked to stop it.

    RUN is a full run id, a unique prefix of one, or `last`. A run that a terminal's `bearagent run` or session
    executes is stopped there (Ctrl-C); once that process is gone the run is interrupted, and this cancels it.
    """
    import asyncio

    from bearagent.app.stores import writer_over
    from bearagent.cli._config_common import load
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.ids import Uuid4IdGenerator
    from bearagent.ports import SystemClock
    from bearagent.service.cancelling import cancel_from_outside
    from bearagent.service.run_types import local_user_name

    loaded = load(workspace)
    store = recovered_store(loaded)
    run_id = resolve_ref(store, run_ref)
    writer = writer_over(loaded, store)
    reason = f"cancelled by {local_user_name()} with `bearagent runs cancel`"
    try:
        outcome = asyncio.run(
            cancel_from_outside(store, writer, SystemClock(), Uuid4IdGenerator(), run_id, reason, wait_s=wait_s)
        )
    except BearAgentError as exc:  # a run that ended is no usage error: 1, as for a cancel that did not happen
        fail(exc.info.message, exc.hint, 1 if exc.info.code == "conflict.run_ended" else EXIT_CONFIG)
    status = outcome.run.status
    if not outcome.asked:
        click.echo(f"run {run_id} cancelled (it was {outcome.was})")
        return
    if status == "cancelled":
        click.echo(f"run {run_id} cancelled by the process that executed it")
        return
    if status != "running":
        fail(f"run {run_id} ended {status} before it could be cancelled", "nothing to cancel", 1)
    fail(
        f"run {run_id} is still running after {wait_s:g} s: the request to cancel it is recorded, which a "
        "worker (bearagent serve, bearagent worker) acts on, but the process that executes it did not stop it",
        "if a terminal's `bearagent run` or session executes it, stop it there (Ctrl-C); once that process is gone "
        "the run is interrupted and `bearagent runs cancel` ends it",
        1,
    )
