"""Race-safe directory walk for Glob and Grep: fd-relative (`scandir(fd)`, `open(dir_fd=)`), no symlink followed,
`.git` skipped, `.gitignore` files honoured (the root's, every ancestor's of the start directory, and nested ones;
the deepest file with a matching pattern decides, as in git)."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from bearagent.tools.base import tool_error
from bearagent.tools.paths import WorkspacePaths

if TYPE_CHECKING:
    import pathspec

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_DEPTH = 128
MAX_GITIGNORE_BYTES = 1_048_576
HIDDEN_PATHS_SETTING = "bearagent.hidden_paths"
"""ToolContext.settings key: gitignore lines (workspace-relative) of files a search must leave out (set by the gate
from path deny/ask rules)."""


def hidden_spec(settings: Mapping[str, object]) -> pathspec.GitIgnoreSpec | None:
    raw = settings.get(HIDDEN_PATHS_SETTING)
    if not isinstance(raw, (list, tuple)):
        return None
    lines = [line for line in cast(Sequence[object], raw) if isinstance(line, str)]
    if not lines:
        return None
    import pathspec  # imported on the first walk that needs it, not with the tool set

    return pathspec.GitIgnoreSpec.from_lines(lines)


@dataclass(frozen=True, slots=True)
class _Ignore:
    """One .gitignore: its directory (root-relative), the spec, and one combined regex of all its patterns used as a
    quick 'no pattern can match' pre-check (negations only matter once some pattern matched)."""

    base: str
    spec: pathspec.GitIgnoreSpec
    any_re: re.Pattern[str] | None
    by_name: bool = False


IgnoreStack = tuple[_Ignore, ...]


@dataclass(frozen=True, slots=True)
class DirBatch:
    """The regular files of one directory: its fd (valid until the iterator advances), its path relative to the
    walk's start directory, and the names of its files that are not ignored."""

    dir_fd: int
    rel_dir: str
    names: list[str]

    def rel(self, name: str) -> str:
        return f"{self.rel_dir}/{name}" if self.rel_dir else name


class Cancelled(Exception):
    pass


_GROUP_RE = re.compile(r"\(\?P<[^>]+>")
_ANY_DIR = "^(?:.+/)?"


def _load_gitignore(dir_fd: int, base: str) -> _Ignore | None:
    try:
        fd = os.open(".gitignore", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_GITIGNORE_BYTES)
    finally:
        os.close(fd)
    lines = data.decode("utf-8", "replace").splitlines()
    import pathspec

    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # a broken .gitignore must not stop a search; git itself skips bad lines
        return None
    regexes: list[str] = []
    for pattern in spec.patterns:
        compiled = cast(re.Pattern[str] | None, getattr(pattern, "regex", None))
        if pattern.include is not None and compiled is not None:
            regexes.append(_GROUP_RE.sub("(?:", compiled.pattern))
    if not regexes:
        return None
    # When every pattern is a name pattern (no inner '/', so it matches the last component at any depth), the
    # quick check runs on the last component only: much cheaper than the `^(?:.+/)?` scan over the whole path.
    by_name = all(r.startswith(_ANY_DIR) for r in regexes)
    body = "|".join("(?:" + (r[len(_ANY_DIR) :] if by_name else r) + ")" for r in regexes)
    try:
        any_re: re.Pattern[str] | None = re.compile(("^(?:" + body + ")") if by_name else body)
    except re.error:
        any_re = None
    return _Ignore(base, spec, any_re, by_name)


def _ignored(stack: IgnoreStack, rel: str, is_dir: bool) -> bool:
    for ignore in reversed(stack):
        sub = rel[len(ignore.base) + 1 :] if ignore.base else rel
        if is_dir:
            sub += "/"
        if ignore.any_re is not None:
            probe = sub[sub.rfind("/", 0, len(sub) - 1) + 1 :] if ignore.by_name else sub
            if ignore.any_re.match(probe) is None:
                continue
        result = ignore.spec.check_file(sub)
        if result.include is not None:
            return bool(result.include)
    return False


