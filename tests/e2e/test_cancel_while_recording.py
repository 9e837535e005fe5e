"""A run cancelled while its first facts are being committed still ends with RunCancelled: the commit finishes
(it is a fact), the cancellation comes after it, and the log never shows a run `running` forever."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.runtime import scripted_plan

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.ids import Uuid4IdGenerator
from bearagent.ports import RunCommit, SystemClock
from bearagent.runtime.loop import AgentLoop
from bearagent.runtime.plan import RunSpec
from bearagent.store.sqlite import SqliteEventStore


class CancelOnCommit(SqliteEventStore):
    """Cancels the running task while the commit of `event_type` is under way (the race a Ctrl-C can hit)."""

    def __init__(self, path: Path, event_type: str) -> None:
        super().__init__(path)
        self.event_type = event_type
        self.task: asyncio.Task[object] | None = None

    async def commit(self, commit: RunCommit) -> None:
        if self.task is not None and any(e.event_type == self.event_type for e in commit.events):
            self.task.cancel()
            self.task = None
        await super().commit(commit)


@pytest.mark.parametrize("event_type", ["RunCreated", "RunStarted"])
def test_a_cancel_during_the_first_commits_is_recorded(tmp_path: Path, event_type: str) -> None:
    store = CancelOnCommit(tmp_path / "state.db", event_type)
    plan = scripted_plan(tmp_path, "turns:\n  - text: hi\n")
    loop = AgentLoop(store=store, clock=SystemClock(), ids=Uuid4IdGenerator())
    spec = RunSpec(goal="go", workspace_root=tmp_path, budgets=BudgetLimits())

    async def main() -> None:
        task = asyncio.ensure_future(loop.run(spec, plan))
        store.task = task  # pyright: ignore[reportAttributeAccessIssue]
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    runs = store.list_runs(limit=5)
    assert len(runs) == 1 and runs[0].status == "cancelled"
    assert [e.event_type for e in store.read_events(runs[0].run_id)][-1] == "RunCancelled"
    store.close()
