"""Terminal rendering of a live run: streamed text, one compact line per tool call and outcome, a summary line.

`TerminalView` (and `MarkdownView`, the interactive session's, in `cli/live_markdown.py`) draws; what drives it is
the event stream: the CLI
attaches the terminal to a run with `cli/terminal_stream.py` (`attach_terminal`), which subscribes a renderer of the
run tree's stream events to the run writer and gives the loop an observer that shows only notices (what is not a
fact of the log). Every command that runs or resumes a run draws it that way.

Colour only on a TTY and never with `NO_COLOR`; everything the user sees goes through a rich `Console`, and every
text that comes from a model, a tool or a workspace file through `safe_text.visible` first: control sequences in it
are shown (`␛[2J`), never interpreted by the terminal.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TextIO

from rich.console import Console
from rich.text import Text

from bearagent.cli.safe_text import VisibleStream, visible
from bearagent.cli.tool_lines import bash_failure, diff_lines, diff_summary
from bearagent.domain._base import JsonMapping, thaw_json_mapping
from bearagent.domain.ids import RunId

MAX_ARG_PREVIEW = 80
MAX_RESULT_PREVIEW = 100


def make_console(file: TextIO | None = None, *, stderr: bool = False) -> Console:
    """A console that respects NO_COLOR and non-TTY output (no colour, no cursor tricks, no wrapping)."""
    target = file if file is not None else (sys.stderr if stderr else sys.stdout)
    no_color = bool(os.environ.get("NO_COLOR"))
    is_tty = target.isatty()
    return Console(
        file=target,
        no_color=no_color or not is_tty,
        force_terminal=is_tty and not no_color,
        highlight=False,
        soft_wrap=True,
        emoji=False,
    )


PREVIEW_KEYS = (
    "file_path",
    "notebook_path",
    "command",
    "pattern",
    "url",
    "path",
    "query",
    "prompt",
    "name",
    "subagent_type",
    "agent",
    "bash_id",
    "shell_id",
)
"""The arguments a tool line shows, first found first (`MultiEdit(app.py)`, `WebSearch(bear facts)`)."""


def preview_arguments(arguments: JsonMapping) -> str:
    """`Read(docs/project.md)`-style preview: the first string argument, else compact JSON, cut to a line (control
    characters shown, not interpreted)."""
    plain = thaw_json_mapping(arguments)
    for key in PREVIEW_KEYS:
        value = plain.get(key)
        if isinstance(value, str) and value:
            return _cut(visible(value.replace("\r\n", " ").replace("\n", " ")), MAX_ARG_PREVIEW)
    return _cut(visible(json.dumps(plain, ensure_ascii=False)), MAX_ARG_PREVIEW)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class TerminalView:
    """Draws a run as it happens. Tokens stream to stdout; tool lines and notices too, dimmed when colour is on. A
    child run's lines are nested under its parent's (`subagent_started` says whose child it is). What drives it
    hands it only the top-level run's text, final answer and end: a child's text comes back as its Task's result."""

    def __init__(self, console: Console, *, show_tokens: bool = True) -> None:
        self._console = console
        self._show_tokens = show_tokens
        self._mid_line = False
        self._tool_names: dict[str, str] = {}
        self._tool_arguments: dict[str, JsonMapping] = {}
        self._tokens = VisibleStream()
        self._depth: dict[RunId, int] = {}
        """How deep each child run is (1 = a subagent of the top-level run): its lines are nested that far."""

    def _indent(self, run_id: RunId) -> str:
        return "    " * self._depth.get(run_id, 0)

    def _end_line(self) -> None:
        held = self._tokens.flush()
        if held:
            self._console.print(held, end="", markup=False, highlight=False)
            self._mid_line = True
        if self._mid_line:
            self._console.print()
            self._mid_line = False

    def token(self, run_id: RunId, text: str) -> None:
        if not self._show_tokens:
            return
        shown = self._tokens.feed(text)
        if not shown:
            return
        self._console.print(shown, end="", markup=False, highlight=False)
        self._mid_line = not shown.endswith("\n")

    def tool_call(self, run_id: RunId, call_id: str, name: str, arguments: JsonMapping) -> None:
        self._end_line()
        self._tool_names[call_id] = name
        self._tool_arguments[call_id] = arguments
        line = Text(self._indent(run_id) + "● ", style="cyan")
        line.append(visible(name), style="bold")
        line.append(f"({preview_arguments(arguments)})")
        self._console.print(line)

    def tool_result(self, run_id: RunId, call_id: str, name: str, result: str, is_error: bool) -> None:
        arguments = self._tool_arguments.pop(call_id, None)
        pad = self._indent(run_id)
        failure = bash_failure(result) if is_error and name == "Bash" else None
        if failure is not None:  # `exit 2` and the end of stderr, not the first line of stdout
            code, lines = failure
            line = Text(pad + "  └ ", style="dim")
            line.append(f"failed: {code}", style="red")
            self._console.print(line)
            for text in lines:
                self._console.print(Text(pad + "    " + _cut(text, max(20, self._console.width - 6)), style="red"))
            return
        summary_text = diff_summary(name, arguments) if arguments is not None and not is_error else None
        if summary_text is not None and arguments is not None:  # Edit / Write: what changed, as a diff
            self._console.print(Text(pad + "  └ ", style="dim") + Text(summary_text, style="dim"))
            for diff_line in diff_lines(name, arguments, width=self._console.width - len(pad)):
                self._console.print(Text(pad) + diff_line if pad else diff_line)
            return
        shown = visible(result.strip())  # before splitting: str.splitlines() also splits at CR, VT, FF and more
        first = shown.split("\n", 1)[0] if shown else ("error" if is_error else "done")
        lines = result.count("\n") + 1 if result else 0
        summary = _cut(first, MAX_RESULT_PREVIEW)
        if not is_error and lines > 1:
            summary = f"{summary} (+{lines - 1} lines)"
        line = Text(pad + "  └ ", style="dim")
        line.append(("failed: " if is_error else "") + summary, style="red" if is_error else "dim")
        self._console.print(line)

    def final(self, run_id: RunId, content: str) -> None:
        if not self._show_tokens:
            self._console.print(visible(content), markup=False, highlight=False)
        self._end_line()

    def run_ended(self, run_id: RunId) -> None:
        self._end_line()

    def agent_switched(self, run_id: RunId, from_agent: str, to_agent: str) -> None:
        self._end_line()
        self._console.print(Text(visible(f"↪ switched agent: {from_agent} → {to_agent}"), style="magenta"))

    def subagent_started(self, run_id: RunId, parent_run_id: RunId, agent: str) -> None:
        self._end_line()
        self._depth[run_id] = self._depth.get(parent_run_id, 0) + 1
        pad = self._indent(parent_run_id)
        self._console.print(Text(visible(f"{pad}  ↳ subagent {agent} started ({str(run_id)[:8]})"), style="dim"))

    def subagent_finished(self, run_id: RunId, parent_run_id: RunId, agent: str, status: str) -> None:
        pad = self._indent(parent_run_id)
        self._console.print(Text(visible(f"{pad}  ↳ subagent {agent} {status}"), style="dim"))

    def file_changes(self, run_id: RunId, text: str) -> None:
        """What a tool call changed in the workspace's files (`file_change_lines.py`), under its line."""
        self._end_line()
        self._console.print(Text(visible(f"{self._indent(run_id)}  ├ files: {text}"), style="dim"))

    def notice(self, run_id: RunId, text: str) -> None:
        self._end_line()
        self._console.print(Text(visible(f"! {text}"), style="yellow"))

    def waiting(self, label: str = "waiting for the model") -> None:
        """While the session waits: nothing here (the interactive session's `MarkdownView` shows a spinner)."""

    def close(self) -> None:
        """The run is over (or abandoned): end the line being written."""
        self._end_line()
