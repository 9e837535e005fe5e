"""Sessions in one workspace, for any caller: create one and choose its agent (the one owner: `new_record`, for
the CLI, the Python API, HTTP and A2A), resolve a reference (new, `continue`, an id), rebuild a session's history
from its runs' events, and keep its hook transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from bearagent.domain._base import JsonObject
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import IdGenerator, RunId, SessionId
from bearagent.domain.messages import Message
from bearagent.domain.state import SessionRecord
from bearagent.hooks.transcript import TranscriptWriter
from bearagent.ports import Clock, WorkspaceStore
from bearagent.runtime.session_history import SourcedMessage, Timeline
from bearagent.workspace import LoadedWorkspace

MAX_FORK_DEPTH = 50
"""How many forks deep a session's origin may be followed (a fork of a fork of ...)."""


class StoreHolder(Protocol):
    """Where the session service finds the workspace's store (`app.resources.Resources`, opened on first use)."""

    @property
    def store(self) -> WorkspaceStore: ...


def session_key(session_id: SessionId | None, run_id: RunId) -> str:
    """The key a run's providers (one per session and model entry) and hook transcript are kept under: its
    session's id, or `detached:{run_id}` for a run without a session; the same when the run starts and when it is
    resumed, so a resumed detached run keeps its provider and transcript."""
    return str(session_id) if session_id is not None else f"detached:{run_id}"


class SessionService:
    def __init__(self, loaded: LoadedWorkspace, resources: StoreHolder, clock: Clock, ids: IdGenerator) -> None:
        self.loaded = loaded
        self._resources = resources
        self.clock = clock
        self.ids = ids
        self._transcripts: dict[str, TranscriptWriter] = {}

    @property
    def root(self) -> Path:
        return self.loaded.root

    def new_record(
        self, agent: str | None, *, caller: str, title: str | None = None, auth_context: JsonObject | None = None
    ) -> SessionRecord:
        """A new session of `caller` (not stored yet) and the agent it starts with: `agent`, else the workspace's
        `default_agent`; an unknown agent is refused here (`AgentRegistry.require`), before anything is written."""
        name = agent or self.loaded.config.default_agent
        self.loaded.agents.require(name)
        now = self.clock.now()
        return SessionRecord(
            session_id=self.ids.new(SessionId),
            created_at=now,
            updated_at=now,
            agent_name=name,
            active_agent_name=name,
            title=title,
            caller=caller,
            auth_context=auth_context,
        )

    async def create(
        self, agent: str | None, *, caller: str, title: str | None = None, auth_context: JsonObject | None = None
    ) -> SessionRecord:
        """Record a new session (`new_record`) through the async store: the HTTP route and A2A's new context."""
        record = self.new_record(agent, caller=caller, title=title, auth_context=auth_context)
        return await self._resources.store.insert_session(record)

    def resolve_session(self, ref: str | None, agent: str, caller: str = "local") -> tuple[SessionRecord, bool]:
        """(session, created). `None` = a new session of `caller`, `continue` = `caller`'s latest in this workspace,
        else an id."""
        if ref is None:
            return self._resources.store.create_session(self.new_record(agent, caller=caller)), True
        if ref == "continue":
            latest = self._resources.store.latest_session(caller=caller)
            if latest is None:
                return self.resolve_session(None, agent, caller)
            return latest, False
        try:
            session_id = SessionId(ref)
        except (ValueError, TypeError):
            raise BearAgentError(
                ErrorInfo.of("invalid_request", "bad_session_id", f"--session {ref!r} is not a session id"),
                hint="copy a session id from `bearagent runs list --json`, or use --continue",
            ) from None
        found = self._resources.store.get_session(session_id)
        if found is None:
            raise BearAgentError(
                ErrorInfo.of("not_found", "session", f"session {ref} does not exist in this workspace"),
                hint="start a new session (omit --session) or use --continue for the latest one",
            )
        return found, False

    def session_history(self, session_id: SessionId, *, before: RunId | None = None) -> list[Message]:
        """The conversation of the session's runs that started (a queued run, or one cancelled before it started,
        said nothing yet), oldest first, with its rewinds applied and, for a forked session, its origin's
        conversation first (`runtime/session_history.py`); with `before`, only of the runs recorded before that
        one."""
        return self.timeline(session_id, before=before).end

    def timeline(self, session_id: SessionId, *, before: RunId | None = None, until: RunId | None = None) -> Timeline:
        """The session's conversation at every point of its log (`Timeline`): its started top-level runs, oldest
        first (`before`: only those recorded before that run; `until`: up to and including that run)."""
        return self._timeline(session_id, before, until, depth=0)

    def _timeline(self, session_id: SessionId, before: RunId | None, until: RunId | None, depth: int) -> Timeline:
        store = self._resources.store
        base: list[Message] = []
        base_messages: list[SourcedMessage] = []
        session = store.get_session(session_id)
        fork = session.forked_from if session is not None else None
        if fork is not None:
            if depth >= MAX_FORK_DEPTH:
                raise BearAgentError(
                    ErrorInfo.of(
                        "invalid_request",
                        "fork_depth",
                        f"session {session_id} is a fork more than {MAX_FORK_DEPTH} forks deep",
                    ),
                    hint="fork the session's origin instead, or start a new session",
                )
            origin = self._timeline(fork.session_id, None, fork.run_id, depth + 1)
            base = origin.through(fork.run_id, fork.sequence) or []
            base_messages = origin.messages_through(fork.run_id, fork.sequence) or []
        runs = [r for r in store.list_runs(session_id=session_id, limit=10_000) if r.parent_run_id is None]  # newest
        if before is not None:
            at = next((i for i, r in enumerate(runs) if r.run_id == before), None)
            runs = runs[at + 1 :] if at is not None else runs
        if until is not None:
            at = next((i for i, r in enumerate(runs) if r.run_id == until), None)
            runs = runs[at:] if at is not None else runs
        runs = [r for r in reversed(runs) if r.started_at is not None]  # oldest first
        return Timeline([(r.run_id, store.read_events(r.run_id)) for r in runs], base, base_messages)

    def transcript(self, session_id: str) -> TranscriptWriter:
        writer = self._transcripts.get(session_id)
        if writer is None:
            writer = TranscriptWriter.for_session(self.loaded.state_dir, session_id, cwd=self.root)
            self._transcripts[session_id] = writer
        return writer
