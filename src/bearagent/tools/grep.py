"""`Grep{pattern, path?, glob?, output_mode?, -i?, -n?, head_limit?}`: regex search over workspace files.

Files are read as bytes and searched with a bytes regex (no decoding of non-matching files); files with a NUL byte
in their first 8 KiB are skipped as binary; .git is skipped and .gitignore honoured; symlinks are not followed.

The engine is the `regex` package (Python `re` syntax) for its `timeout`: Python's `re` holds the GIL while it
backtracks, so one catastrophic pattern (`(a|a?)+$` over a long line) froze the whole process, event loop and
wall-time budget included. The search runs in a daemon thread with the GIL released (`concurrent=True`); every
search gets the time left until the call's deadline (the tool timeout or the run's wall-time budget, whichever comes
first), and the cancel flag is checked before every file, so a cancelled or timed-out call stops its thread and
never keeps the process from exiting. The engine side (compiling, the literal pre-check, the timed scan, the
daemon thread) is `tools/regex_search.py`.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
import time
from collections.abc import Mapping

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, int_arg, str_arg, tool_error
from bearagent.tools.paths import WorkspacePaths
from bearagent.tools.regex_search import compile_pattern, in_daemon_thread, matching_lines, required_literal
from bearagent.tools.roots import WorkspaceRoots
from bearagent.tools.walk import Cancelled, WorkspaceWalker, cancellable, check_glob, hidden_spec

DEFAULT_HEAD_LIMIT = 250
MAX_HEAD_LIMIT = 5_000
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_LINE_CHARS = 500
BINARY_SNIFF_BYTES = 8_192
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
DEADLINE_MARGIN_S = 0.25
"""The search stops this much before the call's deadline, so its own error (which names the pattern and the file)
reaches the model before the gate's generic timeout does."""

SPEC = ToolSpec(
    name="Grep",
    description=(
        "Search file contents with a regular expression (Python `re` syntax). `output_mode`: 'files_with_matches' "
        "(default: paths of matching files), 'content' (matching lines, with line numbers unless -n is false) or "
        "'count' (matches per file). `glob` filters files (e.g. '*.py', '**/*.{ts,tsx}'); `-i` ignores case; "
        f"`head_limit` caps the entries returned (default {DEFAULT_HEAD_LIMIT}). Skips .git, .gitignored and binary "
        "files."
    ),
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "description": "Regular expression to search for."},
                "path": {"type": "string", "description": "File or directory to search (default: workspace root)."},
                "glob": {"type": "string", "minLength": 1, "description": "Only search files matching this glob."},
                "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
                "-i": {"type": "boolean", "description": "Case-insensitive search."},
                "-n": {"type": "boolean", "description": "Show line numbers in content mode (default true)."},
                "head_limit": {"type": "integer", "minimum": 1, "description": "Maximum number of entries to return."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        }
    ),
    side_effect="read_only",
    version="1",
    timeout_ms=120_000,
)


class GrepTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        pattern = str_arg(arguments, "pattern")
        compile_pattern(pattern, arguments.get("-i") is True)
        out: dict[str, object] = {
            "pattern": pattern,
            "path": WorkspaceRoots.for_context(context).normalise(str_arg(arguments, "path")),
            "output_mode": str_arg(arguments, "output_mode", "files_with_matches"),
            "-i": arguments.get("-i") is True,
            "-n": arguments.get("-n") is not False,
            "head_limit": min(int_arg(arguments, "head_limit", DEFAULT_HEAD_LIMIT), MAX_HEAD_LIMIT),
        }
        glob = arguments.get("glob")
        if isinstance(glob, str):
            glob = glob.replace("\\", "/")
            check_glob(glob, "glob")
            out["glob"] = glob
        return out

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        deadline = time.monotonic() + SPEC.timeout_ms / 1000
        if context.deadline is not None:
            deadline = min(deadline, context.deadline)
        deadline -= DEADLINE_MARGIN_S
        progress = _Progress()
        with cancellable() as cancel:
            search = in_daemon_thread(lambda: self._grep(arguments, context, cancel, deadline, progress))
            try:
                async with asyncio.timeout_at(_loop_time_of(deadline)):
                    return await search
            except TimeoutError:
                # `regex` measures its timeout in process CPU time, so on a busy machine a search can run past the
                # wall-clock deadline: the call ends here, on time, and the thread stops at its own limit or file
                raise _timed_out(str_arg(arguments, "pattern"), progress.file) from None

    def _grep(
        self,
        arguments: JsonMapping,
        context: ToolContext,
        cancel: threading.Event,
        deadline: float,
        progress: _Progress,
    ) -> ToolResult:
        pattern = str_arg(arguments, "pattern")
        start = str_arg(arguments, "path")
        mode = str_arg(arguments, "output_mode", "files_with_matches")
        numbers = arguments.get("-n") is not False
        head_limit = int_arg(arguments, "head_limit", DEFAULT_HEAD_LIMIT)
        compiled = compile_pattern(pattern, arguments.get("-i") is True)
        literal = required_literal(pattern) if arguments.get("-i") is not True else None
        glob = arguments.get("glob")
        glob_re = check_glob(glob, "glob") if isinstance(glob, str) else None
        glob_on_name = isinstance(glob, str) and "/" not in glob
        paths = WorkspaceRoots.for_context(context)
        prefix = f"{start}/" if start else ""

        single_file = self._single_file(paths, start)
        entries: list[str] = []
        files_matched = 0
        total_matches = 0
        more = False
        skipped_large = 0

        def time_left(rel_shown: str) -> float:
            """Seconds left for the next search (the cancel flag and the deadline are checked here)."""
            if cancel.is_set():
                raise Cancelled
            progress.file = rel_shown
            left = deadline - time.monotonic()
            if left <= 0:
                raise _timed_out(pattern, rel_shown)
            return left

        def consider(rel_shown: str, data: bytes) -> bool:
            """Search one file's bytes; returns False once head_limit is reached."""
            nonlocal files_matched, total_matches, more
            if b"\x00" in data[:BINARY_SNIFF_BYTES]:
                return True
            if literal is not None and literal not in data:
                return True
            if mode == "files_with_matches":
                try:
                    found = compiled.search(data, timeout=time_left(rel_shown), concurrent=True)
                except TimeoutError:
                    raise _timed_out(pattern, rel_shown) from None
                if found is None:
                    return True
                files_matched += 1
                if len(entries) >= head_limit:
                    more = True
                    return False
                entries.append(rel_shown)
                return True
            try:
                lines = matching_lines(compiled, data, time_left(rel_shown))
            except TimeoutError:
                raise _timed_out(pattern, rel_shown) from None
            if not lines:
                return True
            files_matched += 1
            total_matches += len(lines)
            if mode == "count":
                if len(entries) >= head_limit:
                    more = True
                    return False
                entries.append(f"{rel_shown}:{len(lines)}")
                return True
            for number, line in lines:
                if len(entries) >= head_limit:
                    more = True
                    return False
                text = line.decode("utf-8", "replace").rstrip("\r")
                if len(text) > MAX_LINE_CHARS:
                    text = text[:MAX_LINE_CHARS] + "…"
                entries.append(f"{rel_shown}:{number}:{text}" if numbers else f"{rel_shown}:{text}")
            return True

        try:
            if single_file is not None:
                consider(single_file[0], single_file[1])
            else:
                stop = False
                walk_paths, walk_start = paths.walk_root(start)
                walker = WorkspaceWalker(walk_paths, walk_start, cancel=cancel, hidden=hidden_spec(context.settings))
                for batch in walker.batches():
                    for name in batch.names:
                        if cancel.is_set():
                            raise Cancelled
                        rel = batch.rel(name)
                        if glob_re is not None and not glob_re.match(name if glob_on_name else rel):
                            continue
                        data = _read_at(batch.dir_fd, name)
                        if data is None:
                            skipped_large += 1
                            continue
                        if not consider(prefix + rel, data):
                            stop = True
                            break
                    if stop:
                        break
        except Cancelled:
            raise tool_error("cancelled", "grep", "Grep was cancelled.") from None

        where = start or "the workspace root"
        if not entries:
            content = f"No matches for {pattern!r} in {where}."
        else:
            content = "\n".join(entries)
            if more:
                content += f"\n\n[results cut at head_limit={head_limit}; narrow the search or raise head_limit]"
        if skipped_large:
            content += f"\n[{skipped_large} files larger than {MAX_FILE_BYTES} bytes were not searched]"
        data_out: dict[str, object] = {
            "mode": mode,
            "num_files": files_matched,
            "truncated": more,
        }
        if mode == "files_with_matches":
            data_out["filenames"] = entries
        else:
            data_out["num_matches"] = total_matches
            data_out["lines" if mode == "content" else "counts"] = entries
        return self.ok(context, content, data_out, truncated=more)

    @staticmethod
    def _single_file(paths: WorkspacePaths, start: str) -> tuple[str, bytes] | None:
        """If `path` names a regular file, return it and its bytes; None if it is a directory."""
        if not start:
            return None
        try:
            opened = paths.open_read(start)
        except Exception:
            fd, _ = paths.open_dir(start)  # raises the right error if it is neither file nor directory
            os.close(fd)
            return None
        try:
            return opened.rel, _read_fd(opened.fd, opened.st.st_size) or b""
        finally:
            os.close(opened.fd)


class _Progress:
    """The file the search thread is in, for the message when the call runs out of time."""

    __slots__ = ("file",)

    def __init__(self) -> None:
        self.file = "the first file"


def _loop_time_of(monotonic_deadline: float) -> float:
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic_deadline - time.monotonic())


def _timed_out(pattern: str, where: str) -> BaseException:
    return tool_error(
        "timeout",
        "grep_time_limit",
        f"Grep stopped: the search for {pattern!r} ran out of time in {where} (the call's time limit, set by the "
        "Grep timeout or the run's wall-time budget, was reached). Patterns with nested quantifiers such as "
        "'(a+)+' or '(a|a?)+' can take exponential time on some lines: simplify the pattern, or narrow the search "
        "with `path` or `glob`.",
        file=where[:1024],
    )


def _read_at(dir_fd: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return b""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return b""
        return _read_fd(fd, st.st_size)
    finally:
        os.close(fd)


def _read_fd(fd: int, size: int) -> bytes | None:
    if size > MAX_FILE_BYTES:
        return None
    chunks: list[bytes] = []
    remaining = size + 1
    while remaining > 0:
        chunk = os.read(fd, max(remaining, 65_536))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks) if len(chunks) != 1 else chunks[0]
