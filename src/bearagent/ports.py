"""Ports: the protocols the runtime depends on. Adapters (store, providers, tools, hooks, mcp) implement them;
only `app/` knows the concrete classes.

Why it is over 400 lines: it is the one list of protocols the runtime depends on (storage and its commits, sessions
and locks, providers, tools and their context, the interceptors and the asker); a port is read beside the others it
composes with (`WorkspaceStore` = `RunStorage` + `EventStore` + `SessionStore`), and adapters implement them from
this one file.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, TypeAlias, cast, runtime_checkable

from bearagent.domain._base import JsonMapping, JsonValue
from bearagent.domain.events import Event
from bearagent.domain.ids import IdGenerator, RunId, SessionId, ToolCallId, Uuid4IdGenerator
from bearagent.domain.models import ModelEvent, ModelRequest
from bearagent.domain.retention import PruneResult
from bearagent.domain.run_state import ActivityState, RunState
from bearagent.domain.search import RunSearch, RunSearchHit
from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus, SessionRecord, WorkspaceRecord
from bearagent.domain.tools import ToolRequest, ToolResult, ToolSpec


class Clock(Protocol):
    def now(self) -> datetime:
        """Wall-clock time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, for durations."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class EventStore(Protocol):
    """The synchronous face of a store, for code outside an event loop (the CLI's read-only commands, workers,
    tests). The runtime never uses it: it appends through `runtime.run_writer.RunWriter` over `RunStorage`.

    `append` checks that `event.sequence` is the run's last sequence + 1 (optimistic concurrency), runs the
    reducer (state machines and budgets) and commits event and projections together, or nothing.
    """

    def append(self, event: Event) -> RunProjection: ...

    def append_many(self, events: Sequence[Event]) -> RunProjection:
        """Consecutive events of one run in one transaction: all become facts, or none does."""
        ...

    def read_events(self, run_id: RunId, from_sequence: int = 1) -> Sequence[Event]: ...

    def get_run(self, run_id: RunId) -> RunProjection | None: ...

    def list_runs(
        self,
        *,
        session_id: SessionId | None = None,
        status: RunStatus | None = None,
        parent_run_id: RunId | None = None,
        limit: int = 50,
    ) -> Sequence[RunProjection]: ...

    def list_activities(self, run_id: RunId) -> Sequence[ActivityProjection]: ...

    def close(self) -> None: ...


class SessionStore(Protocol):
    """Sessions (one conversation of one caller in one workspace); the runtime's serial run queue keys on them."""

    def create_session(self, session: SessionRecord) -> SessionRecord: ...

    def get_session(self, session_id: SessionId) -> SessionRecord | None: ...

    def update_session(self, session: SessionRecord) -> SessionRecord: ...

    def latest_session(self, *, caller: str | None = None) -> SessionRecord | None: ...

    def list_sessions(self, *, caller: str | None = None, limit: int = 50) -> Sequence[SessionRecord]: ...


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run's reducer state as stored: the run and its active (pending/running) activity. Its version is the
    run's `last_sequence`: a commit names the version it reduced on and fails if the store has moved past it."""

    state: RunState
    active: ActivityState | None

    @property
    def version(self) -> int:
        return self.state.last_sequence


@dataclass(frozen=True, slots=True)
class RunCommit:
    """What one reducer-driven write stores, all or nothing: consecutive `events` of one run, the run's state after
    them (with its active activity), the activities that ended in them (they move out of the run row), and the ids
    of the activities they requested (each must be new to the run)."""

    run_id: RunId
    expected_version: int
    """The stored `last_sequence` the state was reduced on; 0 for a run the store does not hold yet."""
    events: Sequence[Event]
    state: RunState
    active: ActivityState | None
    finished: Sequence[ActivityState] = ()
    requested_activity_ids: Sequence[str] = ()
    payload_texts: Sequence[str | None] = ()
    """The stored JSON text of each event's payload when the writer made it already (the recorder encodes a
    payload once: the same text the store's `dumps_json` gives); empty, or None for one event: the store encodes."""


