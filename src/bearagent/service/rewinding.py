"""Rewinding a session (its files, its conversation, or both) and forking it, for every face: `bearagent rewind`,
`bearagent sessions fork`, `run --fork-session`, `/rewind` in the interactive session and the HTTP routes
`POST /v1/sessions/{id}/rewind` and `/fork`. See docs/rewind.md.

A rewind is prepared from the log (`prepare_rewind`, synchronous reads), the files are put back
(`rewind/restore.py`), then the facts are appended (`record_rewind`): `FilesRewound` in the run the files went back
into, `ConversationRewound` in the session's latest run. A fork is a new session record whose `forked_from` names
the point of its origin's log its history starts from (`runtime/session_history.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import IdGenerator, RunId, ToolCallId
from bearagent.domain.run_events import ConversationRewoundV1, FilesRewoundV1, RunEventPayload
from bearagent.domain.state import TERMINAL_RUN_STATUSES, RunProjection, SessionFork, SessionRecord
from bearagent.ports import Clock, WorkspaceStore
from bearagent.rewind.restore import Plan, apply_rewind, plan_rewind
from bearagent.rewind.tree import BlobStore
from bearagent.runtime.run_writer import RunWriter
from bearagent.service.facts import append_outside_loop
from bearagent.service.sessions import SessionService


@dataclasses.dataclass(frozen=True, slots=True)
class StoreOnly:
    """A `SessionService`'s store holder over an open store (the CLI's)."""

    store: WorkspaceStore


def _error(category: str, code: str, message: str, hint: str) -> BearAgentError:
    return BearAgentError(ErrorInfo.of(category, code, message), hint=hint)  # pyright: ignore[reportArgumentType]


@dataclasses.dataclass(frozen=True, slots=True)
class PreparedRewind:
    """What a rewind will do, read from the log: the files' plan (None: the code is not rewound) and the point the
    conversation goes back to (None: it is not rewound)."""

    run: RunProjection
    """The run the rewind goes back into (before it, or before one of its events)."""
    to_sequence: int | None
    to_tool_call: ToolCallId | None
    plan: Plan | None
    conversation: ConversationRewoundV1 | None
    latest: RunProjection | None
    """The session's latest started run, where the conversation's rewind is recorded."""

    @property
    def listing(self) -> list[dict[str, object]]:
        if self.plan is None:
            return []
        return [
            {"path": s.path, "action": s.action, "changed_since": s.path in self.plan.conflicts}
            for s in self.plan.steps
        ]

    @property
    def conflicts(self) -> tuple[str, ...]:
        return self.plan.conflicts if self.plan is not None else ()

    @property
    def nothing_to_do(self) -> bool:
        return (self.plan is None or not self.plan.steps) and self.conversation is None


def _session_runs(store: WorkspaceStore, run: RunProjection) -> list[RunProjection]:
    """The top-level runs of `run`'s session, oldest first (just `run` when it has no session)."""
    if run.session_id is None:
        return [run]
    runs = [r for r in store.list_runs(session_id=run.session_id, limit=10_000) if r.parent_run_id is None]
    return sorted(runs, key=lambda r: r.created_at)


def _request_sequence(events: Sequence[Event], tool_call: str) -> tuple[int, ToolCallId] | None:
    for event in events:
        if event.event_type == "ToolCallRequested":
            tcid = str(event.payload.get("tool_call_id", ""))
            if tcid == tool_call or (len(tool_call) >= 8 and tcid.startswith(tool_call)):
                return event.sequence, ToolCallId(tcid)
    return None


_FILE_FACTS = frozenset({"FilesChanged", "FilesRewound"})


def _file_facts_since(
    store: WorkspaceStore,
    run: RunProjection,
    events: Sequence[Event],
    to_sequence: int | None,
    session_runs: Sequence[RunProjection],
) -> list[Event]:
    """Every file fact of the session from the point on, in the order they happened: the run's from event
    `to_sequence` (or all of them), and those of the session's other runs recorded since then (a later run's, and
    a rewind recorded afterwards in an earlier run), so a later rewind is itself taken back."""
    own = [e for e in events if to_sequence is None or e.sequence >= to_sequence]
    if not own:
        return []
    since = own[0].occurred_at
    facts = [e for e in own if e.event_type in _FILE_FACTS]
    for other in session_runs:
        if other.run_id != run.run_id and other.last_sequence > 0:
            facts.extend(
                e for e in store.read_events(other.run_id) if e.event_type in _FILE_FACTS and e.occurred_at >= since
            )
    return sorted(facts, key=lambda e: e.occurred_at)


