"""The terminal as a subscriber of the one event stream, as `--stream-json` is.

`attach_terminal` subscribes a `StreamRenderer` of the run tree's stream events (`runtime.streaming.RunTreeStream`
with its child runs, on the runtime's run writer) before the run starts or resumes, and returns the observer to give
the loop: a `TerminalAttachment`, which shows only what is not a fact of the log, the `notice(...)` lines (retries,
Stop-hook notices, approval waits, what changed since a resumed run started). Everything else on the screen is drawn
from committed events and token deltas, so the terminal shows what the log says.

Attached to a run that already has events (a resumed run), the renderer skips them: only what is committed after
is drawn. It reads them once to know the run's state, so a call the resume finishes (an approval answered) gets its
`● Name(argument)` line, with its result, when its result is committed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from rich.console import Console

from bearagent.cli.render import TerminalView
from bearagent.domain.ids import RunId
from bearagent.domain.stream import (
    AgentSwitchedEvent,
    FinalEvent,
    RunFailedEvent,
    RunSucceededEvent,
    StreamEventModel,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from bearagent.runtime.observer import NullObserver
from bearagent.runtime.streaming import RunTreeStream

if TYPE_CHECKING:
    from bearagent.service.runner import WorkspaceRuntime


class StreamRenderer:
    """A stream sink (`runtime.streaming.StreamSink`) that draws the stream events of run `root` and its child runs
    on `view`: the top-level run's text, tool lines, final answer and end, agent switches; a child's tool lines and
    subagents nested under its Task, its text not at all (it comes back as the Task's result)."""

    def __init__(self, view: TerminalView, root: RunId) -> None:
        self.view = view
        self.root = root
        self._unanswered: dict[str, ToolCallEvent] = {}
        """Calls of the root run committed before the renderer was attached that have no result yet."""

    def recall(self, earlier: Iterable[StreamEventModel]) -> None:
        """What the run's stream held before the renderer was attached: nothing is drawn, the calls still without a
        result are remembered, so the one a resume finishes is drawn whole when its result comes."""
        for event in earlier:
            if isinstance(event, ToolCallEvent):
                self._unanswered[event.id] = event
            elif isinstance(event, ToolResultEvent):
                self._unanswered.pop(event.id, None)

    def __call__(self, event: StreamEventModel) -> None:
        view, root = self.view, self.root
        if isinstance(event, TokenEvent):
            if event.run_id in (None, root):
                view.token(root, event.text)
        elif isinstance(event, ToolCallEvent):
            run_id = event.run_id or root
            self._unanswered.pop(event.id, None)  # asked again (a read-only call in flight runs again on resume)
            view.tool_call(run_id, event.id, event.name, event.arguments)
        elif isinstance(event, ToolResultEvent):
            run_id = event.run_id or root
            earlier = self._unanswered.pop(event.id, None) if run_id == root else None
            if earlier is not None:
                view.tool_call(run_id, earlier.id, earlier.name, earlier.arguments)
            view.tool_result(run_id, event.id, event.name, event.result, event.is_error)
        elif isinstance(event, FinalEvent):
            if event.run_id in (None, root):
                view.final(root, event.content)
        elif isinstance(event, RunSucceededEvent | RunFailedEvent):
            if event.run_id == root:
                view.run_ended(root)
        elif isinstance(event, AgentSwitchedEvent):
            if event.run_id == root:
                view.agent_switched(root, event.from_agent, event.to_agent)
        elif isinstance(event, SubagentStartedEvent):
            view.subagent_started(event.run_id, event.parent_run_id, event.agent)
        elif isinstance(event, SubagentFinishedEvent):
            view.subagent_finished(event.run_id, event.parent_run_id, event.agent, event.status)


class TerminalAttachment(NullObserver):
    """The observer to give the loop for a run the terminal is attached to: it shows the notices, nothing else (the
    renderer draws the rest from the stream). `close()` detaches the renderer and ends what it was drawing."""

    def __init__(self, view: TerminalView, detach: Callable[[], None]) -> None:
        self.view = view
        self._detach = detach

    def notice(self, run_id: RunId, text: str) -> None:
        self.view.notice(run_id, text)

    def waiting(self) -> None:
        """The interactive session's spinner until text, a tool line or a notice is drawn (a `MarkdownView` on a
        terminal; nothing otherwise)."""
        self.view.waiting()

    def close(self) -> None:
        self._detach()
        self.view.close()


def attach_terminal(
    runtime: WorkspaceRuntime, run_id: RunId, console: Console, *, markdown: bool = False
) -> TerminalAttachment:
    """Draw run `run_id` (a new run's id from `RunOptions.run_id`, or a run about to be resumed) on `console` from
    the event stream, and return the observer to pass to `runtime.run` / `runtime.resume`. `markdown`: the
    interactive session's view (Markdown while it streams, the spinner). Only events committed from now on are drawn.
    Opens the runtime's store (its errors are `BearAgentError`s, as a run's are)."""
    view = TerminalView(console)
    if markdown:
        from bearagent.cli.live_markdown import MarkdownView  # the interactive session's view: rich's live regions

        view = MarkdownView(console)
    renderer = StreamRenderer(view, run_id)
    tree = RunTreeStream(run_id, renderer, children=True)
    renderer.recall(tree.catch_up(runtime.store.read_events(run_id)))
    from bearagent.cli.file_change_lines import FileChangeLines  # each tool call's file changes (docs/rewind.md)

    detach_files = runtime.writer.subscribe(FileChangeLines(view, run_id))
    detach_tree = runtime.writer.subscribe(tree)

    def detach() -> None:
        detach_tree()
        detach_files()

    return TerminalAttachment(view, detach)


__all__ = ["StreamRenderer", "TerminalAttachment", "attach_terminal"]
