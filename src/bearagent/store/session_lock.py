"""One active run per session, across threads and processes: an exclusive `flock` on a per-session lock file.

A second run of the same session waits (polling without blocking the event loop) until the first finishes, or is
refused at once with `wait=False`. The lock dies with its process, so a crashed run never leaves a session stuck.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import SessionId
from bearagent.runtime.state_files import open_state_file

POLL_INTERVAL_S = 0.05


class SessionBusy(BearAgentError):
    pass


class SessionLock:
    def __init__(
        self,
        lock_dir: Path,
        session_id: SessionId,
        *,
        wait: bool = True,
        on_wait: Callable[[], None] | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self._path = lock_dir / f"session-{session_id}.lock"
        self._session_id = session_id
        self._wait = wait
        self._on_wait = on_wait
        self._timeout_s = timeout_s
        self._fd: int | None = None

    async def __aenter__(self) -> SessionLock:
        # never through a symlink: `.bearagent`, `locks/` and the lock file must be real (runtime/state_files.py)
        fd = open_state_file(
            self._path.parent.parent, (self._path.parent.name, self._path.name), os.O_RDWR | os.O_CREAT
        )
        told = False
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not self._wait or (self._timeout_s is not None and loop.time() - started > self._timeout_s):
                        raise SessionBusy(
                            ErrorInfo.of(
                                "conflict",
                                "session_busy",
                                f"session {self._session_id} already has an active run",
                            ),
                            hint="wait for it to finish, or start a new session (omit --session / --continue)",
                        ) from None
                    if not told and self._on_wait is not None:
                        self._on_wait()
                        told = True
                    await asyncio.sleep(POLL_INTERVAL_S)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
