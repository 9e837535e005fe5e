"""`bearagent replay`'s wiring: a scratch store and a runtime over it, opened here (the composition root) and
closed after `service.replay.replay_in` has re-driven the run (docs/replay.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bearagent.app.runtime import open_runtime
from bearagent.runtime.loop import AgentLoop
from bearagent.runtime.plan import LoopHooks
from bearagent.runtime.retry import RetryPolicy
from bearagent.service.replay import EventsOf, RunReplay, replay_in
from bearagent.store.sqlite import SqliteEventStore
from bearagent.workspace import LoadedWorkspace


async def replay_run(loaded: LoadedWorkspace, events_of: EventsOf, run_id: str) -> RunReplay:
    """Replay `run_id` (and its child runs) in `loaded`'s workspace into a scratch store that is removed after."""
    with tempfile.TemporaryDirectory(prefix="bearagent-replay-") as scratch_dir:
        scratch = SqliteEventStore(Path(scratch_dir) / "replay.db")
        runtime = open_runtime(loaded, store=scratch)

        def loops(hooks: LoopHooks) -> AgentLoop:  # unheld, one attempt per model turn: the recorded one
            return AgentLoop(
                store=scratch, clock=runtime.clock, ids=runtime.ids, retry=RetryPolicy(max_attempts=1), hooks=hooks
            )

        try:
            return await replay_in(runtime, scratch, loops, events_of, run_id)
        finally:
            await runtime.aclose()