class WorkspaceWalker:
    """Yields, directory by directory, the regular files below a start directory of the workspace."""

    def __init__(
        self,
        paths: WorkspacePaths,
        start: str,
        *,
        use_gitignore: bool = True,
        cancel: threading.Event | None = None,
        hidden: pathspec.GitIgnoreSpec | None = None,
    ) -> None:
        self._hidden = hidden
        self._paths = paths
        self._start = start
        self._use_gitignore = use_gitignore
        self._cancel = cancel

    def batches(self) -> Iterator[DirBatch]:
        fd, start_rel = self._paths.open_dir(self._start)
        try:
            stack: IgnoreStack = ()
            if self._use_gitignore:
                stack = self._ancestor_ignores(start_rel)
            # ignore-stack bases are relative to the workspace root; batches relative to the start dir
            yield from self._walk(fd, start_rel, len(start_rel) + 1 if start_rel else 0, stack, 0)
        finally:
            os.close(fd)

    def _ancestor_ignores(self, start_rel: str) -> IgnoreStack:
        stack: list[_Ignore] = []
        parts = start_rel.split("/") if start_rel else []
        for i in range(len(parts)):
            base = "/".join(parts[:i])
            fd, _ = self._paths.open_dir(base)
            try:
                ignore = _load_gitignore(fd, base)
            finally:
                os.close(fd)
            if ignore is not None:
                stack.append(ignore)
        return tuple(stack)

    def _walk(self, fd: int, rel_dir: str, cut: int, stack: IgnoreStack, depth: int) -> Iterator[DirBatch]:
        if self._cancel is not None and self._cancel.is_set():
            raise Cancelled
        if depth > MAX_DEPTH:
            return
        try:
            with os.scandir(fd) as it:
                entries = list(it)
        except OSError:
            return
        if self._use_gitignore:
            for entry in entries:
                if entry.name == ".gitignore":
                    ignore = _load_gitignore(fd, rel_dir)
                    if ignore is not None:
                        stack = (*stack, ignore)
                    break
        prefix = f"{rel_dir}/" if rel_dir else ""
        hidden = self._hidden
        names: list[str] = []
        subdirs: list[str] = []
        # quick per-name pre-check when every active .gitignore holds only name patterns
        name_res = [i.any_re for i in stack if i.by_name and i.any_re is not None]
        quick = len(name_res) == len(stack)
        single = name_res[0] if quick and len(name_res) == 1 else None
        for entry in entries:
            name = entry.name
            try:
                if entry.is_file(follow_symlinks=False):
                    if stack:
                        if single is not None:
                            if single.match(name) is not None and _ignored(stack, prefix + name, False):
                                continue
                        elif quick:
                            if any(r.match(name) for r in name_res) and _ignored(stack, prefix + name, False):
                                continue
                        elif _ignored(stack, prefix + name, False):
                            continue
                    if hidden is not None and hidden.match_file(prefix + name):
                        continue
                    names.append(name)
                elif entry.is_dir(follow_symlinks=False):
                    if name == ".git" or (stack and _ignored(stack, prefix + name, True)):
                        continue
                    if hidden is not None and hidden.match_file(prefix + name + "/"):
                        continue
                    subdirs.append(name)
            except OSError:
                continue
        if names:
            yield DirBatch(dir_fd=fd, rel_dir=rel_dir[cut:], names=names)
        for name in subdirs:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # vanished, swapped for a symlink, or unreadable
            try:
                yield from self._walk(child, prefix + name, cut, stack, depth + 1)
            finally:
                os.close(child)


_SUFFIX_GLOB_RE = re.compile(r"^\*((?:\.[A-Za-z0-9_+-]+)+|\.\{[A-Za-z0-9_+.,-]+\})$")


def name_suffixes(pattern: str) -> tuple[str, ...] | None:
    """For globs like `*.py` or `*.{ts,tsx}`: the suffixes to test with `str.endswith`, else None."""
    m = _SUFFIX_GLOB_RE.match(pattern)
    if m is None:
        return None
    body = m.group(1)
    if body.startswith(".{"):
        return tuple("." + alt for alt in body[2:-1].split(",") if alt)
    return (body,)


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob (`*`, `**`, `?`, `[...]`, `{a,b}`) into a regex over '/'-separated relative paths."""
    return re.compile(_translate(pattern) + r"\Z", re.DOTALL)


def _translate(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if c == "*":
            if pat.startswith("**", i):
                if pat.startswith("**/", i):
                    out.append("(?:.*/)?")
                    i += 3
                else:
                    out.append(".*")
                    i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pat.find("]", i + 2 if pat.startswith(("[!", "[^"), i) else i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pat[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j + 1
                continue
        elif c == "{":
            j = _closing_brace(pat, i)
            if j < 0:
                out.append(re.escape(c))
            else:
                alternatives = _split_top(pat[i + 1 : j])
                out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
                i = j + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _closing_brace(pat: str, i: int) -> int:
    level = 0
    for j in range(i, len(pat)):
        if pat[j] == "{":
            level += 1
        elif pat[j] == "}":
            level -= 1
            if level == 0:
                return j
    return -1


def _split_top(body: str) -> list[str]:
    parts: list[str] = []
    level, start = 0, 0
    for j, ch in enumerate(body):
        if ch == "{":
            level += 1
        elif ch == "}":
            level -= 1
        elif ch == "," and level == 0:
            parts.append(body[start:j])
            start = j + 1
    parts.append(body[start:])
    return parts


def check_glob(pattern: str, field: str) -> re.Pattern[str]:
    """Compile a user glob, refusing absolute patterns and '..' components (they would leave the search root)."""
    norm = pattern.replace("\\", "/")
    if norm.startswith("/") or norm.startswith("~"):
        raise tool_error(
            "permission",
            "path_refused",
            f"{field} {pattern!r} is absolute; patterns are relative to the search directory. Put the directory in "
            "`path` and a relative pattern such as '**/*.py' in `pattern`.",
        )
    if ".." in norm.split("/") or "\x00" in norm:
        raise tool_error(
            "permission",
            "path_refused",
            f"{field} {pattern!r} contains '..' (or a NUL byte); patterns cannot leave the workspace. Use a pattern "
            "below the search directory.",
        )
    try:
        return glob_to_regex(norm)
    except re.error as exc:
        raise tool_error("validation", "invalid_glob", f"{field} {pattern!r} is not a valid glob ({exc}).") from None


@contextlib.contextmanager
def cancellable() -> Generator[threading.Event]:
    event = threading.Event()
    try:
        yield event
    finally:
        event.set()
