"""The synchronous face of the PostgreSQL store (`ports.EventStore` + `ports.SessionStore`, `resolve_run_ref`), for
code outside an event loop (the CLI's read commands, tools, tests) and for the few synchronous reads the runtime
makes. Each call runs on the store's own loop and waits for it (`IoLoop.run`), so it works both from plain code and
from inside a running loop (which it blocks for that one round trip, as the SQLite store's synchronous reads do);
`asyncio.run` could do neither inside a loop. `append_many` runs the runtime's `RunWriter` on the store's loop,
committing inline there.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from bearagent.domain.events import Event
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus, SessionRecord
from bearagent.ports import RunCommit, StoredRun
from bearagent.runtime.run_refs import MATCH_LIMIT, pick_run, run_ref_prefix
from bearagent.runtime.run_writer import RunWriter
from bearagent.store.postgres import run_commit, run_reads, sessions
from bearagent.store.postgres.io_loop import IoLoop
from bearagent.store.postgres.location import Conn, Queries

_T = TypeVar("_T")


class _InlineCommits:
    """The writer's side of the port for a `RunWriter` running on the store's own loop: no hop."""

    def __init__(self, face: SyncFace) -> None:
        self._face = face

    async def load_run(self, run_id: RunId) -> StoredRun | None:
        face = self._face
        return await face._with(lambda conn: run_commit.load_run(conn, face._q, face.path, str(run_id)))  # pyright: ignore[reportPrivateUsage]

    async def commit(self, commit: RunCommit) -> None:
        face = self._face
        await face._with(lambda conn: run_commit.commit(conn, face._q, face.path, commit))  # pyright: ignore[reportPrivateUsage]


class SyncFace:
    path: str
    _q: Queries
    _io: IoLoop

    def __init__(self) -> None:
        self._sync_guard = threading.Lock()
        self._sync_writer: RunWriter | None = None

    @abstractmethod
    async def _with(self, work: Callable[[Conn], Awaitable[_T]], doing: str = ...) -> _T: ...

    @abstractmethod
    def _blocking(self, work: Callable[[Conn], Awaitable[_T]]) -> _T: ...

    # ---- append ----------------------------------------------------------------------------------------------

    def append(self, event: Event) -> RunProjection:
        return self.append_many((event,))

    def append_many(self, events: Sequence[Event]) -> RunProjection:
        """Consecutive events of ONE run in one transaction through the runtime's `RunWriter`: all become facts,
        or none does. Raises what `RunWriter.append_many` raises."""
        with self._sync_guard:
            if self._sync_writer is None:
                self._sync_writer = RunWriter(_InlineCommits(self))
            writer = self._sync_writer
        return self._io.run(writer.append_many(events))

    def _close_sync_writer(self) -> None:
        with self._sync_guard:
            self._sync_writer = None

    # ---- reads -----------------------------------------------------------------------------------------------

    def read_events(self, run_id: RunId, from_sequence: int = 1, *, limit: int | None = None) -> Sequence[Event]:
        """The stored events of a run from `from_sequence` on, in sequence order, exactly as appended."""
        return self._blocking(lambda conn: run_reads.events(conn, self._q, self.path, run_id, from_sequence - 1, limit))

    def get_run(self, run_id: RunId) -> RunProjection | None:
        return self._blocking(lambda conn: run_reads.run(conn, self._q, self.path, run_id))

    def list_runs(
        self,
        *,
        session_id: SessionId | None = None,
        status: RunStatus | None = None,
        parent_run_id: RunId | None = None,
        limit: int = 50,
    ) -> Sequence[RunProjection]:
        """Runs, newest first (by creation), optionally of one session, one status and/or one parent run."""
        return self._blocking(
            lambda conn: run_reads.runs(conn, self._q, self.path, session_id, status, parent_run_id, limit)
        )

    def list_activities(self, run_id: RunId) -> Sequence[ActivityProjection]:
        return self._blocking(lambda conn: run_reads.activities(conn, self._q, self.path, run_id))

    def resolve_run_ref(self, ref: str) -> RunId:
        """A run id from a full id, a unique prefix of one, or `last` (`runtime/run_refs.py`)."""
        prefix = run_ref_prefix(ref)
        found = self._blocking(
            lambda conn: run_reads.find(
                conn, self._q, self.path, prefix or "", prefix is None, 1 if prefix is None else MATCH_LIMIT
            )
        )
        return pick_run(ref, prefix, found, self.path)

    # ---- sessions --------------------------------------------------------------------------------------------

    def create_session(self, session: SessionRecord) -> SessionRecord:
        return self._blocking(lambda conn: sessions.insert(conn, self._q, self.path, session))

    def update_session(self, session: SessionRecord) -> SessionRecord:
        """Replace a stored session's fields (its id must exist)."""
        return self._blocking(lambda conn: sessions.save(conn, self._q, self.path, session))

    def get_session(self, session_id: SessionId) -> SessionRecord | None:
        return self._blocking(lambda conn: sessions.fetch(conn, self._q, self.path, session_id))

    def latest_session(self, *, caller: str | None = None) -> SessionRecord | None:
        """The most recently updated session (of `caller`, when given)."""
        found = self.list_sessions(caller=caller, limit=1)
        return found[0] if found else None

    def list_sessions(self, *, caller: str | None = None, limit: int = 50) -> Sequence[SessionRecord]:
        """Sessions, most recently updated first."""
        return self._blocking(lambda conn: sessions.listing(conn, self._q, self.path, caller, limit))