def prepare_rewind(
    store: WorkspaceStore,
    root: Path,
    run: RunProjection,
    *,
    to_tool_call: str | None = None,
    to_sequence: int | None = None,
    code: bool = True,
    conversation: bool = True,
    sessions: SessionService | None = None,
) -> PreparedRewind:
    """Plan a rewind to the state before `run` (or before its tool call `to_tool_call`, or its event
    `to_sequence`): the files from that point on (`code`), the session's conversation (`conversation`; with
    `sessions`, nothing when it already is as it was at that point). Raises
    `BearAgentError` naming what is wrong (no such tool call or event; a run of the session still going; a run
    without a session asked to rewind a conversation)."""
    if run.parent_run_id is not None:
        raise _error(
            "invalid_request",
            "rewind_child_run",
            f"run {run.run_id} is a sub-agent's run; rewind its parent run instead",
            f"rewind run {run.parent_run_id}",
        )
    events = list(store.read_events(run.run_id))
    named_call: ToolCallId | None = None
    if to_tool_call is not None:
        found = _request_sequence(events, to_tool_call)
        if found is None:
            raise _error(
                "not_found",
                "tool_call",
                f"no tool call {to_tool_call} in run {run.run_id}",
                f"see its tool calls with `bearagent events {run.run_id}`",
            )
        to_sequence, named_call = found
    elif to_sequence is not None and not 1 <= to_sequence <= run.last_sequence:
        raise _error(
            "invalid_request",
            "sequence",
            f"run {run.run_id} has no event {to_sequence} (its events are 1 to {run.last_sequence})",
            f"see its events with `bearagent events {run.run_id}`",
        )
    session_runs = _session_runs(store, run)
    # a conversation is rewound only at rest; files also beside an interrupted run (one killed mid-call)
    busy = TERMINAL_RUN_STATUSES if conversation else TERMINAL_RUN_STATUSES | {"interrupted"}
    going = [r for r in session_runs if r.status not in busy]
    if going:
        raise _error(
            "conflict",
            "run_in_progress",
            f"run {going[0].run_id} of this session is {going[0].status}; a rewind needs the session at rest",
            "resume it (`bearagent runs resume`) or cancel it (`bearagent runs cancel`), then rewind; or rewind the "
            "files only (`--code`)"
            if going[0].status == "interrupted"
            else "wait for it to finish, or cancel it (`bearagent runs cancel`), then rewind",
        )
    plan: Plan | None = None
    if code:
        try:
            plan = plan_rewind(root, [_file_facts_since(store, run, events, to_sequence, session_runs)], None)
        except ValueError as exc:
            raise _error("invalid_request", "rewind_path", str(exc), "see docs/rewind.md") from None
    rewound: ConversationRewoundV1 | None = None
    latest: RunProjection | None = None
    if conversation:
        if run.session_id is None:
            raise _error(
                "invalid_request",
                "no_session",
                f"run {run.run_id} belongs to no session: it has no conversation to rewind",
                "rewind its files only (--code)",
            )
        if run.started_at is None:
            raise _error(
                "invalid_request",
                "not_started",
                f"run {run.run_id} never started: the conversation has nothing of it to rewind",
                "rewind to a run that ran",
            )
        started = [r for r in session_runs if r.started_at is not None]
        latest = started[-1]
        rewound = ConversationRewoundV1(to_run_id=run.run_id, to_sequence=to_sequence, to_tool_call_id=named_call)
        if sessions is not None:  # nothing to do when the conversation already is what it was at that point
            timeline = sessions.timeline(run.session_id)
            if timeline.before(run.run_id, to_sequence) == timeline.end:
                rewound = None
    return PreparedRewind(run, to_sequence, named_call, plan, rewound, latest)


def apply_files(prepared: PreparedRewind, root: Path, blobs: BlobStore, *, force: bool) -> FilesRewoundV1 | None:
    """Put the files back (nothing when the code is not rewound or nothing changed). Raises `BearAgentError`
    naming the files changed since by someone else (unless `force`) or not restorable."""
    plan = prepared.plan
    if plan is None or not plan.steps:
        return None
    if plan.conflicts and not force:
        raise _error(
            "conflict",
            "changed_since",
            "rewind stopped: changed since the run by someone else: " + ", ".join(plan.conflicts),
            "look at them, then rewind with force (--force) to overwrite them (their current content is kept in the "
            "blob store and the rewind can itself be rewound)",
        )
    try:
        done = apply_rewind(root, plan, blobs, force=force)
    except (ValueError, OSError) as exc:
        raise _error("invalid_request", "rewind_failed", f"rewind failed: {exc}", "see docs/rewind.md") from None
    return done.model_copy(update={"to_tool_call_id": prepared.to_tool_call})


