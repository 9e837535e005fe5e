"""Workspace path safety, in one place for every file tool.

A user path is first checked lexically (`normalise`): NUL bytes, overlong paths, Unicode look-alikes of `/`, `\\`
and `..`, absolute paths outside the workspace and `..` escapes are refused. Then it is resolved race-safely
(`WorkspacePaths.open_*`): component by component from a directory fd of the workspace root, every component opened
with `O_NOFOLLOW` relative to its parent's fd (openat-style, `dir_fd=`), never check-then-open. A symlink met on the
way is read with `readlink(dir_fd=)` and its target re-resolved from the root: a target inside the workspace is
followed, one leading outside is refused. The final object must be a regular file (or a directory where one is
expected): devices, FIFOs and sockets are refused.

Writes (`open_target`) also guard the workspace's control files (`tools/protected.py`): the policy decides on the
lexical path, so a path that only *reaches* a control file through a symlink (`link/config.yaml` with
`link -> .bearagent`, or `conf/config.yaml` when `.bearagent -> conf`) is refused here, in the same walk that yields
the directory fd the write uses. A control file is written only by its own name.

Why this module is longer than most: it is one idea, the walk. The lexical check, the fd walk with its
symlink re-resolution, the control-file guard and the final-object checks share the root fd and the alias map and
must agree step by step on the same path; split across modules, a check could end up made on a path other than the
one that is opened.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
import unicodedata
from collections.abc import Generator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.tools.protected import PROTECTED_DIRS, PROTECTED_FILES, protected_reason, state_reason

MAX_PATH_BYTES = 4_096
MAX_COMPONENT_BYTES = 255
MAX_SYMLINK_HOPS = 40
MAX_ALIAS_SCAN = 2_000
"""Most entries looked at below `.bearagent`, `.claude` and `.agents` when looking for symlinks out of them."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_SUSPICIOUS = frozenset({"/", "\\", "..", "."})


class PathRefused(BearAgentError):
    """A path a file tool will not touch; the message says why and what to use instead."""


def _refuse(path: str, why: str, how: str, specific: str = "path_refused") -> PathRefused:
    shown = path if len(path) <= 200 else path[:200] + "…"
    return PathRefused(ErrorInfo.of("permission", specific, f"Refused path {shown!r}: {why}. {how}", path=shown))


def _not_found(rel: str) -> BearAgentError:
    return BearAgentError(
        ErrorInfo.of(
            "tool",
            "not_found",
            f"File or directory {rel!r} does not exist in the workspace. Check the path with Glob.",
            path=rel,
        )
    )


@dataclass(frozen=True, slots=True)
class OpenedFile:
    """A regular file opened for reading: the fd (caller closes it), its stat and its workspace-relative path."""

    fd: int
    rel: str
    st: os.stat_result


@dataclass(frozen=True, slots=True)
class TargetDir:
    """The directory a file will be written into: an open dir fd, the final name, and the resolved relative path."""

    dir_fd: int
    name: str
    rel: str