class CommitRefused(Exception):
    """A commit the store refused without writing anything; the run writer turns it into a domain error."""


class VersionConflict(CommitRefused):
    """The stored run is no longer at `RunCommit.expected_version` (another writer got in first)."""

    def __init__(self, run_id: RunId, stored_version: int) -> None:
        super().__init__(f"run {run_id} is at version {stored_version}")
        self.run_id = run_id
        self.stored_version = stored_version


class ActivityIdTaken(CommitRefused):
    def __init__(self, activity_id: str) -> None:
        super().__init__(f"activity {activity_id} exists")
        self.activity_id = activity_id


class EventIdTaken(CommitRefused):
    def __init__(self, event_id: str) -> None:
        super().__init__(f"event {event_id} exists")
        self.event_id = event_id


class SessionLockPort(Protocol):
    def session_lock(
        self,
        session_id: SessionId,
        *,
        wait: bool = True,
        on_wait: Callable[[], None] | None = None,
        timeout_s: float | None = None,
    ) -> AbstractAsyncContextManager[object]:
        """Held while a run of `session_id` is active: one active run per session, across processes. A second
        holder waits (without blocking the event loop) or, with `wait=False` or after `timeout_s`, gets
        `SessionBusy` (`conflict.session_busy`). A lock dies with the process holding it."""
        ...


class RunCommits(Protocol):
    """What the run writer needs of a store: a run's state and version, and the conditional commit (see
    `RunStorage`, which includes it)."""

    async def load_run(self, run_id: RunId) -> StoredRun | None: ...

    async def commit(self, commit: RunCommit) -> None: ...


@dataclass(frozen=True, slots=True)
class CommitNotice:
    """A run moved in the store (committed by any process): to `last_sequence`, now in `status`."""

    run_id: str
    last_sequence: int
    status: str


class CommitFeed(Protocol):
    """Commit notices from every process sharing a store (PostgreSQL's LISTEN/NOTIFY). Optional: a store that has
    one offers it as its `commits` attribute; without it, readers in other processes poll."""

    def subscribe(self, listener: Callable[[CommitNotice], None], run_id: str | None = None) -> Callable[[], None]:
        """Call `listener` (on the calling event loop) from now on for every lifecycle notice (a run created,
        started or resumed, waiting, interrupted or ended; a cancel request), or, with `run_id`, for every commit of
        that run; returns how to unsubscribe."""
        ...


def commit_feed(storage: object) -> CommitFeed | None:
    """The store's commit notices, where it has them."""
    feed = getattr(storage, "commits", None)
    return feed if feed is not None and callable(getattr(feed, "subscribe", None)) else None  # pyright: ignore[reportReturnType]


def commit_now_of(storage: object) -> Callable[[RunCommit], bool] | None:
    """The store's synchronous commit, where it has one. Optional: a store whose commit can finish without waiting
    (SQLite when no other connection holds the lock) offers `commit_now(commit) -> bool`: True when the commit was
    made on the calling thread, at once; False when nothing was done and the caller must await `commit`. It raises
    what `commit` raises. The writer tries it first, so such a commit costs no task and no turn of the event loop."""
    commit_now = getattr(storage, "commit_now", None)
    return cast("Callable[[RunCommit], bool]", commit_now) if callable(commit_now) else None


