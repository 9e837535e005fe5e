"""Glob and Grep: .git skipped, .gitignore honoured (nested too), bounded results, output modes, regex errors, and
Grep's time limit (a catastrophic pattern neither blocks the event loop nor outlives its deadline)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from pathlib import Path

import pytest
from tests.support.run_ws import agent_md, open_ws, scripted_workspace
from tests.support.tools import call, native_gate, request

from bearagent.domain.tools import ToolResult
from bearagent.ports import ToolContext
from bearagent.tools.walk import glob_to_regex


def tool(root: Path, name: str, **arguments: object) -> ToolResult:
    return asyncio.run(call(root, name, arguments))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        "README.md": "# Title\nTODO: write docs\n",
        "src/app.py": "import os\n# TODO fix\nprint('hi')\n",
        "src/util.py": "def f():\n    return 1  # todo lowercase\n",
        "src/web/page.tsx": "export const TODO = 1\n",
        "src/gen/out.py": "# TODO generated\n",
        "build/artifact.py": "# TODO build\n",
        "logs/x.log": "TODO log\n",
        "logs/keep.log": "TODO keep\n",
        ".git/config": "TODO git\n",
        "src/.gitignore": "gen/\n",
        ".gitignore": "build/\n*.log\n!keep.log\n",
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "blob.bin").write_bytes(b"TODO\x00\x01\x02")
    return tmp_path


def test_glob_skips_git_and_gitignored(tree: Path) -> None:
    result = tool(tree, "Glob", pattern="**/*")
    assert result.data is not None
    names = set(result.data["filenames"])  # type: ignore[arg-type]
    assert {"README.md", "src/app.py", "src/web/page.tsx", "logs/keep.log", ".gitignore"} <= names
    assert not {".git/config", "build/artifact.py", "logs/x.log", "src/gen/out.py"} & names


def test_glob_patterns_and_path(tree: Path) -> None:
    top = tool(tree, "Glob", pattern="*.md")
    assert top.content == "README.md"
    braces = tool(tree, "Glob", pattern="**/*.{py,tsx}", path="src")
    assert sorted(braces.content.splitlines()) == ["src/app.py", "src/util.py", "src/web/page.tsx"]
    none = tool(tree, "Glob", pattern="*.rs")
    assert none.status == "succeeded" and "No files match" in none.content


def test_glob_is_bounded_and_newest_first(tmp_path: Path) -> None:
    for i in range(150):
        p = tmp_path / f"f{i:03}.txt"
        p.write_text("x")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    result = tool(tmp_path, "Glob", pattern="*.txt")
    lines = result.content.splitlines()
    assert lines[0] == "f149.txt" and lines[99] == "f050.txt"
    assert result.truncated and "150 files match; showing the 100 most recently modified" in result.content


def test_grep_modes(tree: Path) -> None:
    files = tool(tree, "Grep", pattern="TODO")
    assert files.data is not None
    assert set(files.data["filenames"]) == {"README.md", "src/app.py", "src/web/page.tsx", "logs/keep.log"}  # type: ignore[arg-type]
    content = tool(tree, "Grep", pattern="TODO", output_mode="content", path="src")
    assert "src/app.py:2:# TODO fix" in content.content.splitlines()
    no_numbers = tool(tree, "Grep", pattern="TODO", output_mode="content", path="src", **{"-n": False})
    assert "src/app.py:# TODO fix" in no_numbers.content.splitlines()
    counts = tool(tree, "Grep", pattern="i", output_mode="count", glob="*.py")
    assert "src/app.py:3" in counts.content.splitlines()
    insensitive = tool(tree, "Grep", pattern="todo", output_mode="content", glob="src/**/*.py", **{"-i": True})
    assert "src/util.py:2:    return 1  # todo lowercase" in insensitive.content
    assert "src/app.py:2:# TODO fix" in insensitive.content
    single = tool(tree, "Grep", pattern="print", path="src/app.py", output_mode="content")
    assert single.content == "src/app.py:3:print('hi')"


def test_grep_head_limit_and_binary_skip(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 50)
    (tmp_path / "b.bin").write_bytes(b"hit\x00")
    result = tool(tmp_path, "Grep", pattern="hit", output_mode="content", head_limit=5)
    assert len(result.content.split("\n\n")[0].splitlines()) == 5
    assert result.truncated and "head_limit=5" in result.content
    files = tool(tmp_path, "Grep", pattern="hit")
    assert files.content == "many.txt"


def test_grep_regex_error_is_clear(tmp_path: Path) -> None:
    result = tool(tmp_path, "Grep", pattern="foo(")
    assert result.error is not None and result.error.code == "validation.invalid_regex"
    assert "not a valid regular expression" in result.content and "\\(" in result.content


def test_grep_no_match_and_multiline_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    assert "No matches" in tool(tmp_path, "Grep", pattern="gamma").content
    anchored = tool(tmp_path, "Grep", pattern="^beta$", output_mode="content")
    assert anchored.content == "a.txt:2:beta"


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "d/e/a.py", True),
        ("**/*.py", "a.py", True),
        ("src/**", "src/a/b", True),
        ("a?.txt", "ab.txt", True),
        ("[!a]*.txt", "b.txt", True),
        ("[!a]*.txt", "a.txt", False),
        ("*.{ts,tsx}", "x.tsx", True),
        ("{src,lib}/**/*.rs", "lib/x/y.rs", True),
    ],
)
def test_glob_translation(pattern: str, path: str, expected: bool) -> None:
    assert (glob_to_regex(pattern).match(path) is not None) == expected


def test_grep_required_literal_prefilter_keeps_results_right(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def alpha(x):\n    return Foo_12 in y\n")
    (tmp_path / "b.py").write_text("nothing here\n")
    defs = tool(tmp_path, "Grep", pattern=r"def \w+\(", output_mode="content")
    assert defs.content == "a.py:1:def alpha(x):"
    inline = tool(tmp_path, "Grep", pattern=r"(?i)foo_\d+ in", output_mode="content")
    assert inline.content == "a.py:2:    return Foo_12 in y"
    alternation = tool(tmp_path, "Grep", pattern="nothing|alpha")
    assert sorted(alternation.content.splitlines()) == ["a.py", "b.py"]


def test_grep_fuzzy_braces_do_not_become_a_required_literal(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("find NEEDXE here\n")
    fuzzy = tool(tmp_path, "Grep", pattern="(?:NEEDLE){e<=1}", output_mode="content")
    assert fuzzy.content == "a.txt:1:find NEEDXE here"
    counted = tool(tmp_path, "Grep", pattern="NE{2}DXE", output_mode="content")
    assert counted.content == "a.txt:1:find NEEDXE here"


CATASTROPHIC = "(a|a?)+$"  # exponential backtracking on a long run of 'a' that does not end the line
"""Python's `re` ran `(a+)+$` for 67 s holding the GIL; `regex` defuses that one, not this one."""


