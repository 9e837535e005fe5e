"""The live terminal view of the interactive session (`MarkdownView`) and its pieces: Markdown that streams in
settled blocks, and the spinner shown while waiting for the model. Only the interactive session imports this
module: `bearagent run` draws with the plain `render.TerminalView`, without rich's live regions.

Streaming Markdown is re-rendered as it grows (a rich `Live` region), but only its unsettled tail: once a block
(paragraph, list, fenced code block, ...) is followed by a blank line and a new block has begun, it is printed for
good and leaves the live region. That keeps the region small, so a terminal resized mid-stream re-renders little,
and a long answer never has to be redrawn from its start.

The consoles of the CLI are made with `soft_wrap=True` (plain output is never broken into lines by rich, a
terminal wraps it). A live region cannot rely on that: rich crops each of its lines at the terminal width, so
rendered Markdown must be word-wrapped by rich itself. `Wrapped` does that for any renderable.
"""

from __future__ import annotations

import time

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.control import Control
from rich.live import Live
from rich.segment import ControlCode, ControlType, Segment
from rich.spinner import Spinner
from rich.text import Text

from bearagent.cli.render import TerminalView
from bearagent.domain.ids import RunId


class Wrapped:
    """`renderable`, word-wrapped at the width it is given, even on a console made with `soft_wrap=True`."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from console.render(self.renderable, options.update(no_wrap=False, overflow="fold"))


_FENCE_CHARS = ("`", "~")


def _fence_opening(line: str) -> str | None:
    """The fence (three or more backticks or tildes) that `line` opens a fenced code block with, else None."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or not stripped.startswith(("```", "~~~")):
        return None
    char = stripped[0]
    run = len(stripped) - len(stripped.lstrip(char))
    if char == "`" and "`" in stripped[run:]:  # a backtick fence's info string holds no backtick
        return None
    return char * run


def _closes(line: str, fence: str) -> bool:
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return False
    body = stripped.rstrip()
    return len(body) >= len(fence) and body == fence[0] * len(body)


def settled_length(text: str) -> int:
    """How much of streamed Markdown `text` is settled: the length of its prefix made of whole blocks, each ended by
    a blank line outside a fenced code block, after which a new block has started at column 0 (an indented line
    could still belong to a list item above). 0 when nothing is settled yet."""
    lines = text.split("\n")  # the last item is the line still being streamed (perhaps empty)
    settled = 0
    offset = 0
    fence: str | None = None
    after_blank = False
    for index, line in enumerate(lines):
        complete = index < len(lines) - 1
        if fence is not None:
            if complete and _closes(line, fence):
                fence = None
            after_blank = False
        else:
            if after_blank and line[:1] not in ("", " ", "\t"):
                settled = offset
            blank = line.strip() == ""
            opening = _fence_opening(line) if complete else None
            if opening is not None:
                fence = opening
            after_blank = blank and complete
        offset += len(line) + 1
    return settled


class WaitingLine:
    """A spinner, what is awaited and the seconds elapsed; re-rendered on every refresh of its live region."""

    def __init__(self, label: str, *, started: float | None = None) -> None:
        self.label = label
        self.started = time.monotonic() if started is None else started
        self._spinner = Spinner("dots", style="cyan")

    def text(self) -> str:
        return f"{self.label} · {time.monotonic() - self.started:.0f}s"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self._spinner.text = Text(self.text(), style="dim")
        yield self._spinner.render(console.get_time())


class LiveText:
    """A live region showing one growing renderable (the unsettled Markdown tail), refreshed by `show` at most
    `max_fps` times a second and once more by `stop`.

    A terminal that reflows its lines when it is narrowed (tmux, VTE, iTerm2, kitty, Windows Terminal, ...) turns
    each line of the last frame into several rows, more than rich's live region moves up over to redraw it; that
    would leave pieces of the old frame above the new one. So before redrawing at a new, narrower width the rows
    the old frame now takes are erased first (as far as they are on the screen: the scrollback cannot be reached).
    """

    def __init__(self, console: Console, *, max_fps: float = 15.0) -> None:
        self._console = console
        self._live = Live(console=console, auto_refresh=False, transient=False)
        self._min_interval = 1.0 / max_fps
        self._last_refresh = 0.0
        self._shown: RenderableType | None = None  # what the last frame rendered, and at which size
        self._shown_size: tuple[int, int] = (0, 0)
        self._pending: RenderableType | None = None
        self._live.start()

    def show(self, renderable: RenderableType, *, now: bool = False) -> None:
        self._pending = renderable
        if now or time.monotonic() - self._last_refresh >= self._min_interval:
            self._refresh()

    def _refresh(self) -> None:
        if self._pending is None:
            return
        size = (self._console.width, self._console.height)
        if self._shown is not None and size[0] < self._shown_size[0]:
            self._erase_reflowed(size)
        self._live.update(self._pending, refresh=True)
        self._shown, self._shown_size = self._pending, size
        self._pending = None
        self._last_refresh = time.monotonic()

    def _erase_reflowed(self, size: tuple[int, int]) -> None:
        old_width, old_height = self._shown_size
        assert self._shown is not None
        lines = self._console.render_lines(self._shown, self._console.options.update_width(old_width), pad=False)
        lines = lines[:old_height]  # a taller frame was cropped to the terminal height
        rows_before = len(lines)
        rows_now = sum(max(1, -(-Segment.get_line_length(line) // size[0])) for line in lines)
        visible_rows = min(rows_now, size[1])
        if visible_rows <= rows_before:
            return
        codes: list[ControlCode] = [(ControlType.CARRIAGE_RETURN,), (ControlType.CURSOR_UP, visible_rows - 1)]
        for _ in range(visible_rows - 1):
            codes += [(ControlType.ERASE_IN_LINE, 2), (ControlType.CURSOR_DOWN, 1)]
        codes += [(ControlType.ERASE_IN_LINE, 2), (ControlType.CURSOR_UP, visible_rows - rows_before)]
        self._console.control(Control(*codes))

    def stop(self) -> None:
        """The last rendering stays on the screen."""
        self._refresh()
        self._live.stop()


def _markdown(text: str) -> RenderableType:
    """A rich `Markdown` of `text`; rich.markdown (and markdown-it) are imported on the first one, so a run whose
    output is not a terminal never pays for them (~25 ms of start-up)."""
    from rich.markdown import Markdown

    return Markdown(text)


class MarkdownView(TerminalView):
    """Like `TerminalView`, but on a terminal the model's text is rendered as Markdown while it streams, and a
    spinner with the elapsed time shows while the session waits (for MCP servers to start, for the model's first
    token, for the next model call after a tool). Off a terminal it streams plain text and shows no spinner.

    One rich `Live` region at a time: the spinner (transient: it disappears when text arrives) or the unsettled tail
    of the streamed Markdown (`live_markdown.settled_length`); settled blocks are printed for good."""

    def __init__(self, console: Console) -> None:
        super().__init__(console)
        self._live_enabled = console.is_terminal
        self._buffer = ""  # the unsettled tail of the streamed text
        self._printed_block = False  # a settled block of this answer is printed: the next one gets a blank line
        self._live: LiveText | None = None
        self._spinner: Live | None = None
        self._waiting: WaitingLine | None = None

    def waiting(self, label: str = "waiting for the model") -> None:
        """Show the spinner (until text, a tool line or a notice is printed)."""
        if not self._live_enabled or self._waiting is not None:
            return
        self._end_line()
        self._waiting = WaitingLine(label)
        self._spinner = Live(self._waiting, console=self._console, refresh_per_second=8, transient=True)
        self._spinner.start()

    def _stop_waiting(self) -> None:
        if self._spinner is not None:
            spinner = self._spinner
            self._spinner = None
            self._waiting = None
            spinner.stop()

    def token(self, run_id: RunId, text: str) -> None:
        if not self._live_enabled:
            super().token(run_id, text)
            return
        self._stop_waiting()
        self._buffer += self._tokens.feed(text)
        settled = settled_length(self._buffer)
        if settled:
            block, self._buffer = self._buffer[:settled], self._buffer[settled:]
            if self._live is not None:
                self._live.show(Wrapped(_markdown(block)))
                self._stop_text()
            else:
                self._print_block(block)
        if not self._buffer.strip():
            return
        if self._live is None:
            if self._printed_block:
                self._console.print()
            self._live = LiveText(self._console)
        self._live.show(Wrapped(_markdown(self._buffer)))

    def _print_block(self, block: str) -> None:
        if not block.strip():
            return
        if self._printed_block:
            self._console.print()
        self._console.print(Wrapped(_markdown(block)))
        self._printed_block = True

    def _stop_text(self) -> None:
        """End the live text region: its last rendering stays on the screen."""
        if self._live is not None:
            live = self._live
            self._live = None
            live.stop()
            self._printed_block = True

    def tool_result(self, run_id: RunId, call_id: str, name: str, result: str, is_error: bool) -> None:
        super().tool_result(run_id, call_id, name, result, is_error)
        self.waiting()

    def close(self) -> None:
        self._stop_waiting()
        if self._live is not None:
            self._live.show(Wrapped(_markdown(self._buffer)))
        self._end_line()

    def _end_line(self) -> None:
        self._stop_waiting()
        if self._live is not None:
            self._stop_text()
        self._buffer = ""
        self._printed_block = False
        super()._end_line()