class RunStorage(RunCommits, SessionLockPort, Protocol):
    """The async storage port of the run writer (`runtime/run_writer.py`) and of the runtime's reads. No method
    blocks the event loop. Every implementation passes `tests/contract/test_store_contract.py` unchanged.

    The store keeps no rules of its own: the writer reduces (state machines, budgets) and the store commits the
    result if the run is still at the version the writer reduced on."""

    async def load_run(self, run_id: RunId) -> StoredRun | None: ...

    async def commit(self, commit: RunCommit) -> None:
        """Store the commit in one transaction, or nothing: raises `VersionConflict`, `ActivityIdTaken`,
        `EventIdTaken` (nothing written) or a `BearAgentError` of category `storage`."""
        ...

    async def fetch_events(self, run_id: RunId, after_sequence: int = 0, limit: int | None = None) -> Sequence[Event]:
        """The run's events with `sequence > after_sequence`, in sequence order, exactly as committed."""
        ...

    async def fetch_run(self, run_id: RunId) -> RunProjection | None: ...

    async def fetch_run_statuses(self, run_ids: Sequence[RunId]) -> Mapping[RunId, RunStatus]:
        """The status of each of `run_ids` that exists, in one read (a server's per-caller count of open runs);
        an unknown id is left out."""
        ...

    async def fetch_runs(
        self,
        *,
        session_id: SessionId | None = None,
        status: RunStatus | None = None,
        parent_run_id: RunId | None = None,
        limit: int = 50,
        oldest_first: bool = False,
        answered: bool = False,
    ) -> Sequence[RunProjection]:
        """Runs, newest first (by creation); with `oldest_first`, the oldest first (a queue's head). With
        `answered`, only runs whose pending approval has its answer (waiting runs a worker may resume): however many
        unanswered ones wait beside them, the answered ones are what the limit counts."""
        ...

    async def fetch_queue_heads(self, limit: int) -> Sequence[RunProjection]:
        """The queue's lane heads, oldest first, at most `limit`: of each session, its oldest queued top-level run,
        unless a top-level run of the session is running (the lane is busy); every queued top-level run without a
        session (its own lane). A worker's scan reads as many heads as it could take, not every queued run
        (`service/queue.py`)."""
        ...

    async def fetch_activities(self, run_id: RunId) -> Sequence[ActivityProjection]:
        """The run's activities (ended and active) by `requested_sequence`."""
        ...

    async def find_runs(self, prefix: str, *, top_level: bool = False, limit: int = 6) -> Sequence[RunId]:
        """Ids of runs starting with `prefix` (lower-case hex and '-'; '' matches all), newest first; with
        `top_level=True` only runs without a parent run."""
        ...

    async def renew_leases(self, run_ids: Sequence[RunId], at: datetime) -> None:
        """Record a heartbeat at `at` for each run this process executes (the lease of a run is its owner, from
        the log, and its last heartbeat; another process tells a dead owner by it)."""
        ...

    async def fetch_heartbeats(self, run_ids: Sequence[RunId]) -> Mapping[RunId, datetime]:
        """The last heartbeat of each run that has one."""
        ...

    async def request_cancel(self, run_id: RunId, reason: str, at: datetime) -> None:
        """Ask the process executing `run_id` (perhaps on another host) to cancel it: it looks for requests while it
        holds runs (`service/worker.py`) and cancels them there, recording `RunCancelled` with `reason`. Asking again keeps
        the first request."""
        ...

    async def fetch_cancel_requests(self, run_ids: Sequence[RunId]) -> Mapping[RunId, str]:
        """The reason of each of `run_ids` someone asked to cancel."""
        ...

    async def allow_in_session(self, session_id: SessionId, rule: str) -> None:
        """Add a permission rule to the session's "allow always" answers (`SessionRecord.allowed_rules`): once,
        atomically, never lost to a concurrent save of the session."""
        ...

    async def queue_session_facts(self, session_id: SessionId, facts: Sequence[JsonValue]) -> None:
        """Keep facts of a session that happened outside any run (a SessionEnd hook's execution), each as
        `{"event_type", "schema_version", "payload"}`, until the session's next run records them."""
        ...

    async def take_session_facts(self, session_id: SessionId) -> list[JsonValue]:
        """The session's kept facts, oldest first, removed as they are returned (each is taken once)."""
        ...

    async def insert_session(self, session: SessionRecord) -> SessionRecord:
        """Store a new session; `BearAgentError(conflict.session_exists)` if its id is taken."""
        ...

    async def save_session(self, session: SessionRecord) -> SessionRecord:
        """Replace a stored session; `BearAgentError(not_found.session)` if it does not exist."""
        ...

    async def fetch_session(self, session_id: SessionId) -> SessionRecord | None: ...

    async def fetch_sessions(self, *, caller: str | None = None, limit: int = 50) -> Sequence[SessionRecord]:
        """Sessions, most recently updated first."""
        ...

    async def record_workspace(self, record: WorkspaceRecord) -> WorkspaceRecord:
        """Store a workspace record by its key and return it as kept: a stored one keeps its `workspace_id` and
        `created_at`, and its `updated_at` moves only when the content changed (`store/workspace_rows.py`)."""
        ...