class WorkspacePaths:
    """Safe path resolution below one workspace root."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self._root_str = str(root)
        self._real_str = str(self.root)
        self._aliases: list[tuple[str, str]] | None = None

    # ----- lexical -----

    def normalise(self, user_path: str) -> str:
        """Turn a user path into a normalised workspace-relative POSIX path ('' is the root itself)."""
        if "\x00" in user_path:
            raise _refuse(user_path.replace("\x00", "\\0"), "it contains a NUL byte", "Remove the NUL character.")
        if len(user_path.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
            raise _refuse(user_path, f"it is longer than {MAX_PATH_BYTES} bytes", "Use a shorter path.")
        path = user_path.replace("\\", "/")
        if path.startswith("~"):
            raise _refuse(
                user_path,
                "home-directory paths ('~') are outside the workspace",
                "Use a path relative to the workspace.",
            )
        if posixpath.isabs(path):
            norm = posixpath.normpath(path)
            rel = self._strip_root(norm)
            if rel is None:
                raise _refuse(
                    user_path,
                    f"it is outside the workspace {self._real_str}",
                    "File tools only work inside the workspace; use a relative path.",
                    "outside_workspace",
                )
        else:
            rel = posixpath.normpath(path)
            if rel == ".":
                rel = ""
            if rel == ".." or rel.startswith("../"):
                raise _refuse(
                    user_path,
                    "'..' leads outside the workspace",
                    "File tools only work inside the workspace; use a path below it.",
                    "outside_workspace",
                )
        for part in rel.split("/") if rel else ():
            self._check_component(user_path, part)
        return rel

    def _strip_root(self, norm: str) -> str | None:
        for root in (self._real_str, self._root_str):
            if norm == root:
                return ""
            prefix = root.rstrip("/") + "/"
            if norm.startswith(prefix):
                return norm[len(prefix) :]
        return None

    @staticmethod
    def _check_component(user_path: str, part: str) -> None:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_COMPONENT_BYTES:
            raise _refuse(
                user_path, f"a path component is longer than {MAX_COMPONENT_BYTES} bytes", "Use shorter names."
            )
        if part.isascii():
            return
        folded = unicodedata.normalize("NFKC", part)
        if any(s in folded for s in ("/", "\\")) or folded.strip(".") == "" or ".." in folded:
            raise _refuse(
                user_path,
                f"the component {part!r} looks like {folded!r} (Unicode look-alike of a path separator or '..')",
                "Use plain '/' and real directory names.",
                "ambiguous_path",
            )

    # ----- race-safe resolution -----

    @contextmanager
    def _root_fd(self) -> Generator[int]:
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            yield fd
        finally:
            os.close(fd)

    def _follow(self, user_path: str, dir_parts: list[str], dir_fd: int, name: str, rest: list[str]) -> list[str]:
        """`name` in `dir_fd` is a symlink: return the new component list, or refuse if it leaves the workspace."""
        target = os.readlink(name, dir_fd=dir_fd)
        if posixpath.isabs(target):
            rel = self._strip_root(posixpath.normpath(target))
            if rel is None:
                raise _refuse(
                    user_path,
                    f"it goes through a symlink ({'/'.join([*dir_parts, name])}) that leads outside the workspace",
                    "Only symlinks that stay inside the workspace are followed.",
                    "symlink_escape",
                )
        else:
            rel = posixpath.normpath(posixpath.join(*dir_parts, target) if dir_parts else target)
            if rel == ".." or rel.startswith("../"):
                raise _refuse(
                    user_path,
                    f"it goes through a symlink ({'/'.join([*dir_parts, name])}) that leads outside the workspace",
                    "Only symlinks that stay inside the workspace are followed.",
                    "symlink_escape",
                )
            if rel == ".":
                rel = ""
        parts = [p for p in rel.split("/") if p]
        return parts + rest

    # ----- control files -----

    def protected_alias_map(self) -> list[tuple[str, str]]:
        """`(real relative path, control-file name)` for every control file or directory that is a symlink to
        somewhere else in the workspace (`.bearagent -> conf` gives `("conf", ".bearagent")`), including symlinks a
        few levels inside `.bearagent`, `.claude`, `.agents` and `.git/hooks` (e.g. a skill folder linked from
        elsewhere). Writing through the real path would change the control file, so it is guarded too."""
        if self._aliases is not None:
            return self._aliases
        found: list[tuple[str, str]] = []
        budget = [MAX_ALIAS_SCAN]

        def note(link: str, name: str) -> None:
            rel = self._strip_root(os.path.realpath(os.path.join(self._real_str, link)))
            if rel is not None and rel != link:
                found.append((rel, name))

        def scan(rel_dir: str, depth: int) -> None:
            try:
                entries = sorted(os.scandir(os.path.join(self._real_str, rel_dir)), key=lambda e: e.name)
            except OSError:
                return
            for entry in entries:
                budget[0] -= 1
                if budget[0] < 0:
                    return
                rel = f"{rel_dir}/{entry.name}"
                if rel in (".bearagent/locks", ".bearagent/transcripts"):
                    continue  # BearAgent's own state: never symlinks (the store refuses them), and many files
                if entry.is_symlink():
                    note(rel, rel)
                elif depth > 1 and entry.is_dir(follow_symlinks=False):
                    scan(rel, depth - 1)

        for name in (*PROTECTED_DIRS, *PROTECTED_FILES):
            path = os.path.join(self._real_str, name)
            if os.path.islink(path):
                note(name, name)
        for name in (".bearagent", ".claude", ".agents"):
            if os.path.isdir(os.path.join(self._real_str, name)) and not os.path.islink(
                os.path.join(self._real_str, name)
            ):
                scan(name, 3)
        for link in (".git/config", ".git/hooks"):
            if os.path.islink(os.path.join(self._real_str, link)):
                note(link, link)
        if os.path.isdir(os.path.join(self._real_str, ".git", "hooks")):
            scan(".git/hooks", 1)
        self._aliases = found
        return found

    def control_file(self, rel: str) -> str | None:
        """The control file that the resolved workspace path `rel` is (its own name, or the name it is reached by
        through a symlinked control file or directory), or None for an ordinary file."""
        if protected_reason(rel) is not None or state_reason(rel) is not None:
            return rel
        for real, name in self.protected_alias_map():
            if rel == real or rel.startswith(real + "/"):
                return name + rel[len(real) :]
        return None

    def _guard_control(self, user_path: str, lexical: str, resolved: str, *, parent_of: bool = False) -> None:
        """Refuse a write (or, with `parent_of`, a directory created for it) that reaches a control file under
        another name than the one the policy decided on."""
        name = self.control_file(resolved)
        if name is None or lexical == name or (parent_of and lexical.startswith(name + "/")):
            return
        raise _refuse(
            user_path,
            f"it leads to {name!r}, a control file of the workspace, through a symlink",
            f"Write {name!r} by its own path (which needs its own permission rule), or remove the symlink.",
            "protected_path",
        )

    def _walk_dirs(
        self, user_path: str, parts: list[str], *, create: bool, lexical: str | None = None
    ) -> tuple[int, list[str], list[str]]:
        """Open every directory in `parts` except the last; returns (dir fd, resolved dir parts, remaining parts).

        Restarts from the root whenever a symlink is met, so the returned fd is always reached by O_NOFOLLOW steps.
        With `lexical` (the normalised path a write was decided on), a directory is only created inside a control
        directory when that path names it.
        """
        hops = 0
        while True:
            fd = os.open(self.root, _DIR_FLAGS)
            done: list[str] = []
            restarted = False
            try:
                i = 0
                while i < len(parts) - 1:
                    name = parts[i]
                    try:
                        nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except FileNotFoundError:
                        if not create:
                            raise _not_found("/".join(parts[: i + 1])) from None
                        if lexical is not None:
                            self._guard_control(user_path, lexical, "/".join([*done, name]), parent_of=True)
                        with suppress(FileExistsError):
                            os.mkdir(name, 0o777, dir_fd=fd)
                        continue
                    except OSError as exc:
                        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                            raise
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        if not stat.S_ISLNK(st.st_mode):
                            raise _refuse(
                                user_path,
                                f"{'/'.join(parts[: i + 1])!r} is not a directory",
                                "Check the path with Glob.",
                                "not_a_directory",
                            ) from None
                        hops += 1
                        if hops > MAX_SYMLINK_HOPS:
                            raise _refuse(user_path, "too many levels of symlinks", "Fix the symlink loop.") from None
                        parts = self._follow(user_path, done, fd, name, parts[i + 1 :])
                        restarted = True
                        break
                    os.close(fd)
                    fd = nfd
                    done.append(name)
                    i += 1
                if not restarted:
                    return fd, done, parts[len(done) :]
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    def open_read(self, user_path: str) -> OpenedFile:
        """Open a regular file for reading, race-safely. Raises `PathRefused` or a not-found `BearAgentError`."""
        parts = [p for p in self.normalise(user_path).split("/") if p]
        if not parts:
            raise _refuse(user_path, "it is the workspace directory, not a file", "Name a file.", "not_a_file")
        hops = 0
        while True:
            dfd, done, rest = self._walk_dirs(user_path, parts, create=False)
            name = rest[0]
            rel = "/".join([*done, name])
            try:
                try:
                    before = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                except FileNotFoundError:
                    raise _not_found(rel) from None
                if stat.S_ISLNK(before.st_mode):
                    hops += 1
                    if hops > MAX_SYMLINK_HOPS:
                        raise _refuse(user_path, "too many levels of symlinks", "Fix the symlink loop.")
                    parts = self._follow(user_path, done, dfd, name, [])
                    if not parts:
                        raise _refuse(user_path, "it is a directory, not a file", "Use Glob to list it.", "not_a_file")
                    continue
                if not stat.S_ISREG(before.st_mode):
                    # refuse before opening: opening a device or FIFO can have side effects
                    raise _refuse(
                        user_path,
                        f"{rel!r} is {_kind(before.st_mode)}, not a regular file",
                        _how(before.st_mode),
                        "not_a_file",
                    )
                try:
                    fd = os.open(name, _FILE_FLAGS, dir_fd=dfd)
                except FileNotFoundError:
                    raise _not_found(rel) from None
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        raise _refuse(user_path, "it was swapped for a symlink while opening", "Try again.") from None
                    raise
            finally:
                os.close(dfd)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
                os.close(fd)
                raise _refuse(
                    user_path, f"{rel!r} changed while it was being opened, or is not a regular file", "Try again."
                )
            os.set_blocking(fd, True)
            return OpenedFile(fd=fd, rel=rel, st=st)

    def open_target(self, user_path: str, *, create_parents: bool) -> TargetDir:
        """Resolve the directory a file will be written into (creating parents if asked). The caller closes dir_fd.

        If the final name is a symlink inside the workspace, its target is written (as a text editor would); a final
        name that exists but is not a regular file is refused.
        """
        lexical = self.normalise(user_path)
        parts = [p for p in lexical.split("/") if p]
        if not parts:
            raise _refuse(user_path, "it is the workspace directory, not a file", "Name a file.", "not_a_file")
        hops = 0
        while True:
            dfd, done, rest = self._walk_dirs(user_path, parts, create=create_parents, lexical=lexical)
            name = rest[0]
            try:
                self._guard_control(user_path, lexical, "/".join([*done, name]))
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                return TargetDir(dir_fd=dfd, name=name, rel="/".join([*done, name]))
            except BaseException:
                os.close(dfd)
                raise
            if stat.S_ISLNK(st.st_mode):
                try:
                    hops += 1
                    if hops > MAX_SYMLINK_HOPS:
                        raise _refuse(user_path, "too many levels of symlinks", "Fix the symlink loop.")
                    parts = self._follow(user_path, done, dfd, name, [])
                finally:
                    os.close(dfd)
                if not parts:
                    raise _refuse(user_path, "it is a directory, not a file", "Name a file.", "not_a_file")
                continue
            if not stat.S_ISREG(st.st_mode):
                os.close(dfd)
                rel = "/".join([*done, name])
                raise _refuse(
                    user_path, f"{rel!r} is {_kind(st.st_mode)}, not a regular file", _how(st.st_mode), "not_a_file"
                )
            return TargetDir(dir_fd=dfd, name=name, rel="/".join([*done, name]))

    def open_dir(self, user_path: str) -> tuple[int, str]:
        """Open a directory inside the workspace (race-safe); returns (fd, relative path). The caller closes fd."""
        parts = [p for p in self.normalise(user_path).split("/") if p]
        if not parts:
            return os.open(self.root, _DIR_FLAGS), ""
        # Resolve "parts + ['.']" so the walk opens every real component as a directory.
        dfd, done, _rest = self._walk_dirs(user_path, [*parts, "."], create=False)
        return dfd, "/".join(done)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    return "not a regular file"


def _how(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "Use Glob to list a directory."
    return "File tools only read and write regular files."
