"""The terminal drawn from the event stream (`cli/terminal_stream.py`): which stream events of a run tree reach the
screen, and how; the observer it gives the loop shows notices only."""

from __future__ import annotations

import io

from rich.console import Console

from bearagent.cli.render import TerminalView
from bearagent.cli.terminal_stream import StreamRenderer, TerminalAttachment
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import RunId
from bearagent.domain.stream import (
    AgentSwitchedEvent,
    FinalEvent,
    RunFailedEvent,
    RunStartedEvent,
    RunSucceededEvent,
    StepEvent,
    StreamError,
    StreamEventModel,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)

ROOT = RunId("00000000-0000-4000-8000-000000000001")
CHILD = RunId("00000000-0000-4000-8000-000000000002")
GRANDCHILD = RunId("00000000-0000-4000-8000-000000000003")


def _renderer() -> tuple[StreamRenderer, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, no_color=True, width=100, soft_wrap=True)
    return StreamRenderer(TerminalView(console), ROOT), out


def _feed(renderer: StreamRenderer, events: list[StreamEventModel]) -> None:
    for event in events:
        renderer(event)


TOP_LEVEL_SCREEN = """\
Reading the notes
● Read(notes.md)
  └ hello (+1 lines)
All read.
↪ switched agent: main → builder
"""


def test_the_top_level_run_streams_its_text_and_tool_lines() -> None:
    renderer, out = _renderer()
    _feed(
        renderer,
        [
            RunStartedEvent(run_id=ROOT, seq=2),
            TokenEvent(text="Reading", run_id=ROOT),
            TokenEvent(text=" the notes", run_id=ROOT),
            StepEvent(index=0, kind="tool_call", run_id=ROOT, seq=5),
            ToolCallEvent(id="c1", name="Read", arguments={"file_path": "notes.md"}, run_id=ROOT, seq=6),
            ToolResultEvent(id="c1", name="Read", result="hello\nthere", is_error=False, run_id=ROOT, seq=8),
            TokenEvent(text="All read.", run_id=ROOT),
            AgentSwitchedEvent(run_id=ROOT, from_agent="main", to_agent="builder", seq=9),
            StepEvent(index=1, kind="final", run_id=ROOT, seq=12),
            FinalEvent(content="All read.", run_id=ROOT, seq=12),
            RunSucceededEvent(run_id=ROOT, steps=2, seq=12),
        ],
    )
    assert out.getvalue() == TOP_LEVEL_SCREEN


def test_child_runs_show_their_tool_lines_nested_and_nothing_of_their_text() -> None:
    renderer, out = _renderer()
    _feed(
        renderer,
        [
            ToolCallEvent(id="t1", name="Task", arguments={"prompt": "look"}, run_id=ROOT),
            SubagentStartedEvent(run_id=CHILD, parent_run_id=ROOT, agent="scout"),
            TokenEvent(text="scout thinking", run_id=CHILD),
            ToolCallEvent(id="c2", name="Read", arguments={"file_path": "a.md"}, run_id=CHILD),
            ToolResultEvent(id="c2", name="Read", result="x", is_error=False, run_id=CHILD),
            SubagentStartedEvent(run_id=GRANDCHILD, parent_run_id=CHILD, agent="deep"),
            ToolCallEvent(id="c3", name="Read", arguments={"file_path": "b.md"}, run_id=GRANDCHILD),
            ToolResultEvent(id="c3", name="Read", result="missing", is_error=True, run_id=GRANDCHILD),
            AgentSwitchedEvent(run_id=GRANDCHILD, from_agent="deep", to_agent="other"),
            FinalEvent(content="deep: done", run_id=GRANDCHILD),
            RunSucceededEvent(run_id=GRANDCHILD, steps=1),
            SubagentFinishedEvent(run_id=GRANDCHILD, parent_run_id=CHILD, agent="deep", status="succeeded"),
            RunFailedEvent(
                run_id=CHILD, error=StreamError(category="tool", code="x", message="it broke", retryable=False)
            ),
            SubagentFinishedEvent(run_id=CHILD, parent_run_id=ROOT, agent="scout", status="failed"),
            ToolResultEvent(id="t1", name="Task", result="scout failed", is_error=True, run_id=ROOT),
        ],
    )
    assert out.getvalue() == (
        "● Task(look)\n"
        "  ↳ subagent scout started (00000000)\n"
        "    ● Read(a.md)\n"
        "      └ x\n"
        "      ↳ subagent deep started (00000000)\n"
        "        ● Read(b.md)\n"
        "          └ failed: missing\n"
        "      ↳ subagent deep succeeded\n"
        "  ↳ subagent scout failed\n"
        "  └ failed: scout failed\n"
    )


def test_a_call_made_before_the_renderer_was_attached_is_drawn_whole_when_its_result_comes() -> None:
    renderer, out = _renderer()
    edit = {"file_path": "app.py", "old_string": "a = 1", "new_string": "a = 2"}
    renderer.recall(
        [
            ToolCallEvent(id="done", name="Read", arguments={"file_path": "x"}, run_id=ROOT, seq=5),
            ToolResultEvent(id="done", name="Read", result="x", is_error=False, run_id=ROOT, seq=7),
            ToolCallEvent(id="asked", name="Edit", arguments=edit, run_id=ROOT, seq=8),
            ToolCallEvent(id="again", name="Grep", arguments={"pattern": "x"}, run_id=ROOT, seq=9),
        ]
    )
    assert out.getvalue() == ""  # what came before the attachment is not drawn
    _feed(
        renderer,
        [
            ToolResultEvent(id="asked", name="Edit", result="Edited app.py.", is_error=False, run_id=ROOT, seq=12),
            ToolCallEvent(id="again", name="Grep", arguments={"pattern": "x"}, run_id=ROOT, seq=13),
            ToolResultEvent(id="again", name="Grep", result="none", is_error=False, run_id=ROOT, seq=15),
        ],
    )
    assert out.getvalue() == (
        "● Edit(app.py)\n"
        "  └ Added 1 line, removed 1 line\n"
        "    -a = 1\n"
        "    +a = 2\n"
        "● Grep(x)\n"  # a call asked again (a read-only call in flight runs again) is drawn once
        "  └ none\n"
    )


def test_the_observer_of_an_attached_run_shows_only_notices() -> None:
    out = io.StringIO()
    view = TerminalView(Console(file=out, no_color=True, width=100, soft_wrap=True))
    detached: list[bool] = []
    observer = TerminalAttachment(view, lambda: detached.append(True))
    observer.run_started(ROOT, "main")
    observer.token(ROOT, "not drawn: the stream has it")
    observer.tool_call(ROOT, "c1", "Read", {"file_path": "a"})
    observer.tool_result(ROOT, "c1", "Read", "x", False)
    observer.final(ROOT, "done")
    observer.run_failed(ROOT, ErrorInfo.of("tool", "x", "no"))
    observer.notice(ROOT, "model call failed; retrying in 1.0s (attempt 2)")
    observer.waiting()  # a plain view has no spinner
    observer.close()
    assert out.getvalue() == "! model call failed; retrying in 1.0s (attempt 2)\n"
    assert detached == [True]