class WorkspaceStore(RunStorage, EventStore, SessionStore, Protocol):
    """A store as a workspace opens it (`resources.open_store`): the async port, the synchronous faces for the CLI's
    read commands, run references, and what messages name it by (a file, or a redacted database location).
    Implemented by `store.sqlite.SqliteEventStore` and `store.postgres.PostgresRunStorage`."""

    @property
    def path(self) -> Path | str: ...

    def read_events(self, run_id: RunId, from_sequence: int = 1, *, limit: int | None = None) -> Sequence[Event]: ...

    def resolve_run_ref(self, ref: str) -> RunId:
        """A run id from a full id, a unique prefix of one, or `last`."""
        ...

    def search_runs(self, query: RunSearch) -> list[RunSearchHit]:
        """Runs whose searchable text (`runtime/search_text.py`) holds every word of `query`, newest first."""
        ...

    async def fetch_search(self, query: RunSearch) -> list[RunSearchHit]:
        """`search_runs` for async callers (off the event loop)."""
        ...

    def prune_runs(self, before: datetime, *, dry_run: bool = False) -> PruneResult:
        """Remove finished top-level runs created before `before` with their subagents' runs, except pinned trees
        (`domain/retention.py`), in one transaction; `dry_run`: only report."""
        ...

    def set_pinned(self, run_id: RunId, pinned: bool) -> bool:
        """Pin or unpin a run (pinned runs survive every prune); False when it already was so."""
        ...

    def pinned_runs(self) -> list[RunId]: ...

    def size_bytes(self) -> int:
        """What the store takes: the SQLite file with its WAL, or the PostgreSQL schema's tables and indexes."""
        ...

    def vacuum(self) -> None:
        """Reclaim the space of pruned runs (SQLite: VACUUM, rewriting the file; PostgreSQL: plain VACUUM)."""
        ...


