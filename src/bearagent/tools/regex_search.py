"""The regex engine of Grep: a pattern in Python `re` syntax compiled with the `regex` package (bytes, multiline),
the literal every match must contain (a quick `in` pre-check that skips files, as ripgrep does), the lines holding
a match within a timeout (the scan releases the GIL), and a daemon thread to run a search in, so one that outlives
its call never holds up the process's exit. `regex` is imported by the first compile, not with the tool set.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from bearagent.tools.base import tool_error

if TYPE_CHECKING:
    import regex

_T = TypeVar("_T")


async def in_daemon_thread(work: Callable[[], _T]) -> _T:
    """`asyncio.to_thread` on a daemon thread of its own: the default executor's threads are joined when the loop
    and the interpreter shut down, so a search still running after its call was cancelled would hold up the exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()

    def settle(setter: Callable[[Any], None], outcome: object) -> None:
        if not future.done():  # the awaiting task may have been cancelled meanwhile
            setter(outcome)

    def deliver(setter: Callable[[Any], None], outcome: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the call was abandoned long ago
            loop.call_soon_threadsafe(settle, setter, outcome)

    def target() -> None:
        try:
            value = work()
        except BaseException as exc:  # handed to the awaiting task, which decides
            deliver(future.set_exception, exc)
        else:
            deliver(future.set_result, value)

    threading.Thread(target=target, name="bearagent-grep", daemon=True).start()
    return await future


_QUANTIFIER_BRACES = re.compile(r"\{(?!\d*,?\d*\})")


def compile_pattern(pattern: str, ignore_case: bool) -> regex.Pattern[bytes]:
    """The compiled pattern; a `validation.invalid_regex` tool error naming the problem otherwise."""
    import regex

    flags = regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0)
    try:
        return regex.compile(pattern.encode("utf-8", "surrogateescape"), flags)
    except (regex.error, ValueError, OverflowError) as exc:
        raise tool_error(
            "validation",
            "invalid_regex",
            f"Grep pattern {pattern!r} is not a valid regular expression: {exc}. Escape special characters "
            "(e.g. '\\(' for a literal parenthesis) or use Python `re` syntax.",
        ) from None


_META = set(".^$*+?{}[]\\|()")
_MIN_LITERAL = 3


def required_literal(pattern: str) -> bytes | None:
    """The longest literal every match must contain, for a quick `in` pre-check (as ripgrep does): files without
    it are skipped without running the regex. None when no such literal is found."""
    if not any(ch in _META for ch in pattern):
        return pattern.encode("utf-8", "surrogateescape")
    if _QUANTIFIER_BRACES.search(pattern):
        # a '{' that is not a repeat count: literal text for `re`'s parser, but fuzzy matching (`(?:foo){e<=1}`) in
        # `regex`, whose matches need not contain it
        return None
    try:
        parser = cast(Any, importlib.import_module("re._parser"))
        tree = parser.parse(pattern)
        if int(tree.state.flags) & re.IGNORECASE:
            return None
        parsed = cast(list[tuple[Any, Any]], list(tree))
        literal_op = parser.LITERAL
    except Exception:
        return None
    best: list[int] = []
    run: list[int] = []
    for op, arg in parsed:
        if op is literal_op:
            run.append(int(arg))
            continue
        if len(run) > len(best):
            best = run
        run = []
    if len(run) > len(best):
        best = run
    if len(best) < _MIN_LITERAL:
        return None
    try:
        return "".join(chr(c) for c in best).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return None


def matching_lines(compiled: regex.Pattern[bytes], data: bytes, timeout: float) -> list[tuple[int, bytes]]:
    """The lines holding a match (line number, bytes); `timeout` bounds the whole scan (raises TimeoutError)."""
    out: list[tuple[int, bytes]] = []
    line_no = 1
    counted_to = 0
    last_line_start = -1
    for m in compiled.finditer(data, timeout=timeout, concurrent=True):
        start = data.rfind(b"\n", 0, m.start()) + 1
        if start == last_line_start:
            continue
        line_no += data.count(b"\n", counted_to, start)
        counted_to = start
        end = data.find(b"\n", start)
        out.append((line_no, data[start : end if end >= 0 else len(data)]))
        last_line_start = start
        if m.end() == m.start() and end < 0:
            break
    return out
