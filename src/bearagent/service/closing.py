"""Closing several things as one: each is closed even when an earlier one failed (an MCP server that will not stop
must not leave the store open, one workspace's runtime must not keep the next one's open), and the first failure is
raised once all were tried, the same as nested `try/finally` but flat and without losing the later failures (they
are logged). Cancellation is a failure like any other here: the rest is still closed, then it propagates."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable

log = logging.getLogger(__name__)

Closer = Callable[[], Awaitable[object] | object]


async def close_all(closers: Iterable[Closer]) -> None:
    """Call every closer in order (awaiting what it returns when that is awaitable); raise the first failure."""
    first: BaseException | None = None
    for close in closers:
        try:
            result = close()
            if inspect.isawaitable(result):
                await result
        except BaseException as exc:  # every closer runs; the first failure is raised below
            if first is None:
                first = exc
            else:
                log.warning("closing %s also failed", getattr(close, "__qualname__", close), exc_info=exc)
    if first is not None:
        raise first