class ModelProvider(Protocol):
    """Turns a `ModelRequest` into a stream of `ModelEvent`s. Raises `BearAgentError` (with `ErrorInfo`) on failure;
    never retries; SDK objects never leave the adapter. Closing the iterator closes the HTTP stream."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool executor may know about the call it serves."""

    workspace_root: Path
    run_id: RunId | None = None
    session_id: SessionId | None = None
    tool_call_id: ToolCallId | None = None
    agent_name: str | None = None
    ids: IdGenerator = field(default_factory=Uuid4IdGenerator)
    settings: Mapping[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    deadline: float | None = None
    """`time.monotonic()` by which the run must end (its wall-time budget), None when unknown. Work a tool cannot
    cancel mid-way (a regex search in a worker thread) bounds itself by it, so it stops when the run does."""
    parallel: bool = False
    """True while the call runs in a batch of read-only calls of one turn: it cannot wait for an approval then
    (the gate raises `ApprovalDeferred` and the call runs again alone, after the batch)."""


class ApprovalDeferred(BaseException):
    """A call of a parallel batch needs an approval: the loop runs it again on its own, where one can be asked.
    A BaseException so no tool or hook wrapper that catches `Exception` swallows it."""


AskAnswer: TypeAlias = Literal["allow_once", "allow_always", "deny"]


@dataclass(frozen=True, slots=True)
class AskRequest:
    """What an interactive asker is shown: the call, why it needs approval, and the rule `allow_always` would add."""

    tool_name: str
    arguments: JsonMapping
    reason: str
    suggested_rule: str | None
    context: ToolContext
    review: bool = False
    """An after-the-fact review of a Bash call's file changes (`sandbox.review`): `allow_always` keeps them like
    `allow_once` and adds no rule (a remembered `Bash` would let later calls run unasked outside the sandbox)."""


Asker: TypeAlias = Callable[[AskRequest], Awaitable[AskAnswer]]


@runtime_checkable
class Tool(Protocol):
    """One executable tool. `prepare` validates and normalises arguments (raising `BearAgentError` with category
    `validation`); `execute` does the work within the spec's limits and returns a `ToolResult`."""

    @property
    def spec(self) -> ToolSpec: ...

    def prepare(self, arguments: JsonMapping, context: ToolContext) -> JsonMapping: ...

    async def execute(self, arguments: JsonMapping, context: ToolContext) -> ToolResult: ...


@dataclass(frozen=True, slots=True)
class PreToolDecision:
    """What the PreToolUse hooks decided about one call. `permission=None` means no hook had an opinion.

    `block=True` (exit code 2 or `decision: block`) refuses the call with `reason` fed back to the model.
    `updated_arguments` replaces the arguments and is re-validated by the tool's `prepare`.
    """

    permission: Literal["allow", "deny", "ask"] | None = None
    reason: str | None = None
    block: bool = False
    updated_arguments: JsonMapping | None = None
    additional_context: str | None = None
    stop_reason: str | None = None
    """Set when a hook answered `continue: false`: the run must stop after this call (shown to the user)."""
    system_message: str | None = None
    """Warnings for the user (hook `systemMessage`s and hook errors); not shown to the model."""


@dataclass(frozen=True, slots=True)
class PostToolDecision:
    """What the PostToolUse / PostToolUseFailure hooks added: context for the model, or a block reason."""

    block_reason: str | None = None
    additional_context: str | None = None
    stop_reason: str | None = None
    """Set when a hook answered `continue: false`: the run must stop (shown to the user)."""
    system_message: str | None = None
    """Warnings for the user (hook `systemMessage`s and hook errors); not shown to the model."""
    updated_output: str | None = None
    """PostToolUse's `updatedToolOutput`: what the model reads instead of the tool's content (the log keeps both)."""


class ToolInterceptor(Protocol):
    """The hook side of the tool gate (implemented by `bearagent.hooks`)."""

    async def before_tool(self, request: ToolRequest, spec: ToolSpec, context: ToolContext) -> PreToolDecision: ...

    async def after_tool(
        self, request: ToolRequest, spec: ToolSpec, result: ToolResult, context: ToolContext
    ) -> PostToolDecision: ...


@dataclass(frozen=True, slots=True)
class PermissionAnswer:
    """What the PermissionRequest hooks answered for a call about to be asked. `behavior=None`: no hook decided,
    the person (or the non-interactive denial) decides as before."""

    behavior: Literal["allow", "deny"] | None = None
    message: str | None = None
    updated_arguments: JsonMapping | None = None
    """`decision.updatedInput` with `allow`: re-validated by the tool's `prepare` and re-checked by the rules."""
    system_message: str | None = None


@runtime_checkable
class PermissionRequestHook(Protocol):
    """An interceptor that can answer a permission prompt before a person sees it (Claude Code's PermissionRequest
    hook event). `suggested_rule` is the rule "allow always" would add."""

    async def permission_request(
        self, request: ToolRequest, spec: ToolSpec, context: ToolContext, suggested_rule: str
    ) -> PermissionAnswer: ...
