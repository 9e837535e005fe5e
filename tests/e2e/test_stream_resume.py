"""One event stream: every stream event names its run and log sequence; a consumer that disconnects and comes back
with `after_seq` gets the rest from the log, then live, with no gap and no duplicate; the same events come from the
log alone once the run is over."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner
from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.cli import main
from bearagent.domain.ids import RunId
from bearagent.domain.stream import StreamEventModel, TokenEvent, encode_stream_event, parse_stream_event_json
from bearagent.runtime.observer import NullObserver

SCRIPT = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: docs/a.md}}]
  - text: "The doc says hello, twice over."
    wait_for_file: release
    wait_timeout_ms: 120000
    delta_delay_ms: 30
"""
HELD = "    wait_for_file: release\n    wait_timeout_ms: 120000\n"  # the second model call, held until the test says
MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}


class Started(NullObserver):
    def __init__(self) -> None:
        self.run_id: asyncio.Future[RunId] = asyncio.get_running_loop().create_future()

    def run_started(self, run_id: RunId, agent: str) -> None:
        if not self.run_id.done():
            self.run_id.set_result(run_id)


def kind(event: StreamEventModel) -> str:
    return str(event.model_dump()["type"])


def run_of(event: StreamEventModel) -> str:
    return str(event.model_dump().get("run_id", ""))


def facts(events: Sequence[StreamEventModel]) -> list[str]:
    return [encode_stream_event(e) for e in events if not isinstance(e, TokenEvent)]


def test_a_consumer_that_reconnects_misses_nothing_and_sees_nothing_twice(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=MAIN)
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("hello\n", encoding="utf-8")

    async def go() -> tuple[list[StreamEventModel], list[StreamEventModel], list[StreamEventModel], str]:
        async with open_ws(root, tmp_path / "home") as ws:
            started = Started()
            run = asyncio.create_task(ws.run("read docs/a.md", observer=started))
            run_id = str(await asyncio.wait_for(started.run_id, 30))
            first: list[StreamEventModel] = []
            async for event in ws.stream_run(run_id):
                first.append(event)
                if kind(event) == "tool_result":
                    break  # the connection drops here
            assert not run.done(), "the second consumer should join a live run"
            # released only now (a fixed delay could run out while a loaded machine ran the first consumer); the
            # provider polls on this loop, so it answers only once the second consumer below is reading
            (root / ".bearagent" / "release").touch()
            resume_at = first[-1].seq
            assert resume_at is not None
            second = [event async for event in ws.stream_run(run_id[:8], after_seq=resume_at)]
            result = await run
            assert result.status == "succeeded", result.error
            replay = [event async for event in ws.stream_run(run_id)]
            return first, second, replay, run_id

    first, second, replay, run_id = asyncio.run(go())
    # what the two connections got, minus the ephemeral tokens, is the run's stream, each event once
    assert facts(first) + facts(second) == facts(replay)
    assert [kind(e) for e in replay] == [
        "run.started",
        "step",
        "tool_call",
        "tool_result",
        "step",
        "final",
        "run.succeeded",
    ]
    for event in [*first, *second, *replay]:
        assert run_of(event) == run_id and event.seq is not None
    seqs = [e.seq or 0 for e in replay]
    assert seqs == sorted(seqs) and seqs[0] == 2
    # the live tokens of the final answer came after the resume point, in order, without gaps
    tokens = [e for e in second if isinstance(e, TokenEvent)]
    assert "".join(t.text for t in tokens) == "The doc says hello, twice over."
    offsets = [t.offset for t in tokens]
    assert offsets == [sum(len(t.text) for t in tokens[:i]) for i in range(len(tokens))]
    assert len({t.activity_id for t in tokens}) == 1
    assert kind(replay[-2]) == "final" and "twice over" in encode_stream_event(replay[-2])


def test_child_runs_stream_under_their_own_run_id_when_asked(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "find the docs", description: look}}]
  - text: "The docs live in docs/."
  - text: "Scout says: docs/."
"""
    agents = {
        "main": agent_md("Main agent.", mode="primary", tools="[Read]", subagents="[scout]"),
        "scout": agent_md("Finds things.", mode="subagent", tools="[Read]"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)

    async def go(children: bool) -> list[StreamEventModel]:
        async with open_ws(root, tmp_path / "home") as ws:
            return [event async for event in ws.stream("where are the docs?", children=children)]

    with_children = asyncio.run(go(True))
    parent = run_of(with_children[0])
    started = next(e for e in with_children if kind(e) == "subagent.started")
    child = run_of(started)
    assert child and child != parent
    of_child = [e for e in with_children if run_of(e) == child and kind(e) != "subagent.started"]
    assert [kind(e) for e in of_child if not isinstance(e, TokenEvent)] == [
        "run.started",
        "step",
        "final",
        "run.succeeded",
        "subagent.finished",
    ]
    assert "".join(e.text for e in of_child if isinstance(e, TokenEvent)) == "The docs live in docs/."
    assert all(e.seq is not None for e in with_children)
    assert kind(with_children[-1]) == "run.succeeded" and run_of(with_children[-1]) == parent

    root_only = asyncio.run(go(False))
    own = run_of(root_only[0])
    assert all(run_of(e) == own for e in root_only if not kind(e).startswith("subagent."))
    assert [kind(e) for e in root_only if kind(e).startswith("subagent.")] == ["subagent.started", "subagent.finished"]
    finals = [e for e in root_only if kind(e) == "final"]
    assert len(finals) == 1 and "Scout says" in encode_stream_event(finals[0])


def test_stream_json_lines_name_the_run_and_its_log_sequence(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT.replace(HELD, ""), agents=MAIN)
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("hello\n", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["run", "-w", str(root), "--stream-json", "read docs/a.md"], env=isolated_env(tmp_path / "home")
    )
    assert result.exit_code == 0, result.output
    events = [parse_stream_event_json(line) for line in result.output.splitlines() if line.strip()]
    run_id = run_of(events[0])
    assert kind(events[0]) == "run.started" and kind(events[-1]) == "run.succeeded"
    assert all(run_of(e) == run_id and e.seq is not None for e in events)

    # the same stream, read back from the log afterwards (tokens are live only)
    async def replay() -> list[StreamEventModel]:
        async with open_ws(root, tmp_path / "home") as ws:
            return [event async for event in ws.stream_run(run_id)]

    assert facts(events) == facts(asyncio.run(replay()))
