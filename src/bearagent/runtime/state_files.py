"""BearAgent's own state files (event store, session locks, transcripts): opened without following symlinks.

The state lives in the workspace (`<ws>/.bearagent/`), a directory a cloned repository controls. A planted symlink
(`.bearagent` itself, `state.db`, `state.db-wal`, `locks/`, `transcripts/`) pointing outside would make BearAgent
write its log, locks or transcripts wherever the repository chose. So the data directory and everything below it
are opened component by component with `O_NOFOLLOW` from a directory fd of its parent (the workspace root or the
user's data dir, both trusted), created with mode 0700 (directories) and 0600 (files), and a symlink anywhere on the
way is refused with `StateSymlink`, which names the path and says how to fix it. Nothing is created outside.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from bearagent.domain.errors import BearAgentError, ErrorInfo

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
"""The files SQLite creates next to a database (and opens following symlinks, so they are checked first)."""
STATE_DIR_NAME = ".bearagent"
STATE_GITIGNORE = """\
# BearAgent's local state (run logs, session transcripts, locks, tool artifacts, rewind's file copies); never
# commit it.
state.db*
transcripts/
locks/
tool-results/
artifacts/
blobs/
rewind/
"""
"""The `.gitignore` `bearagent init` writes, and BearAgent writes on its own the first time it keeps state in a
`.bearagent/` folder without one: a run in someone's repository never leaves files `git status` shows."""
SELF_IGNORE = (
    "# BearAgent created this folder for its state: this file ignores itself (delete these lines to commit it)\n"
    "/.gitignore\n"
)


class StateSymlink(BearAgentError):
    """A state file or directory of BearAgent is a symlink (or not what it must be)."""


def symlink_refused(path: Path) -> StateSymlink:
    try:
        target = f" (it points to {os.readlink(path)})"
    except OSError:
        target = ""
    return StateSymlink(
        ErrorInfo.of(
            "permission",
            "state_symlink",
            f"{path} is a symlink{target}. BearAgent keeps its own state (event store, locks, transcripts) there and "
            "never follows symlinks for it, so a repository cannot redirect what BearAgent writes.",
            path=str(path)[-1_000:],
        ),
        hint=f"remove the symlink (`rm {path}`) and run again: BearAgent creates a real one in its place",
    )


def _not_a_directory(path: Path) -> StateSymlink:
    return StateSymlink(
        ErrorInfo.of(
            "permission",
            "state_not_a_directory",
            f"{path} is not a directory, but BearAgent keeps its state in it.",
            path=str(path)[-1_000:],
        ),
        hint=f"move {path} out of the way and run again",
    )


def _open_dir(name: str, dir_fd: int, shown: Path, *, create: bool) -> tuple[int, bool]:
    """A directory fd of `name` in `dir_fd`, and whether this call created it."""
    created = False
    for _ in range(2):
        try:
            return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd), created
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=dir_fd)
                created = True
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            raise (symlink_refused(shown) if stat.S_ISLNK(st.st_mode) else _not_a_directory(shown)) from None
    return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd), created


def open_state_dir(data_dir: Path, *subdirs: str, create: bool = True) -> int:
    """A directory fd of `data_dir/subdirs…`. `data_dir`'s parent is trusted (followed); `data_dir` and each of
    `subdirs` must be real directories (created with 0700 when missing and `create`). The caller closes the fd."""
    parent = data_dir.parent
    if create:
        os.makedirs(parent, 0o700, exist_ok=True)
    fd = os.open(parent, _DIR_FLAGS)
    shown = parent
    try:
        for name in (data_dir.name, *subdirs):
            shown = shown / name
            nfd, created = _open_dir(name, fd, shown, create=create)
            os.close(fd)
            fd = nfd
            if create and shown == data_dir and name == STATE_DIR_NAME:
                _write_gitignore(fd, self_ignored=created)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_gitignore(dir_fd: int, *, self_ignored: bool) -> None:
    """`STATE_GITIGNORE` as `.gitignore` in the directory `dir_fd`, unless one exists (never through a symlink: an
    exclusive create fails on any existing name). A directory BearAgent cannot write reports that elsewhere.

    In a `.bearagent/` BearAgent has just created (nothing of the user's is in it), the file ignores itself too, so a
    run leaves `git status` exactly as it was; in a folder the user made (a committed config.yaml) it does not, and
    shows as one new file to commit beside that config."""
    text = STATE_GITIGNORE + (SELF_IGNORE if self_ignored else "")
    try:
        fd = os.open(
            ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd
        )
    except OSError:
        return  # it exists (the user's own, kept as it is) or the directory is read-only (the store says so)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def open_state_file(data_dir: Path, parts: Sequence[str], flags: int, *, create: bool = True) -> int:
    """Open `data_dir/parts…` (the last part a file) with `flags` (plus `O_NOFOLLOW`; new files get 0600), every
    directory on the way checked as `open_state_dir` does. The caller closes the fd."""
    *subdirs, name = parts
    dfd = open_state_dir(data_dir, *subdirs, create=create)
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise symlink_refused(data_dir.joinpath(*parts)) from None
        raise
    finally:
        os.close(dfd)


def refuse_symlinks(paths: Sequence[Path]) -> None:
    """Raise `StateSymlink` for the first of `paths` that is a symlink (missing paths are fine)."""
    for path in paths:
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            continue  # it does not exist (yet): nothing to follow
        if stat.S_ISLNK(st.st_mode):
            raise symlink_refused(path)


def prepare_sqlite_file(path: Path) -> None:
    """Before SQLite opens `path` (by name, following symlinks): refuse a symlinked database or side file, and
    create a missing database as an empty 0600 file (its directory 0700) without following a symlink. SQLite gives
    its side files the database's mode. Raises `StateSymlink`, or `OSError` when the location is not writable."""
    refuse_symlinks([path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)])
    os.makedirs(path.parent, 0o700, exist_ok=True)
    if os.path.lexists(path):
        # Never open an existing database here: closing any descriptor of a file drops every POSIX lock this
        # process holds on it, and another connection of this process (a second runtime, a server) relies on its
        # SQLite locks. `refuse_symlinks` above already checked it without opening it.
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        refuse_symlinks([path])  # created meanwhile by another process: still no symlink
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise symlink_refused(path) from None
        raise
    os.close(fd)
