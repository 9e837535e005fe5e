"""Tool lines as in Claude Code: a coloured, cut diff for Edit/Write, exit code and stderr for a failed Bash."""

from __future__ import annotations

import io

from rich.console import Console

from bearagent.cli.render import TerminalView
from bearagent.cli.tool_lines import bash_failure, diff_lines, diff_summary
from bearagent.domain._base import freeze_json_mapping
from bearagent.domain.ids import RunId

RUN = RunId("00000000-0000-4000-8000-000000000001")


def _view(color: bool = False) -> tuple[TerminalView, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=color, no_color=not color, width=80, soft_wrap=True)
    return TerminalView(console), out


def test_an_edit_shows_a_coloured_diff_with_a_count() -> None:
    args = freeze_json_mapping(
        {"file_path": "app.py", "old_string": "a = 1\nb = 2\nc = 3", "new_string": "a = 1\nb = 20\nc = 3"}
    )
    view, out = _view(color=True)
    view.tool_call(RUN, "c1", "Edit", args)
    view.tool_result(RUN, "c1", "Edit", "Edited app.py (1 replacement).", False)
    shown = out.getvalue()
    assert "Added 1 line, removed 1 line" in shown
    assert "\x1b[31m-b = 2" in shown and "\x1b[32m+b = 20" in shown  # red removed, green added
    assert " a = 1" in shown  # context


def test_a_long_write_is_cut_with_the_count_of_the_rest() -> None:
    content = "".join(f"line {i}\n" for i in range(25))
    args = freeze_json_mapping({"file_path": "notes.md", "content": content})
    assert diff_summary("Write", args) == "Wrote 25 lines"
    lines = [t.plain for t in diff_lines("Write", args)]
    assert lines[0] == "    +line 0"
    assert len(lines) == 11 and lines[-1] == "    … 15 more lines"


def test_a_diff_shows_control_sequences_instead_of_running_them() -> None:
    args = freeze_json_mapping({"file_path": "x", "old_string": "old", "new_string": "\x1b[2Jnew"})
    assert any("␛[2Jnew" in t.plain for t in diff_lines("Edit", args))
    assert all("\x1b" not in t.plain for t in diff_lines("Edit", args))


def test_a_failed_bash_shows_its_exit_code_and_stderr_not_its_first_stdout_line() -> None:
    result = "2.0\nstderr:\nTraceback (most recent call last):\nValueError: bad input\n[Exit code 2]"
    assert bash_failure(result) == ("exit 2", ["Traceback (most recent call last):", "ValueError: bad input"])
    view, out = _view()
    view.tool_call(RUN, "c2", "Bash", freeze_json_mapping({"command": "python tool.py"}))
    view.tool_result(RUN, "c2", "Bash", result, True)
    shown = out.getvalue()
    assert "└ failed: exit 2" in shown
    assert "ValueError: bad input" in shown
    assert "failed: 2.0" not in shown


def test_a_failed_bash_with_only_stderr_and_other_failures() -> None:
    assert bash_failure("ls: cannot access 'x': No such file\n[Exit code 2]") == (
        "exit 2",
        ["ls: cannot access 'x': No such file"],
    )
    assert bash_failure("(no output)") is None
    view, out = _view()
    view.tool_call(RUN, "c3", "Read", freeze_json_mapping({"file_path": "missing.md"}))
    view.tool_result(RUN, "c3", "Read", "File does not exist: missing.md", True)
    assert "failed: File does not exist: missing.md" in out.getvalue()
