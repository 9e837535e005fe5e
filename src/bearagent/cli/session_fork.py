"""`bearagent sessions fork SESSION [--at RUN[:SEQUENCE]] [--restore-files] [--force]` and `bearagent run
--fork-session SESSION`: a new session whose history is SESSION's log up to that point (`service/rewinding.py`,
`runtime/session_history.py`), the files optionally put back to that point. See docs/rewind.md."""

from __future__ import annotations

from pathlib import Path

import click

from bearagent.cli._config_common import emit_json, fail, json_option, workspace_option
from bearagent.domain.state import SessionRecord
from bearagent.ports import WorkspaceStore
from bearagent.workspace import LoadedWorkspace


def resolve_session(store: WorkspaceStore, ref: str) -> SessionRecord:
    """A session by its id or a unique prefix of 8+ characters; `fail` naming the fix otherwise."""
    from bearagent.domain.ids import SessionId

    try:
        found = store.get_session(SessionId(ref))
    except (ValueError, TypeError):
        found = None
    if found is not None:
        return found
    if len(ref) >= 8:
        matches = [s for s in store.list_sessions(limit=10_000) if str(s.session_id).startswith(ref.lower())]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            fail(f"session {ref} is ambiguous ({len(matches)} sessions start with it)", "give more characters")
    fail(f"no session {ref} in this workspace", "list the sessions with `bearagent sessions list`")


def fork(
    loaded: LoadedWorkspace,
    store: WorkspaceStore,
    source_ref: str,
    at: str | None,
    *,
    restore_files: bool,
    force: bool,
) -> tuple[SessionRecord, list[dict[str, object]]]:
    """Record the fork (and put the files back first, with `restore_files`): the new session and the paths the
    restore changed. Exits through `fail` on any refusal, before anything is written."""
    import asyncio

    from bearagent.app.stores import writer_over
    from bearagent.cli.runs import resolve_ref
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.ids import Uuid4IdGenerator
    from bearagent.ports import SystemClock
    from bearagent.rewind.capture import capture_for
    from bearagent.service.rewinding import (
        StoreOnly,
        apply_files,
        files_at_fork,
        fork_point,
        fork_record,
        record_rewind,
    )
    from bearagent.service.sessions import SessionService

    source = resolve_session(store, source_ref)
    at_run = None
    at_sequence: int | None = None
    if at is not None:
        run_ref, _, sequence = at.partition(":")
        if sequence:
            if not sequence.isdigit():
                fail(f"--at {at}: the event is a sequence number (RUN:7)", "see the events with `bearagent events RUN`")
            at_sequence = int(sequence)
        at_run = store.get_run(resolve_ref(store, run_ref))
        if at_run is None:
            fail(f"no run {run_ref} in this workspace", "list the runs with `bearagent runs list`")
    clock, ids = SystemClock(), Uuid4IdGenerator()
    sessions = SessionService(loaded, StoreOnly(store), clock, ids)
    listing: list[dict[str, object]] = []
    try:
        point = fork_point(store, source, at_run, at_sequence)
        record = fork_record(sessions, source, point, caller="local")
        if restore_files:
            capture = capture_for(loaded.root)
            prepared = files_at_fork(store, loaded.root, point)
            if prepared is not None:
                rewound = apply_files(prepared, loaded.root, capture.blobs, force=force)
                listing = prepared.listing
                if rewound is not None:
                    capture.forget()
                    asyncio.run(record_rewind(store, writer_over(loaded, store), clock, ids, prepared, rewound))
        created = store.create_session(record)
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)
    return created, listing


@click.command("fork")
@click.argument("session_ref", metavar="SESSION")
@click.option(
    "--at",
    "at",
    metavar="RUN[:SEQUENCE]",
    default=None,
    help="Fork after this run of SESSION (or after its event SEQUENCE); default: the conversation as it is now.",
)
@click.option("--restore-files", is_flag=True, help="Also put the workspace files back as they were at that point.")
@click.option("--force", is_flag=True, help="With --restore-files: overwrite files changed since by someone else.")
@workspace_option
@json_option
def fork_command(
    session_ref: str, at: str | None, restore_files: bool, force: bool, workspace: Path | None, as_json: bool
) -> None:
    """A new session whose history is SESSION's conversation up to a point; continue it with `bearagent --session
    ID` or `bearagent run --session ID "..."`."""
    from bearagent.cli._config_common import load
    from bearagent.cli.runs import open_recovered

    loaded = load(workspace)
    store = open_recovered(workspace)
    created, listing = fork(loaded, store, session_ref, at, restore_files=restore_files, force=force)
    point = created.forked_from
    assert point is not None
    if as_json:
        emit_json(
            {
                "session_id": str(created.session_id),
                "forked_from": point.model_dump(mode="json"),
                "restored": listing,
            }
        )
        return
    for item in listing:
        click.echo(f"{item['action']}d {item['path']}")
    where = f"run {point.run_id}" if point.sequence is None else f"event {point.sequence} of run {point.run_id}"
    click.echo(f"forked session {point.session_id} after {where}: new session {created.session_id}")
    click.echo(f'continue it with `bearagent --session {created.session_id}` or `bearagent run --session ... "..."`')
