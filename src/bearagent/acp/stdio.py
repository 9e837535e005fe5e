"""The byte streams of `bearagent acp` over this process's stdin and stdout, for any kind of file the caller gave.

The ACP SDK's own `stdio_streams` registers stdin with the event loop's epoll. That works for a pipe or a socket, but
epoll refuses a character device such as `/dev/null` (EPERM): the error is only logged from a loop callback, the
reader never sees end of file, and `bearagent acp < /dev/null` served nothing and never exited (it ran for over an
hour, until SIGTERM; issue 29). A regular file as stdout (`bearagent acp > log`) made it fail at start instead. Here a
pipe or a socket keeps the event loop's own transport; anything else is read by a thread (end of file or a read error
ends the stream, so the serve loop returns) and written with plain blocking writes (a file or a device never blocks
for long).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
from typing import Any, cast

READ_CHUNK = 64 * 1024


def _is_pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _DrainProtocol(asyncio.BaseProtocol):
    """The protocol a `StreamWriter` over a blocking transport needs: writes are done when `write` returns."""

    async def _drain_helper(self) -> None:
        return None


class _BlockingWriteTransport(asyncio.WriteTransport):
    """Writes straight to `fd` (a regular file or a character device). A failed write (the file system full, the
    reader gone) closes the transport: the protocol's messages are then dropped, as on a closed pipe."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError:
            self._closing = True

    def can_write_eof(self) -> bool:
        return False

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def abort(self) -> None:
        self._closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


def _feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    """Reads `fd` on a daemon thread until end of file (or an error), handing each chunk to `reader` on the loop."""

    def deliver(call: Any, *args: Any) -> bool:
        try:
            loop.call_soon_threadsafe(call, *args)
        except RuntimeError:  # the loop is closed: the serve loop has already returned
            return False
        return True

    def pump() -> None:
        try:
            while True:
                try:
                    data = os.read(fd, READ_CHUNK)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not data or not deliver(reader.feed_data, data):
                    break
        finally:
            deliver(reader.feed_eof)

    threading.Thread(target=pump, name="bearagent-acp-stdin", daemon=True).start()


async def stdio_streams(
    stdin_fd: int = 0, stdout_fd: int = 1, *, limit: int = 50 * 1024 * 1024
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The reader of `stdin_fd` and the writer of `stdout_fd`. End of file on stdin (the editor closed the pipe, or
    stdin is `/dev/null` or an empty file) ends the reader, which ends the SDK's receive loop; `bearagent acp` then
    cancels what is in flight and exits 0."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    if _is_pipe_or_socket(stdin_fd):
        protocol = asyncio.StreamReaderProtocol(reader)
        await loop.connect_read_pipe(lambda: protocol, os.fdopen(stdin_fd, "rb", buffering=0, closefd=False))
    else:
        _feed_from_thread(loop, reader, stdin_fd)
    if _is_pipe_or_socket(stdout_fd) or _is_character_device(stdout_fd):
        write_protocol = _PipeDrainProtocol()
        transport, _ = await loop.connect_write_pipe(
            lambda: write_protocol, os.fdopen(stdout_fd, "wb", buffering=0, closefd=False)
        )
        return reader, asyncio.StreamWriter(transport, write_protocol, None, loop)
    blocking = _BlockingWriteTransport(stdout_fd)
    return reader, asyncio.StreamWriter(blocking, _DrainProtocol(), None, loop)


def _is_character_device(fd: int) -> bool:
    with contextlib.suppress(OSError):
        return stat.S_ISCHR(os.fstat(fd).st_mode)
    return False


class _PipeDrainProtocol(asyncio.BaseProtocol):
    """Flow control for the loop's write pipe: `drain` waits while the pipe's buffer is above its high-water mark."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    async def _drain_helper(self) -> None:
        if not self._paused:
            return
        if self._waiter is None:
            self._waiter = cast("asyncio.Future[None]", asyncio.get_running_loop().create_future())
        await self._waiter
