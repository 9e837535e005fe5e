"""`bearagent rewind RUN [--to TOOL_CALL | --to-event SEQUENCE] [--code] [--conversation] [--dry-run] [--force]`: put the workspace files
back as they were before a run (and the later runs of its session) or before one of its tool calls, from the
`FilesChanged` facts (`rewind/restore.py`), and set the session's conversation back to that point
(`ConversationRewound`, `runtime/session_history.py`); both by default. See docs/rewind.md."""

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
@click.option(
    "--to-event",
    "to_event",
    type=click.IntRange(min=1),
    metavar="SEQUENCE",
    default=None,
    help="Rewind to the state before this event of RUN (its sequence in `bearagent events RUN`), e.g. before a "
    "rewind, to undo it.",
)
@click.option("--code", is_flag=True, help="Rewind the files only (with --conversation: both, the default).")
@click.option(
    "--conversation", is_flag=True, help="Rewind the session's conversation only (with --code: both, the default)."
)
@click.option("--dry-run", is_flag=True, help="List what would change; change nothing.")
@click.option("--force", is_flag=True, help="Overwrite files changed since by someone else (their content is kept).")
@workspace_option
@json_option
def rewind(
    run_ref: str,
    to_tool_call: str | None,
    to_event: int | None,
    code: bool,
    conversation: bool,
    dry_run: bool,
    force: bool,
    workspace: Path | None,
    as_json: bool,
) -> None:
    """Put the workspace files and the session's conversation back as they were before RUN (and the later runs of
    its session) or --to a tool call of it."""
    import asyncio

    from bearagent.app.stores import writer_over
    from bearagent.cli._config_common import load
    from bearagent.cli.runs import recovered_store, resolve_ref
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.ids import Uuid4IdGenerator
    from bearagent.ports import SystemClock
    from bearagent.rewind.capture import capture_for
    from bearagent.service.rewinding import StoreOnly, apply_files, prepare_rewind, record_rewind
    from bearagent.service.sessions import SessionService

    if to_tool_call is not None and to_event is not None:
        fail("--to and --to-event exclude each other", "name the point once: a tool call, or an event's sequence")
    loaded = load(workspace)
    root = loaded.root
    store = recovered_store(loaded)
    run_id = resolve_ref(store, run_ref)
    run = store.get_run(run_id)
    if run is None:
        fail(f"no run {run_ref} in this workspace", "list the runs with `bearagent runs list`")
    if not code and not conversation:  # both, as far as the run has them (a run without a session: its files)
        code, conversation = True, run.session_id is not None
    capture = capture_for(root)
    capture.set_limits(loaded.config.rewind.max_file_bytes, loaded.config.rewind.max_store_bytes)
    pending = capture.pending()
    if pending is not None and code and dry_run:
        if not as_json:
            click.echo(
                f"warning: tool call {pending.get('tool_call_id')} of run {pending.get('run_id')} stopped before its "
                "file changes were recorded; `bearagent rewind` without --dry-run records them first (or the next "
                "tool call in this workspace does)",
                err=True,
            )
    elif pending is not None and code:
        _record_late(capture, store, loaded)

    clock, ids = SystemClock(), Uuid4IdGenerator()
    sessions = SessionService(loaded, StoreOnly(store), clock, ids)
    try:
        prepared = prepare_rewind(
            store,
            root,
            run,
            to_tool_call=to_tool_call,
            to_sequence=to_event,
            code=code,
            conversation=conversation,
            sessions=sessions,
        )
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)
    listing = prepared.listing
    to_conversation = (
        None
        if prepared.conversation is None
        else {"run_id": str(run_id), "sequence": prepared.conversation.to_sequence}
    )
    if dry_run or prepared.nothing_to_do:
        if as_json:
            emit_json(
                {
                    "run_id": str(run_id),
                    "dry_run": dry_run,
                    "changes": listing,
                    "conflicts": list(prepared.conflicts),
                    "conversation": to_conversation,
                }
            )
            return
        if prepared.nothing_to_do:
            click.echo("nothing to rewind: the files and the conversation are as they were")
            return
        for item in listing:
            mark = "  (changed since by someone else)" if item["changed_since"] else ""
            click.echo(f"would {item['action']} {item['path']}{mark}")
        if prepared.conversation is not None:
            click.echo(f"would rewind the conversation to before {_point(prepared.conversation.to_sequence, run_id)}")
        return
    try:
        rewound = apply_files(prepared, root, capture.blobs, force=force)
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)
    if rewound is not None:
        capture.forget()
    writer = writer_over(loaded, store)
    try:
        asyncio.run(record_rewind(store, writer, clock, ids, prepared, rewound))
    except BearAgentError as exc:
        fail(f"the rewind could not be recorded: {exc.info.message}", exc.hint)
    if as_json:
        emit_json(
            {
                "run_id": str(run_id),
                "dry_run": False,
                "changes": listing,
                "forced": list(rewound.forced) if rewound is not None else [],
                "conversation": to_conversation,
            }
        )
        return
    for item in listing:
        click.echo(f"{item['action']}d {item['path']}")
    if listing:
        click.echo(f"rewound {len(listing)} path(s)")
    if prepared.conversation is not None:
        click.echo(
            f"rewound the conversation to before {_point(prepared.conversation.to_sequence, run_id)}: the "
            "session's next run continues from there"
        )


def _point(sequence: int | None, run_id: object) -> str:
    return f"run {run_id}" if sequence is None else f"event {sequence} of run {run_id}"


def _record_late(capture: WorkspaceCapture, store: WorkspaceStore, loaded: LoadedWorkspace) -> None:
    """The file changes of a call whose process died (kill -9), recorded in its run before the rewind plans: they
    are then rewound like any other. If they cannot be recorded the rewind stops (the marker stays)."""
    import asyncio

    from bearagent.app.stores import writer_over
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
