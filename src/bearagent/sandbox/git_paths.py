"""What git reads as configuration or runs, inside a tree the shell may write: the paths the sandbox mounts read-only
so that nothing a sandboxed command writes makes a later `git status` (run by the user, unconfined) run code or read
another config.

Git takes configuration and code from more places than `.git/config` and `.git/hooks`: `.git/commondir` and a
`.git` file (`gitdir:`) choose another git directory (and so another config), `.git/modules/<name>/` holds each
submodule's config, a directory at a submodule's path that gains a `.git` is recursed into by `git status`, an
`include.path` / `includeIf.*.path` pulls in another file, `core.hooksPath` names a hook directory, and many keys
name a program (`core.fsmonitor`, `core.pager`, filter drivers, `diff.external`, ...). The rule:

- the whole git directory of the tree (`.git`, or the `.git` file and its `gitdir:` target, and the `commondir`
  target) is read-only (`git_protected_paths`; the user's `sandbox.git: writable` keeps the old, narrower set:
  only `.git/config` and `.git/hooks`);
- so is every nested repository's (`<dir>/.git` anywhere below, found by a bounded walk) and every submodule path's
  `.git`: a submodule path without one gets a read-only placeholder, so no command can populate it with a hostile
  repository;
- a tree that is no repository gets placeholders for `.git` and for `HEAD` (no bare-repository takeover at the top);
- every file or directory inside the tree that a git config the user's git reads names (include paths, hooks
  path, programs and the files their command lines name) is read-only too.

Bounded: at most `MAX_WALK_DIRS` directories are walked for nested repositories, `MAX_CONFIG_FILES` config files
read (each at most `MAX_CONFIG_BYTES`), `MAX_SUBMODULE_DEPTH` levels of submodules followed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path

from bearagent.sandbox.git_run import git_run

MAX_WALK_DIRS = 20_000
MAX_CONFIG_FILES = 64
MAX_CONFIG_BYTES = 1 << 20
MAX_SUBMODULE_DEPTH = 4
SKIP_WALK = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", "target"})
"""Directories the walk for nested repositories does not enter: git's own, and the big generated trees (a nested
repository there is not one git would recurse into from the workspace; the user does not run git inside them)."""
GIT_DIR_NAMES = (".git",)
WRITABLE_GIT = (".git/config", ".git/hooks")
"""Under `sandbox.git: writable` (user config): the narrower set protected before issue 28."""

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _rel(path: Path, root: Path) -> str | None:
    try:
        real = Path(os.path.realpath(path))
    except OSError:
        return None
    if not _inside(real, root) or real == root:
        return None
    return real.relative_to(root).as_posix()


def _gitdir_of(dot_git: Path) -> Path | None:
    """The git directory a `.git` entry stands for: itself when a directory, the `gitdir:` target of a file."""
    if dot_git.is_dir():
        return dot_git
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    return Path(os.path.normpath(dot_git.parent / target)) if not target.is_absolute() else target


def _commondir(gitdir: Path) -> Path | None:
    try:
        raw = (gitdir / "commondir").read_text(encoding="utf-8", errors="replace")[:4096].strip()
    except OSError:
        return None
    if not raw:
        return None
    target = Path(raw)
    return Path(os.path.normpath(gitdir / target)) if not target.is_absolute() else target


def _repository_dirs(gitdir: Path) -> list[Path]:
    """The git directory and the common directory it points to (a linked worktree's)."""
    out = [gitdir]
    common = _commondir(gitdir)
    if common is not None:
        out.append(common)
    return out


def _nested_dot_gits(root: Path) -> list[Path]:
    """Every `.git` entry below `root` (not `root/.git`), by a bounded walk that follows no symlink."""
    found: list[Path] = []
    budget = MAX_WALK_DIRS
    stack = [root]
    while stack and budget > 0:
        current = stack.pop()
        budget -= 1
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            if entry.name in GIT_DIR_NAMES:
                if current != root:
                    found.append(Path(entry.path))
                continue
            if entry.name in SKIP_WALK:
                continue
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
    return found


def _gitlinks(worktree: Path) -> list[str]:
    """The submodule paths (gitlinks, mode 160000) in the index of the repository at `worktree`, relative to it;
    read with git itself (fsmonitor off, so reading runs nothing), plus the paths `.gitmodules` names."""
    out: list[str] = []
    # the index only: no filter, hook or fsmonitor runs, so the local config need not be checked first
    done = git_run(
        ["ls-files", "--stage", "-z"], cwd=worktree, timeout_s=20, max_bytes=64 << 20, check_local_config=False
    )
    records = done.stdout.split(b"\0") if done.ok or done.truncated else []
    for record in records[:-1] if done.truncated else records:
        if record.startswith(b"160000 "):
            out.append(record.split(b"\t", 1)[-1].decode("utf-8", "replace"))
    for section, name, value in _config_entries(worktree / ".gitmodules"):
        if section == "submodule" and name == "path" and value:
            out.append(value)
    return list(dict.fromkeys(p for p in out if p and not p.startswith("/") and ".." not in p.split("/")))


def _config_entries(path: Path) -> list[tuple[str, str, str]]:
    """(section, key, value) of one git config file, keys lower case, the subsection folded into the section name
    as `section.sub` only for `includeIf`; a value's quotes removed. Best effort; never raises."""
    try:
        with path.open("rb") as handle:
            text = handle.read(MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except OSError:
        return []
    out: list[tuple[str, str, str]] = []
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        match = _SECTION.match(stripped)
        if match:
            section = match.group(1).lower()
            rest = match.group(3)
            if not rest:
                continue
            stripped = rest
        key = _KEY.match(stripped)
        if key is None:
            continue
        value = (key.group(2) or "").strip()
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            value = value[1:-1]
        out.append((section, key.group(1).lower(), value))
    return out


def _words(value: str) -> list[str]:
    """The words of a command-like config value, splitting `sh -c` strings and `--opt=path` too."""
    pending = [value.lstrip("!")]
    words: list[str] = []
    while pending and len(words) < 256:
        text = pending.pop()
        try:
            parts = shlex.split(text)
        except ValueError:
            parts = text.split()
        for part in parts:
            if any(c.isspace() for c in part) and part != text:
                pending.append(part)
            elif "=" in part:
                words.extend(part.split("=", 1))
            else:
                words.append(part)
    return words


def _expand(word: str, home: Path | None) -> str:
    if home is not None and (word == "~" or word.startswith("~/")):
        return str(home) + word[1:]
    return word


def config_files(gitdirs: Iterable[Path], env: Mapping[str, str]) -> list[Path]:
    """The config files git reads for these git directories: system, global (`~/.gitconfig`, XDG), each git
    directory's `config` and `config.worktree`."""
    home = env.get("HOME")
    xdg = env.get("XDG_CONFIG_HOME") or (f"{home}/.config" if home else None)
    out = [Path("/etc/gitconfig")]
    if home:
        out.append(Path(home) / ".gitconfig")
    if xdg:
        out.append(Path(xdg) / "git" / "config")
    for gitdir in gitdirs:
        out += [gitdir / "config", gitdir / "config.worktree"]
    return out


def referenced_paths(configs: Iterable[Path], worktree: Path, env: Mapping[str, str]) -> list[Path]:
    """Every existing path a config names (include files, followed; the hooks path; programs and the files their
    command lines name), resolved as git resolves it: relative to the config file (includes), else to the
    worktree (commands run there)."""
    return referenced_paths_of([(config, worktree) for config in configs], env)


def referenced_paths_of(configs: Iterable[tuple[Path, Path]], env: Mapping[str, str]) -> list[Path]:
    """`referenced_paths` for (config, worktree) pairs: each config's relative program and hook paths resolve
    against its own repository's worktree (a submodule's, a nested repository's, the enclosing repository's top).
    At most `MAX_CONFIG_FILES` (config, worktree) pairs are read."""
    raw_home = env.get("HOME")
    home = Path(raw_home) if raw_home else None
    pending = list(configs)
    seen: set[tuple[Path, Path]] = set()
    out: list[Path] = []
    while pending and len(seen) < MAX_CONFIG_FILES:
        config, worktree = pending.pop(0)
        if (config, worktree) in seen:
            continue
        seen.add((config, worktree))
        for section, key, value in _config_entries(config):
            if not value:
                continue
            if key == "hookspath":
                target = Path(_expand(value, home))
                out.append(target if target.is_absolute() else worktree / target)
                continue
            if key == "path" and section in ("include", "includeif"):
                target = Path(_expand(value, home))
                target = target if target.is_absolute() else config.parent / target
                out.append(target)
                pending.append((target, worktree))
                continue
            for word in _words(value):
                word = _expand(word, home)
                if not word or word.startswith("-"):
                    continue
                candidate = Path(word) if word.startswith("/") else worktree / word
                with contextlib.suppress(OSError):
                    if os.path.lexists(candidate) and ("/" in word or candidate.is_file()):
                        out.append(candidate)
    return out


def git_protected_paths(
    base: Path, env: Mapping[str, str], *, writable_git: bool = False, nested: bool = True
) -> list[str]:
    """The paths under `base` (relative, `/`-separated) that the sandbox makes read-only (or, missing, covers with
    a placeholder) so that git neither reads a config nor runs a program a command wrote. `base` is real. Without
    `nested`, submodule paths and nested repositories are not looked for (the file tools refuse every `.git`
    anyway: `tools.protected`)."""
    out: list[str] = list(WRITABLE_GIT) if writable_git else [".git"]
    dot_git = base / ".git"
    gitdirs: list[Path] = []
    sources: list[tuple[Path, Path]] = []  # (git directory, the worktree its config's relative paths resolve in)
    if os.path.lexists(dot_git):
        gitdir = _gitdir_of(dot_git)
        if gitdir is not None:
            gitdirs += _repository_dirs(gitdir)
            sources += [(d, base) for d in _repository_dirs(gitdir)]
    else:
        top = _enclosing_top(base)
        if top is None:
            if not writable_git:
                out.append("HEAD")  # a bare repository at the top of a tree that is no repository
        else:
            # the workspace is a directory of a bigger repository: git reads that repository's config, whose
            # programs and hooks path are relative to its top and may name files inside the workspace
            gitdir = _gitdir_of(top / ".git")
            if gitdir is not None:
                gitdirs += _repository_dirs(gitdir)
                sources += [(d, top) for d in _repository_dirs(gitdir)]
    worktrees: list[tuple[Path, int]] = [(base, 0)] if nested else []
    while worktrees:
        worktree, depth = worktrees.pop()
        if depth >= MAX_SUBMODULE_DEPTH:
            continue
        for link in _gitlinks(worktree):
            sub = worktree / link
            rel = _rel(sub, base) if os.path.lexists(sub) else (sub.relative_to(base).as_posix())
            if rel is None:
                continue
            out.append(f"{rel}/.git")
            if os.path.lexists(sub / ".git"):
                gitdir = _gitdir_of(sub / ".git")
                if gitdir is not None:
                    gitdirs += _repository_dirs(gitdir)
                    sources += [(d, sub) for d in _repository_dirs(gitdir)]
                worktrees.append((sub, depth + 1))
    for dot_git_below in _nested_dot_gits(base) if nested else []:
        rel = _rel(dot_git_below.parent, base)
        if rel is not None:
            out.append(f"{rel}/.git")
        gitdir = _gitdir_of(dot_git_below)
        if gitdir is not None:
            gitdirs += _repository_dirs(gitdir)
            sources += [(d, dot_git_below.parent) for d in _repository_dirs(gitdir)]
    for directory in gitdirs:
        rel = _rel(directory, base)
        if rel is not None and not writable_git:
            out.append(rel)
    pairs: list[tuple[Path, Path]] = []
    worktrees_seen = list(dict.fromkeys(worktree for _, worktree in sources)) or [base]
    for worktree in worktrees_seen:
        own = [d for d, w in sources if w == worktree]
        pairs += [(config, worktree) for config in config_files(dict.fromkeys(own), env)]
    for path in referenced_paths_of(dict.fromkeys(pairs), env):
        rel = _rel(path, base) if os.path.lexists(path) else None
        if rel is not None:
            out.append(rel)
    return list(dict.fromkeys(out))


def _enclosing_top(base: Path) -> Path | None:
    """The nearest directory above `base` with a `.git` (git finds that repository from `base`, not a bare one at
    `base`), or None."""
    return next((parent for parent in base.parents if os.path.lexists(parent / ".git")), None)


def bare_repository_reason(root: Path, rel: str) -> str | None:
    """Why writing the root-relative `rel` writes a bare repository git would take as one (and read its config,
    run its hooks and pager when the user runs git there): a directory on the way that has, or with this write
    gets, a `HEAD`, `objects/` and `refs/`; None otherwise."""
    parts = [p for p in rel.replace("\\", "/").split("/") if p and p != "."]
    for end in range(len(parts) - 1, 0, -1):
        directory = root.joinpath(*parts[:end])
        below = parts[end:]
        head = os.path.lexists(directory / "HEAD") or below == ["HEAD"]
        objects = (directory / "objects").is_dir() or below[0] == "objects"
        refs = (directory / "refs").is_dir() or below[0] == "refs"
        if head and objects and refs:
            return f"{'/'.join(parts[:end])}/ is (or this write makes it) a bare git repository, whose config git reads"
    return None


def git_control_reason(root: Path, rel: str) -> str | None:
    """Why the workspace-relative `rel` is a file git reads as configuration or runs (one of `git_protected_paths`
    of the workspace, or a bare repository's), for the file tools; None for an ordinary file."""
    bare = bare_repository_reason(root, rel)
    if bare is not None:
        return bare
    wanted = rel.replace("\\", "/").strip("/").casefold()
    for path in git_protected_paths(Path(os.path.realpath(root)), os.environ, nested=False):
        key = path.casefold()
        if wanted == key or wanted.startswith(key + "/"):
            return f"git reads or runs {path} (a git config names it, or it is a repository's own)"
    return None
