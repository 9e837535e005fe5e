"""What a worker remembers of the lanes it took, from one scan to the next (`worker.py`, issue 37).

- **Whose run it is.** A queued run executes as its session's caller, else the subject that started it, else the
  local user. A session's caller never changes, so it is read once per session (at most `CALLERS_KEPT` sessions
  kept): a claim, won or lost, then reads nothing before it tries the session's lock.
- **The lanes it served.** The lanes this worker executed a run of lately (at most `SERVED_KEPT`, the latest kept):
  it holds their sessions' state already (the provider, the plan's caches), so of the lane heads in its window it
  tries those first, and a fleet's workers keep to their sessions instead of each building every session's state.
"""

from __future__ import annotations

from bearagent.domain.recent import remember
from bearagent.ports import WorkspaceStore
from bearagent.service.queue import Pending

SERVED_KEPT = 1_000
"""How many lanes a worker remembers having executed a run of, the latest kept."""
CALLERS_KEPT = 10_000
"""How many sessions' callers a worker remembers, the latest read kept."""

Lane = tuple[str, str]
"""(workspace id, lane): a session's id, or `run:<id>` for a run without one (`Pending.lane`)."""


class LaneMemory:
    def __init__(self) -> None:
        self._callers: dict[tuple[str, str], str] = {}  # (workspace id, session id) -> the session's caller
        self._served: dict[Lane, None] = {}  # the latest last

    async def subject_of(self, workspace_id: str, store: WorkspaceStore, item: Pending) -> str:
        """Whose run it is: its session's caller, else the subject that started it, else the local user."""
        run = item.run
        if run.session_id is not None:
            key = (workspace_id, str(run.session_id))
            known = self._callers.get(key)
            if known is not None:
                return known
            session = await store.fetch_session(run.session_id)
            if session is not None and session.caller:
                return remember(self._callers, key, session.caller, CALLERS_KEPT)
        if run.request is not None and run.request.initiator_ref:
            return run.request.initiator_ref
        return "local"

    def served(self, lane: Lane) -> None:
        """This worker executed a run of `lane`."""
        remember(self._served, lane, None, SERVED_KEPT)

    def served_first(self, workspace_id: str, heads: list[Pending]) -> None:
        """Order `heads` (in place, stably): the lanes this worker served first, the others after them."""
        heads.sort(key=lambda item: (workspace_id, item.lane) not in self._served)
