"""Which paths of the workspace may have changed since the last look: inotify watches on every directory of the tree.

A full scan of a 10,000-file tree costs tens of milliseconds even as metadata only; the capture of a tool call needs
to look twice per call. With a watch on each directory (added by the full scan itself, before it lists the
directory, so that nothing changed after the listing is missed), a look is the events queued since the last one:
the paths named by them are the only ones that can differ from the index. The kernel queues the events in the
system call that made the change, so once a command has exited its changes are in the queue.

Whenever the events cannot tell the whole story, `drain` answers None and the caller scans the whole tree again:
the queue overflowed, a watch could not be added (the user's `fs.inotify.max_user_watches` is used up), a directory
was moved or renamed (its subtree's paths all change), or the root itself went away. Writes through a memory map
that is never closed after writing raise no event: they are missed until the file's metadata changes (documented in
docs/rewind.md).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes

_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_EXCL_UNLINK = 0x04000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000

_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_DONT_FOLLOW
    | _IN_EXCL_UNLINK
)
_HEADER = struct.Struct("iIII")
MAX_DIRTY = 50_000
"""More paths than this named by the events of one look: a full scan is cheaper than stat-ing them one by one."""


def _libc() -> ctypes.CDLL | None:
    import ctypes  # here, not at the top: a run imports this module, and only a capture that watches needs ctypes

    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


class Watcher:
    """The inotify watches of one tree. `watch` a directory before listing it; `drain` the changed paths."""

    def __init__(self, root: str, skipped: frozenset[str]) -> None:
        libc = _libc()
        init = getattr(libc, "inotify_init1", None) if libc is not None else None
        add = getattr(libc, "inotify_add_watch", None) if libc is not None else None
        if init is None or add is None:
            raise OSError("inotify is not available on this system")
        fd = int(init(_IN_NONBLOCK | _IN_CLOEXEC))
        if fd < 0:
            import ctypes

            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        self._fd = fd
        self._add = add
        self._root = root
        self._skipped = skipped
        self._dirs: dict[int, str] = {}
        self.broken = False
        """A watch could not be added or the events lost track: the next `drain` asks for a full scan."""

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def watch(self, path: str, rel: str) -> None:
        """Watch the directory `path` (`rel`: relative to the root, "" for the root, no trailing slash)."""
        wd = int(self._add(self._fd, os.fsencode(path), _MASK))
        if wd < 0:
            self.broken = True
            return
        self._dirs[wd] = rel

    def _events(self) -> Iterator[tuple[int, int, str]]:
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                offset += _HEADER.size
                name = data[offset : offset + length].rstrip(b"\0")
                offset += length
                yield wd, mask, os.fsdecode(name)

    def drain(self) -> set[str] | None:
        """The paths (relative) that may have changed since the last drain, each with its parent directories'
        listing unchanged otherwise; None when only a full scan can tell (the watches are then to be renewed)."""
        dirty: set[str] = set()
        new_dirs: list[str] = []
        full = self.broken
        for wd, mask, name in self._events():
            if full:
                continue  # the queue is still emptied: the full scan starts from a clean slate
            if mask & _IN_Q_OVERFLOW:
                full = True
                continue
            base = self._dirs.get(wd)
            if mask & _IN_IGNORED:
                self._dirs.pop(wd, None)
                continue
            if base is None:
                continue
            if mask & (_IN_MOVE_SELF | _IN_DELETE_SELF):
                if base == "":
                    full = True  # the root itself went away or moved
                continue
            if not name:
                if base:
                    dirty.add(base)  # the directory's own mode changed
                continue
            if not base and name in self._skipped:
                continue
            rel = f"{base}/{name}" if base else name
            if mask & _IN_ISDIR and mask & (_IN_MOVED_FROM | _IN_MOVED_TO):
                full = True  # a directory moved: every path under it changed name
                continue
            dirty.add(rel)
            if mask & _IN_ISDIR and mask & _IN_CREATE:
                new_dirs.append(rel)
            if len(dirty) > MAX_DIRTY:
                full = True
        if full:
            self._dirs.clear()
            self.broken = False
            return None
        for rel in new_dirs:  # a directory made since: watch it, and whatever is already in it is new too
            if not self._walk_new(rel, dirty):
                self._dirs.clear()
                self.broken = False
                return None
        return dirty

    def _walk_new(self, rel: str, dirty: set[str]) -> bool:
        stack = [rel]
        while stack:
            current = stack.pop()
            path = os.path.join(self._root, current)
            self.watch(path, current)
            if self.broken:
                return False
            try:
                entries = list(os.scandir(path))
            except OSError:
                continue
            for entry in entries:
                child = f"{current}/{entry.name}"
                dirty.add(child)
                if len(dirty) > MAX_DIRTY:
                    return False
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(child)
                except OSError:
                    continue
        return True

    def reset(self) -> None:
        """Forget every watch (a full scan adds them again)."""
        self._dirs.clear()
        self.broken = False


def new_watcher(root: str, skipped: frozenset[str]) -> Watcher | None:
    """A watcher of `root`, or None where inotify cannot be had (the capture then scans the whole tree each time)."""
    try:
        return Watcher(root, skipped)
    except OSError:
        return None
