"""The bounded wait for an answer to an MCP server's question (`service/elicitations.logged_asker`): nobody answers,
BearAgent declines once the wait is over and records it as answered by `nobody`; an answer that another process
appends meanwhile is what the server gets. The product waits 15 minutes (`DEFAULT_WAIT_S`); these tests wait a
fraction of a second through the same code, on a real SQLite store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from tests.support.events import EventFactory

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.ids import DeterministicIdGenerator, RunId, Uuid4IdGenerator
from bearagent.domain.run_events import ElicitationResolvedV1
from bearagent.mcp.elicitation import ElicitationAnswer, ElicitationQuestion
from bearagent.ports import SystemClock, ToolContext
from bearagent.runtime.observer import NullObserver
from bearagent.runtime.plan import RunSpec
from bearagent.runtime.recorder import RunRecorder
from bearagent.runtime.run_context import CurrentRun, current_run
from bearagent.runtime.run_writer import RunWriter
from bearagent.service.elicitations import DEFAULT_WAIT_S, logged_asker
from bearagent.service.facts import append_outside_loop
from bearagent.store.sqlite import SqliteEventStore

QUESTION = ElicitationQuestion(
    server="asker", message="Really deploy to staging?", mode="form", requested_schema={"type": "object"}
)


class _Notices(NullObserver):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def notice(self, run_id: RunId, text: str) -> None:
        self.seen.append(text)


@dataclass
class Asked:
    answer: ElicitationAnswer | None
    resolved: Mapping[str, object]
    """The one `ElicitationResolved` payload the log holds."""
    notices: list[str]
    waited_s: float
    extended_s: list[float]
    """What the run's wall-time deadline was moved by (the wait is not the run's work)."""


async def _asking(tmp_path: Path, *, wait_s: float, answer_after_s: float | None) -> Asked:
    store = SqliteEventStore(tmp_path / "state.db")
    try:
        writer = RunWriter(store)
        f = EventFactory(ids=DeterministicIdGenerator())
        for event in (f.run_created(), f.run_started(), f.tool_requested("mcp__asker__deploy"), f.tool_started()):
            await writer.append(event)
        run = await store.fetch_run(f.run_id)
        assert run is not None and f.tool_call_id is not None
        recorder = RunRecorder(
            writer=writer,
            clock=SystemClock(),
            ids=Uuid4IdGenerator(),
            run_id=f.run_id,
            last_sequence=run.last_sequence,
        )
        notices = _Notices()
        extended: list[float] = []
        token = current_run.set(
            CurrentRun(
                recorder=recorder,
                spec=RunSpec(goal="deploy", workspace_root=tmp_path, budgets=BudgetLimits()),
                observer=notices,
                agent_name=lambda: "main",
                tool_names=lambda: frozenset({"mcp__asker__deploy"}),
                extend_deadline=extended.append,
            )
        )
        ask = logged_asker(
            lambda run_id, after: store.fetch_events(run_id, after_sequence=after), lambda: "q1", wait_s=wait_s
        )

        async def someone_answers(after_s: float) -> None:
            await asyncio.sleep(after_s)
            now = await store.fetch_run(f.run_id)
            assert now is not None
            # another writer (another process's `approvals answer`), on top of what it read
            answer = ElicitationResolvedV1(
                elicitation_id="el_q1", action="accept", content={"proceed": True}, answered_by="cli:tester"
            )
            await append_outside_loop(
                RunWriter(store), SystemClock(), Uuid4IdGenerator(), f.run_id, now.last_sequence, (answer,)
            )

        started = time.monotonic()
        try:
            answering = asyncio.create_task(someone_answers(answer_after_s)) if answer_after_s is not None else None
            got = await ask(QUESTION, ToolContext(workspace_root=tmp_path, tool_call_id=f.tool_call_id))
            if answering is not None:
                await answering
        finally:
            current_run.reset(token)
        waited = time.monotonic() - started
        events = await store.fetch_events(f.run_id)
        assert [e.event_type for e in events].count("ElicitationRequested") == 1
        (resolved,) = [dict(e.payload) for e in events if e.event_type == "ElicitationResolved"]
        return Asked(got, resolved, notices.seen, waited, extended)
    finally:
        store.close()


def test_a_question_nobody_answers_is_declined_once_the_wait_is_over(tmp_path: Path) -> None:
    assert DEFAULT_WAIT_S == 900.0  # the product's wait: 15 minutes
    asked = asyncio.run(_asking(tmp_path, wait_s=0.4, answer_after_s=None))
    assert asked.answer == ElicitationAnswer("decline", None, answered_by="nobody")
    assert asked.resolved["answered_by"] == "nobody" and asked.resolved["action"] == "decline"
    assert asked.resolved["message"] == "nobody answered within 0.4 s"
    assert cast(int, asked.resolved["waited_ms"]) >= 400
    assert asked.waited_s >= 0.4  # not before the wait is over (an upper bound would be a timing figure: none)
    assert len(asked.extended_s) == 1 and asked.extended_s[0] >= 0.4
    (notice,) = asked.notices
    assert "Really deploy to staging?" in notice and "bearagent approvals answer" in notice and "el_q1" in notice


def test_an_answer_from_another_process_during_the_wait_is_what_the_server_gets(tmp_path: Path) -> None:
    asked = asyncio.run(_asking(tmp_path, wait_s=120, answer_after_s=0.3))
    assert asked.answer == ElicitationAnswer("accept", {"proceed": True}, answered_by="person")
    assert asked.resolved["answered_by"] == "cli:tester"  # the log keeps who; the server is told "a person"
    assert len(asked.extended_s) == 1
