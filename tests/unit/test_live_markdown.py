"""Streaming Markdown in settled blocks, word-wrapped live regions, the waiting line."""

from __future__ import annotations

import io
import re

from rich.console import Console
from rich.markdown import Markdown

from bearagent.cli.live_markdown import LiveText, MarkdownView, WaitingLine, Wrapped, settled_length
from bearagent.domain.ids import RunId

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _terminal(width: int) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=width, height=30, soft_wrap=True, emoji=False), out


def test_nothing_is_settled_until_a_new_block_starts_after_a_blank_line() -> None:
    assert settled_length("one paragraph") == 0
    assert settled_length("one paragraph\n\n") == 0
    assert settled_length("one paragraph\n\nT") == len("one paragraph\n\n")
    assert settled_length("a\n\nb\n\nc") == len("a\n\nb\n\n")


def test_a_fenced_code_block_with_blank_lines_stays_one_block() -> None:
    text = "```python\nx = 1\n\ny = 2\n"
    assert settled_length(text) == 0
    assert settled_length(text + "```\n\nafter") == len(text + "```\n\n")
    assert settled_length("~~~~\n\n~~~\n\nstill code") == 0  # a shorter fence does not close it


def test_an_indented_line_after_a_blank_line_may_belong_to_a_list_item() -> None:
    assert settled_length("- item\n\n  more of the item") == 0
    assert settled_length("- item\n\n  more\n\nNext") == len("- item\n\n  more\n\n")


def test_wrapped_markdown_is_word_wrapped_on_a_soft_wrap_console() -> None:
    console, _ = _terminal(20)
    text = "alpha beta gamma delta epsilon zeta eta theta"

    # the options console.print uses on a soft_wrap console, and lines cut at the width, as a live region does
    options = console.options.update(no_wrap=True, overflow="ignore")

    def rendered(renderable: Wrapped | Markdown) -> list[str]:
        lines = console.render_lines(renderable, options, pad=False)
        return ["".join(s.text for s in line).rstrip() for line in lines]

    assert rendered(Markdown(text)) == ["alpha beta gamma del"]  # what the session showed before
    lines = rendered(Wrapped(Markdown(text)))
    assert " ".join(lines) == text
    assert max(len(line) for line in lines) <= 20


def test_the_markdown_view_prints_every_word_at_a_narrow_width() -> None:
    console, out = _terminal(30)
    observer = MarkdownView(console)
    observer.waiting()
    words = [f"w{i:02d}" for i in range(60)]
    text = " ".join(words[:30]) + "\n\n" + " ".join(words[30:])
    for piece in re.findall(r"\s*\S+\s*", text):
        observer.token(RunId("00000000-0000-4000-8000-000000000001"), piece)
    observer.close()
    shown = ANSI.sub("", out.getvalue())  # every frame, as written: not cropped means every word is in one
    assert set(words) <= set(shown.split())
    assert max(len(line.rstrip()) for line in shown.replace("\r", "\n").splitlines()) <= 30
    assert "waiting for the model" in shown  # it was shown, then erased (transient)


def test_narrowing_erases_the_rows_the_old_frame_now_takes() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80, height=30, soft_wrap=True)
    live = LiveText(console, max_fps=1000)
    live.show(Wrapped(Markdown("x" * 70 + "\n\n" + "y" * 70)), now=True)
    before = len(out.getvalue())
    console.width = 40  # each 80-column row of the last frame is two rows now
    live.show(Wrapped(Markdown("x" * 70)), now=True)
    live.stop()
    fixup = out.getvalue()[before:]
    # 3 lines (x, blank, y) take 5 rows now: up 4 to the top, erase the 5, then up to where rich starts its redraw
    assert fixup.startswith("\r\x1b[4A" + "\x1b[2K\x1b[1B" * 4 + "\x1b[2K\x1b[2A")


def test_the_waiting_line_counts_seconds() -> None:
    line = WaitingLine("starting MCP servers", started=0.0)
    assert line.text().startswith("starting MCP servers · ")
    assert line.text().endswith("s")
