"""A run cancelled while its first facts are being committed still ends with RunCancelled: the commit finishes
(it is a fact), the cancellation comes after it, and the log never shows a run `running` forever."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.runtime import scripted_plan

from bearagent.domain._base import JsonMapping
from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.ids import Uuid4IdGenerator
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import RunCommit, SystemClock, ToolContext
from bearagent.runtime.loop import AgentLoop
from bearagent.runtime.plan import RunSpec
from bearagent.store.sqlite import SqliteEventStore
from bearagent.tools.kit import BaseTool


class Echo(BaseTool):
    """A read-only tool that answers at once, without suspending."""

    def __init__(self) -> None:
        super().__init__(
            ToolSpec(
                name="Echo",
                description="Answers at once.",
                input_schema={"type": "object", "properties": {}},
                side_effect="read_only",
            )
        )

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return self.ok(context, "echo")


class CancelOnCommit(SqliteEventStore):
    """Cancels the running task while the commit of `event_type` is under way (the race a Ctrl-C can hit)."""

    def __init__(self, path: Path, event_type: str) -> None:
        super().__init__(path)
        self.event_type = event_type
        self.task: asyncio.Task[object] | None = None

    def _watched(self, commit: RunCommit) -> bool:
        return self.task is not None and any(e.event_type == self.event_type for e in commit.events)

    def commit_now(self, commit: RunCommit) -> bool:
        # the watched commit goes the awaited way, where a cancellation can meet it
        return False if self._watched(commit) else super().commit_now(commit)

    async def commit(self, commit: RunCommit) -> None:
        if self.task is not None and self._watched(commit):
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


def test_a_run_whose_model_tools_and_store_answer_at_once_still_lets_the_loop_turn(tmp_path: Path) -> None:
    """Commits made at once (`commit_now`), a scripted model without delays and a tool that answers at once never
    suspend: the loop gives the event loop a turn per step anyway, so other tasks run and a cancel gets in."""
    turns = "".join("  - tool_calls: [{name: Echo, arguments: {}}]\n" for _ in range(30))
    plan = scripted_plan(tmp_path, "turns:\n" + turns + "  - text: done\n", tool_names=(), extra_tools=[Echo()])
    store = SqliteEventStore(tmp_path / "state.db")
    loop = AgentLoop(store=store, clock=SystemClock(), ids=Uuid4IdGenerator())
    spec = RunSpec(goal="go", workspace_root=tmp_path, budgets=BudgetLimits())

    async def main() -> tuple[int, str]:
        ticks = 0
        done = False

        async def ticker() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        ticking = asyncio.ensure_future(ticker())
        outcome = await loop.run(spec, plan)
        done = True
        await ticking
        return ticks, outcome.status

    ticks, status = asyncio.run(main())
    assert status == "succeeded"
    assert ticks >= 31  # at least once per step

    async def cancelled_mid_run() -> int:
        task = asyncio.ensure_future(loop.run(spec, plan))
        for _ in range(10):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return len(store.list_runs(limit=5))

    plan = scripted_plan(tmp_path, "turns:\n" + turns + "  - text: done\n", tool_names=(), extra_tools=[Echo()])
    assert asyncio.run(cancelled_mid_run()) == 2
    runs = store.list_runs(limit=5)
    cancelled = [r for r in runs if r.status == "cancelled"]
    assert len(cancelled) == 1
    events = store.read_events(cancelled[0].run_id)
    assert events[-1].event_type == "RunCancelled"
    assert sum(e.event_type == "ToolCallCompleted" for e in events) < 30  # it stopped mid-run
    store.close()
