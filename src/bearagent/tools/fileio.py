"""Atomic writes and bounded reads relative to a directory fd (used by Write and Edit)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat

from bearagent.tools.base import tool_error
from bearagent.tools.paths import TargetDir

MAX_EDIT_FILE_BYTES = 16 * 1024 * 1024


def atomic_write(target: TargetDir, payload: bytes) -> bool:
    """Write `payload` to `target` atomically: temp file in the same directory, fsync, rename over.

    Returns True if the file was created (did not exist before). A hard link to the old file keeps the old
    content: the name is replaced, the old inode is never written through.
    """
    dfd, name = target.dir_fd, target.name
    mode = 0o644
    created = True
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):
            raise tool_error("permission", "not_a_file", f"{target.rel!r} is not a regular file; it was not replaced.")
        mode = stat.S_IMODE(st.st_mode)
        created = False
    tmp = f".{name[:200]}.{secrets.token_hex(6)}.bearagent-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    try:
        try:
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise
    with contextlib.suppress(OSError):
        os.fsync(dfd)
    return created


def read_existing(target: TargetDir, *, limit: int = MAX_EDIT_FILE_BYTES) -> bytes:
    """Read the current content of `target` (which must exist and be a regular file), without following links."""
    try:
        fd = os.open(target.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=target.dir_fd)
    except FileNotFoundError:
        raise tool_error(
            "tool",
            "not_found",
            f"File {target.rel!r} does not exist. Use Write to create a new file.",
            path=target.rel,
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise tool_error("permission", "path_refused", f"{target.rel!r} changed into a symlink; refused.") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise tool_error("permission", "not_a_file", f"{target.rel!r} is not a regular file.")
        if st.st_size > limit:
            raise tool_error(
                "tool",
                "file_too_large",
                f"{target.rel!r} is {st.st_size} bytes; Edit handles files up to {limit} bytes. Use Write or Bash.",
            )
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