def _grep_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "bearagent-grep"]


def _wait_for_grep_threads(cpu_limit_s: float | None = None) -> None:
    """Wait until no search thread is left. `regex` measures its timeout in process CPU time, not wall time, so on a
    loaded machine a thread that keeps to its limit can still run for many wall seconds after the call's deadline:
    the wait is generous (120 s, far longer than any CPU limit here), and what is checked instead is that the thread
    used no more CPU than `cpu_limit_s` (its own clock, `pthread_getcpuclockid`), which load does not change."""
    used = 0.0
    end = time.monotonic() + 120
    while (threads := _grep_threads()) and time.monotonic() < end:
        for thread in threads:
            if thread.ident is not None:
                with contextlib.suppress(OSError):  # it ended between the listing and the read
                    used = max(used, time.clock_gettime(time.pthread_getcpuclockid(thread.ident)))
        if cpu_limit_s is not None:
            assert used < cpu_limit_s, f"the search thread used {used:.2f} s of CPU, over its limit"
        time.sleep(0.02)
    assert not _grep_threads(), "the search thread outlived its deadline"


async def _grep_with_ticks(root: Path, deadline_s: float, **arguments: object) -> tuple[ToolResult, float, float]:
    """Run Grep with a deadline while a 10 ms ticker runs on the same event loop; return the result, the longest
    gap between two ticks and the time the call took."""
    gap = 0.0

    async def ticker() -> None:
        nonlocal gap
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gap, last = max(gap, now - last), now

    context = ToolContext(workspace_root=root, deadline=time.monotonic() + deadline_s)
    ticking = asyncio.create_task(ticker())
    started = time.monotonic()
    result = await native_gate().call(request("Grep", {"pattern": CATASTROPHIC, **arguments}), context)
    took = time.monotonic() - started
    ticking.cancel()
    return result, gap if gap > 0.0 else took, took  # no tick at all: blocked for the whole call


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
def test_grep_catastrophic_pattern_stops_at_the_deadline_without_blocking_the_loop(tmp_path: Path, mode: str) -> None:
    (tmp_path / "crafted.txt").write_text("a" * 5_000 + "!\n")
    result, gap, took = asyncio.run(_grep_with_ticks(tmp_path, 1.5, output_mode=mode))
    assert result.error is not None and result.error.code == "timeout.grep_time_limit", result.content
    assert "ran out of time in crafted.txt" in result.content and "(a+)+" in result.content
    # the call ends at its wall-clock deadline (1.5 s less the margin); the upper bound only allows for a loaded
    # machine scheduling the event loop late, it is not a speed figure
    assert 0.9 < took < 15.0, took
    # a loop blocked by the search would show one gap as long as the whole call (>= 1.4 s); a loaded machine delays
    # a 10 ms tick by far less than that
    assert gap < 1.0, f"the event loop was blocked for {gap:.2f} s of the {took:.2f} s call"
    _wait_for_grep_threads(cpu_limit_s=1.5 + 1.0)  # its regex CPU limit is at most the 1.5 s deadline


