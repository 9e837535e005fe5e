"""`bearagent rewind RUN [--to TOOL_CALL] [--dry-run] [--force]`: put the workspace files back as they were before a
run (and the later runs of its session) or before one of its tool calls, from the `FilesChanged` facts
(`rewind/restore.py`). See docs/rewind.md."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from bearagent.cli._config_common import emit_json, fail, json_option, workspace_option

if TYPE_CHECKING:
    from bearagent.ports import WorkspaceStore
    from bearagent.rewind.capture import WorkspaceCapture
    from bearagent.workspace import LoadedWorkspace


@click.command("rewind")
@click.argument("run_ref", metavar="RUN")
@click.option("--to", "to_tool_call", metavar="TOOL_CALL", help="Rewind to the state before this tool call of RUN.")
@click.option("--dry-run", is_flag=True, help="List what would change; change nothing.")
@click.option("--force", is_flag=True, help="Overwrite files changed since by someone else (their content is kept).")
@workspace_option
@json_option
def rewind(
    run_ref: str, to_tool_call: str | None, dry_run: bool, force: bool, workspace: Path | None, as_json: bool
) -> None:
    """Put the workspace files back as they were before RUN (and the later runs of its session) or --to a tool call."""
    import asyncio

    from bearagent.app.resources import writer_over
    from bearagent.cli._config_common import load
    from bearagent.cli.runs import open_recovered, resolve_ref
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.ids import Uuid4IdGenerator
    from bearagent.ports import SystemClock
    from bearagent.rewind.capture import capture_for
    from bearagent.rewind.restore import apply_rewind, plan_rewind
    from bearagent.service.facts import append_outside_loop

    loaded = load(workspace)
    root = loaded.root
    store = open_recovered(workspace)
    run_id = resolve_ref(store, run_ref)
    run = store.get_run(run_id)
    if run is None:
        fail(f"no run {run_ref} in this workspace", "list the runs with `bearagent runs list`")
    later = []
    if run.session_id is not None:
        later = [
            r
            for r in store.list_runs(session_id=run.session_id, limit=10_000)
            if r.run_id != run.run_id and r.created_at >= run.created_at
        ]
        later.sort(key=lambda r: r.created_at)
    runs = [run, *later]
    capture = capture_for(root)
    capture.set_limits(loaded.config.rewind.max_file_bytes, loaded.config.rewind.max_store_bytes)
    pending = capture.pending()
    if pending is not None and dry_run:
        if not as_json:
            click.echo(
                f"warning: tool call {pending.get('tool_call_id')} of run {pending.get('run_id')} stopped before its "
                "file changes were recorded; `bearagent rewind` without --dry-run records them first (or the next "
                "tool call in this workspace does)",
                err=True,
            )
    elif pending is not None:
        _record_late(capture, store, loaded)
    plan = plan_rewind(root, [store.read_events(r.run_id) for r in runs], to_tool_call)
    if not plan.found:
        fail(f"no tool call {to_tool_call} in run {run_id}", f"see its tool calls with `bearagent events {run_ref}`")
    listing = [{"path": s.path, "action": s.action, "changed_since": s.path in plan.conflicts} for s in plan.steps]
    if dry_run or not plan.steps:
        if as_json:
            emit_json({"run_id": str(run_id), "dry_run": dry_run, "changes": listing, "conflicts": plan.conflicts})
            return
        if not plan.steps:
            click.echo("nothing to rewind: the files are as they were")
            return
        for item in listing:
            mark = "  (changed since by someone else)" if item["changed_since"] else ""
            click.echo(f"would {item['action']} {item['path']}{mark}")
        return
    if plan.conflicts and not force:
        fail(
            "rewind stopped: changed since the run by someone else: " + ", ".join(plan.conflicts),
            "look at them, then rerun with --force to overwrite them (their current content is kept in the blob "
            "store and the rewind can itself be rewound)",
        )
    try:
        rewound = apply_rewind(root, plan, capture.blobs, force=force)
    except (ValueError, OSError) as exc:
        fail(f"rewind failed: {exc}", "see docs/rewind.md")
    capture.forget()
    writer = writer_over(loaded, store)
    try:
        target = store.get_run(run_id)
        assert target is not None
        asyncio.run(
            append_outside_loop(writer, SystemClock(), Uuid4IdGenerator(), run_id, target.last_sequence, (rewound,))
        )
    except BearAgentError as exc:
        fail(f"the files were rewound but the rewind could not be recorded: {exc.info.message}", exc.hint)
    if as_json:
        emit_json({"run_id": str(run_id), "dry_run": False, "changes": listing, "forced": list(rewound.forced)})
        return
    for item in listing:
        click.echo(f"{item['action']}d {item['path']}")
    click.echo(f"rewound {len(listing)} path(s)")


def _record_late(capture: WorkspaceCapture, store: WorkspaceStore, loaded: LoadedWorkspace) -> None:
    """The file changes of a call whose process died (kill -9), recorded in its run before the rewind plans: they
    are then rewound like any other. If they cannot be recorded the rewind stops (the marker stays)."""
    import asyncio

    from bearagent.app.resources import writer_over
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.ids import RunId, Uuid4IdGenerator
    from bearagent.ports import SystemClock
    from bearagent.service.facts import append_outside_loop

    late = capture.settle()
    if late is None:
        return
    if late.event.changes:
        try:
            dead = store.get_run(RunId(late.run_id))
            if dead is None:
                raise ValueError(f"run {late.run_id} is not in this workspace's store")
            writer = writer_over(loaded, store)
            asyncio.run(
                append_outside_loop(
                    writer, SystemClock(), Uuid4IdGenerator(), dead.run_id, dead.last_sequence, (late.event,)
                )
            )
        except (BearAgentError, ValueError) as exc:
            capture.forget()
            reason = exc.info.message if isinstance(exc, BearAgentError) else str(exc)
            fail(
                f"tool call {late.event.tool_call_id} of run {late.run_id} stopped before its file changes were "
                f"recorded, and they could not be recorded now: {reason}; nothing was rewound",
                "see docs/rewind.md (a process killed during a call)",
            )
        click.echo(
            f"recorded {len(late.event.changes)} file change(s) of tool call {late.event.tool_call_id} of run "
            f"{late.run_id}, which stopped before recording them",
            err=True,
        )
    capture.settled()
