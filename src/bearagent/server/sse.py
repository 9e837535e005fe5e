"""Server-Sent Events: the frame format, the per-caller connection limit, keep-alives and the idle timeout.

Every stream the server serves (a run's events, the workspace feed) goes through here:
- at most `limits.max_sse_per_caller` open streams per subject; one more is a 429 before anything is streamed;
- a `: keep-alive` comment after 15 s without a frame (proxies drop silent connections); comments are not events;
- a stream that carried no event for `limits.sse_idle_timeout_s` is closed (a client that still wants it reconnects
  with its `Last-Event-ID` and misses nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Generic, TypeVar

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from bearagent.server.shapes import ApiError

KEEPALIVE_S = 15.0
KEEPALIVE = b": keep-alive\n\n"
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}

T = TypeVar("T")


def frame(kind: str, data: str, frame_id: str | None = None) -> bytes:
    """One SSE frame: `id:` (when it has one), `event:` the stream type, `data:` one line of JSON."""
    head = f"id: {frame_id}\n" if frame_id is not None else ""
    return f"{head}event: {kind}\ndata: {data}\n\n".encode()


class StreamSlots:
    """Open streams per subject, at most `limit` each."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, int] = {}

    def take(self, subject: str) -> Callable[[], None]:
        """A slot for one more stream of `subject` (429 if it has `limit` open); returns the release function,
        which may be called more than once."""
        count = self._open.get(subject, 0)
        if count >= self.limit:
            raise ApiError(
                429,
                "rate_limit",
                "rate_limit.sse_connections",
                f"you have {self.limit} event streams open already (limits.max_sse_per_caller); close one",
                retryable=True,
            )
        self._open[subject] = count + 1
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            left = self._open.get(subject, 1) - 1
            if left > 0:
                self._open[subject] = left
            else:
                self._open.pop(subject, None)

        return release

    def open_count(self, subject: str) -> int:
        return self._open.get(subject, 0)


class SlotStream(StreamingResponse):
    """A streaming response that gives its slot back however it ends: finished, closed by the client, or never
    started (the client left before the first byte)."""

    def __init__(self, content: AsyncIterator[bytes], release: Callable[[], None]) -> None:
        super().__init__(content, media_type="text/event-stream", headers=SSE_HEADERS)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()


class Beat:
    """A keep-alive is due (nothing came for `KEEPALIVE_S`)."""


BEAT = Beat()


class Paced(Generic[T]):
    """The items of `source`, with a `BEAT` after every `keepalive_s` of silence, ending after `idle_s` without an
    item. The pending read of `source` survives a beat (it is never cancelled by a timeout, so `source`, an async
    generator, is not torn down by one)."""

    def __init__(self, source: AsyncIterator[T], *, idle_s: float, keepalive_s: float = KEEPALIVE_S) -> None:
        self._source = source
        self._idle_s = idle_s
        self._keepalive_s = keepalive_s

    async def __aiter__(self) -> AsyncIterator[T | Beat]:
        pending: asyncio.Task[T] | None = None
        last_item = last_out = time.monotonic()
        try:
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(anext(self._source))
                now = time.monotonic()
                idle_left = self._idle_s - (now - last_item)
                if idle_left <= 0:
                    return
                wait = min(idle_left, max(self._keepalive_s - (now - last_out), 0.0))
                done, _ = await asyncio.wait({pending}, timeout=wait)
                if not done:
                    if time.monotonic() - last_out >= self._keepalive_s:
                        last_out = time.monotonic()
                        yield BEAT
                    continue
                task, pending = pending, None
                try:
                    item = task.result()
                except StopAsyncIteration:
                    return
                last_item = last_out = time.monotonic()
                yield item
        finally:
            if pending is not None:
                pending.cancel()
                with contextlib.suppress(BaseException):
                    await pending
            close = getattr(self._source, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