def test_grep_cancelled_returns_at_once_and_its_thread_stops_at_the_next_file(tmp_path: Path) -> None:
    for i in range(100):  # each file's search takes ~50-100 ms, so the thread reaches a file boundary quickly
        (tmp_path / f"f{i:03}.txt").write_text("a" * 160 + "!\n")

    async def scenario() -> float:
        context = ToolContext(workspace_root=tmp_path, deadline=time.monotonic() + 60)
        task = asyncio.create_task(native_gate().call(request("Grep", {"pattern": CATASTROPHIC}), context))
        for _ in range(200):
            await asyncio.sleep(0.01)
            if _grep_threads():
                break
        await asyncio.sleep(0.1)
        assert _grep_threads() and not task.done()
        task.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    # at once, not after the search: the rest of the search (the thread's remaining ~100 files of 50-100 ms each)
    # would take several seconds more; the bound allows for a loaded machine, it is not a speed figure
    assert asyncio.run(scenario()) < 3.0
    _wait_for_grep_threads()  # it stops at the next file boundary (a generous wait: see the helper)


def test_grep_in_a_run_ends_within_the_wall_time_budget(tmp_path: Path) -> None:
    script = f"""
turns:
  - tool_calls: [{{name: Grep, arguments: {{pattern: '{CATASTROPHIC}', output_mode: content}}}}]
  - text: "The pattern was too slow."
"""
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Grep]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    (root / "crafted.txt").write_text("a" * 5_000 + "!\n")
    with open_ws(root, tmp_path) as ws:
        started = time.monotonic()
        result = ws.run_sync("search", budgets={"max_wall_time_ms": 2_000})
        took = time.monotonic() - started
        failed = [e for e in ws.events("last") if e.event_type == "ToolCallFailed"]
    # without the budget the search never ends (exponential backtracking on 5,000 'a's); the bound allows for a
    # loaded machine (start-up, scheduling), it is not a speed figure
    assert took < 30.0, f"the run took {took:.1f} s against a 2 s wall-time budget"
    assert result.status == "succeeded", result.error
    assert len(failed) == 1
    error = failed[0].payload["result"]["error"]  # type: ignore[index]
    assert error["code"] == "timeout.grep_time_limit"  # type: ignore[index]