async def record_rewind(
    store: WorkspaceStore,
    writer: RunWriter,
    clock: Clock,
    ids: IdGenerator,
    prepared: PreparedRewind,
    files: FilesRewoundV1 | None,
) -> None:
    """Append the rewind's facts: `FilesRewound` in the run it went back into, `ConversationRewound` in the
    session's latest run (both in one append when that is the same run). Reads each run's sequence now (the async
    face), so a run that moved on meanwhile refuses the facts."""
    by_run: dict[RunId, list[RunEventPayload]] = {}
    if files is not None:
        by_run.setdefault(prepared.run.run_id, []).append(files)
    if prepared.conversation is not None and prepared.latest is not None:
        by_run.setdefault(prepared.latest.run_id, []).append(prepared.conversation)
    for run_id, payloads in by_run.items():
        current = await store.fetch_run(run_id)
        if current is None:
            raise _error("not_found", "run", f"run {run_id} is gone", "list the runs with `bearagent runs list`")
        await append_outside_loop(writer, clock, ids, run_id, current.last_sequence, payloads)


# ---- fork ------------------------------------------------------------------------------------------------------


def fork_point(
    store: WorkspaceStore, source: SessionRecord, at_run: RunProjection | None, at_sequence: int | None
) -> SessionFork:
    """The point of `source`'s log a fork starts from: through event `at_sequence` of `at_run`, the whole of
    `at_run`, or (both None) the session's conversation now (through its latest started run)."""
    if at_run is None:
        started = [
            r
            for r in store.list_runs(session_id=source.session_id, limit=10_000)
            if r.parent_run_id is None and r.started_at is not None
        ]
        if not started:
            raise _error(
                "invalid_request",
                "empty_session",
                f"session {source.session_id} has no run yet: there is nothing to fork",
                "start a new session instead",
            )
        at_run = max(started, key=lambda r: r.created_at)
    if at_run.session_id != source.session_id or at_run.parent_run_id is not None:
        raise _error(
            "invalid_request",
            "fork_point",
            f"run {at_run.run_id} is not a top-level run of session {source.session_id}",
            f"list the session's runs with `bearagent runs list --session {source.session_id}`",
        )
    if at_run.started_at is None:
        raise _error(
            "invalid_request",
            "fork_point",
            f"run {at_run.run_id} never started: there is nothing of it to fork",
            "fork at a run that ran",
        )
    if at_sequence is not None and not 1 <= at_sequence <= at_run.last_sequence:
        raise _error(
            "invalid_request",
            "sequence",
            f"run {at_run.run_id} has no event {at_sequence} (its events are 1 to {at_run.last_sequence})",
            f"see its events with `bearagent events {at_run.run_id}`",
        )
    return SessionFork(session_id=source.session_id, run_id=at_run.run_id, sequence=at_sequence)


def fork_record(sessions: SessionService, source: SessionRecord, point: SessionFork, *, caller: str) -> SessionRecord:
    """The new session (not stored yet): the origin's agent, a title naming the origin, `forked_from` the point."""
    title = f"fork of {source.title or source.session_id}"[:512]
    record = sessions.new_record(source.agent_name, caller=caller, title=title)
    return record.model_copy(
        update={"forked_from": point, "active_agent_name": source.active_agent_name or record.active_agent_name}
    )


def files_at_fork(store: WorkspaceStore, root: Path, point: SessionFork) -> PreparedRewind | None:
    """The files' rewind that brings the workspace back to the fork point (the changes after it in the origin
    session), or None when nothing came after it."""
    run = store.get_run(point.run_id)
    if run is None:
        return None
    if point.sequence is not None and point.sequence < run.last_sequence:
        return prepare_rewind(store, root, run, to_sequence=point.sequence + 1, conversation=False)
    later = [r for r in _session_runs(store, run) if r.created_at > run.created_at]
    if not later:
        return None
    return prepare_rewind(store, root, later[0], conversation=False)
