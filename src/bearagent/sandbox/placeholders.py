"""Placeholders shared by every process that runs sandboxed commands in one workspace.

A control file that does not exist gets a read-only placeholder in the sandbox, and bubblewrap has to create its
mount point on the host (`bwrap.py`, step 4). Removing that mount point on the host while another sandbox relies on
it would detach the mount in that sandbox (Linux detaches mounts on a removed dentry in every namespace), and its
command could then create the control file. Within one process the calls counted each other; several workers
running Bash in one workspace did not, and one worker's cleanup could tear down another's protection, or remove a
placeholder that another was about to bind.

So a sandboxed call holds a lease from before it plans its mounts until it ends: a shared `flock` on
`.bearagent/locks/sandbox.lock`. The placeholders it creates are listed in `.bearagent/locks/sandbox-placeholders`
(a JSON list, changed under an exclusive lock of its own). When a call ends, it removes the listed placeholders only
if it can take the lease exclusively at once, i.e. when no call of any process is in flight; otherwise the last one
to end does. `.bearagent` is read-only inside every sandbox, so a command cannot replace the lock or the list.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Generator, Sequence
from pathlib import Path

from bearagent.domain.errors import BearAgentError
from bearagent.runtime.state_files import open_state_file

_LOCKS = ("locks",)
LEASE = "sandbox.lock"
REGISTRY = "sandbox-placeholders"


class PlaceholderLease:
    """Held by one sandboxed call of a workspace (see the module). `take` waits only while a cleanup runs."""

    def __init__(self, state_dir: Path, fd: int | None) -> None:
        self._state_dir = state_dir
        self._fd = fd

    @classmethod
    def take(cls, root: Path) -> PlaceholderLease:
        """The shared lease of `root`'s sandboxed calls. Where it cannot be had (a read-only workspace), a lease that
        holds nothing: that call's placeholders are then never removed (left behind, never torn down early)."""
        state_dir = root / ".bearagent"
        try:  # a symlink on the way is refused (StateSymlink): no call runs where BearAgent's state leads elsewhere
            fd = open_state_file(state_dir, (*_LOCKS, LEASE), os.O_RDWR | os.O_CREAT)
        except OSError:
            return cls(state_dir, None)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
        except OSError:
            os.close(fd)
            return cls(state_dir, None)
        return cls(state_dir, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def register(self, created: Sequence[tuple[str, bool]]) -> None:
        """List the placeholders this call's bubblewrap will create (path, is_dir), for whoever cleans up last."""
        if not created or self._fd is None:
            return
        with self._registry() as (entries, save):
            known = {path for path, _ in entries}
            save([*entries, *((p, d) for p, d in created if p not in known)])

    def release(self, remove: Callable[[str, bool], None]) -> None:
        """End this call's lease; when no call of any process holds one any more, `remove` every listed placeholder
        (it removes only what is still the empty thing bubblewrap made)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        os.close(fd)  # our shared lock goes with it
        try:
            fd = open_state_file(self._state_dir, (*_LOCKS, LEASE), os.O_RDWR | os.O_CREAT)
        except (
            OSError,
            BearAgentError,
        ):  # `.bearagent` replaced meanwhile: leave the placeholders, never fail the call
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # another call is in flight: the last one cleans up
            with contextlib.suppress(OSError, BearAgentError), self._registry() as (entries, save):
                for path, is_dir in entries:
                    remove(path, is_dir)
                save([])
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _registry(self) -> Generator[tuple[list[tuple[str, bool]], Callable[[list[tuple[str, bool]]], None]]]:
        fd = open_state_file(self._state_dir, (*_LOCKS, REGISTRY), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = b""
            while chunk := os.read(fd, 65536):
                raw += chunk
            entries: list[tuple[str, bool]] = []
            with contextlib.suppress(ValueError, TypeError):
                for item in json.loads(raw or b"[]"):
                    entries.append((str(item[0]), bool(item[1])))

            def save(items: list[tuple[str, bool]]) -> None:
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps([[p, d] for p, d in items]).encode(), 0)

            yield entries, save
        finally:
            os.close(fd)  # the lock goes with it
