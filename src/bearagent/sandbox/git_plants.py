"""Repositories a sandboxed command creates or changes (issue 28, item 1): checked when the call ends, disarmed when
git would run anything of theirs outside the sandbox.

`git_paths` makes every repository that exists when a call starts read-only. A command can still create a new one
(`git init sub`, a bare repository's `HEAD` + `objects/` + `refs/`, a `.git` file or symlink) and put a program in
its config or hooks. The workspace's `git status` lists such a directory as untracked and reads nothing of it, but
the user's usual `git add -A` adds it as a gitlink, and from then on every `git status` / `diff` / `commit` of the
workspace runs git inside it, with its config (`core.fsmonitor`, ...), unconfined. So when a call ends, every
repository below the workspace that is new or whose config, hooks or pointers changed since the call started must
be *inert*: a git directory (no `.git` file, no symlink), no `commondir` or `config.worktree`, only `*.sample`
hooks, and a config whose every key is on `INERT_KEYS` (what `git init` and `git clone` write). One that is not is
renamed (`.git` to `.git.quarantined-by-bearagent`, a bare repository's `HEAD` to `HEAD.quarantined-by-bearagent`),
which makes it no repository for git, and the call's result says so. The model's files stay as they are.

Bounded: at most `MAX_WALK_DIRS` directories are walked (the generated trees `git_paths` skips after the rest, to
`SKIPPED_TREE_DEPTH` levels), a config is read up to `MAX_CONFIG_BYTES`; a config larger than that is not inert.
Deeper than that, git itself lists the nested repositories below the workspace (`_git_would_add`: untracked, at
any depth, **ignored ones too**), so a repository planted deep in a `node_modules` or `.venv` is checked whether or
not git ignores that tree: an ignored tree is harmless only until it is un-ignored (the user vendors it and edits
`.gitignore`, or the model rewrites `.gitignore` with the Write tool, after which no sandboxed call ends), and then
the user's `git add -A` would make the plant a gitlink.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bearagent.sandbox.git_paths import SKIP_WALK
from bearagent.sandbox.git_run import git_command, git_env

MAX_WALK_DIRS = 40_000
MAX_CONFIG_BYTES = 64 * 1024
MAX_HOOK_ENTRIES = 256
SKIPPED_TREE_DEPTH = 3
"""How deep the walk looks into the generated trees `git_paths` skips (`node_modules/@scope/pkg`): a repository
deeper there is not one git would add from the workspace (they are ignored, and walking them whole costs a
virtual environment's thousands of directories at every call)."""
QUARANTINE_SUFFIX = ".quarantined-by-bearagent"
INERT_KEYS = frozenset(
    {
        "core.repositoryformatversion",
        "core.filemode",
        "core.bare",
        "core.logallrefupdates",
        "core.ignorecase",
        "core.precomposeunicode",
        "core.symlinks",
        "remote.url",
        "remote.fetch",
        "remote.pushurl",
        "branch.remote",
        "branch.merge",
        "branch.rebase",
        "user.name",
        "user.email",
        "extensions.objectformat",
        "extensions.refstorage",
    }
)
"""`section.key` (subsection dropped) a new repository's config may set: what `git init` and `git clone` write, and
an identity. Everything else (programs, includes, hook paths, filters, submodule update commands, ...) is not
inert."""

_SECTION = re.compile(r'^\[\s*([A-Za-z0-9-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")

Stamp = tuple[tuple[str, int, int, int, int] | None, ...]


@dataclass(frozen=True, slots=True)
class Repositories:
    """The repositories below a root when a call starts: path (relative) to a stamp of what git reads of it."""

    root: Path
    stamps: dict[str, Stamp]


def _stat(path: Path) -> tuple[str, int, int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if os.path.isdir(path) and not os.path.islink(path):
        return (path.name, st.st_ino, 0, 0, st.st_mode)  # what it holds is stamped on its own
    return (path.name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)


def _stamp(entry: Path) -> Stamp:
    """What git reads of the repository at `entry` (a `.git` entry, or a bare repository's directory)."""
    gitdir = entry
    parts: list[tuple[str, int, int, int, int] | None] = [_stat(entry)]
    if entry.is_symlink() or not entry.is_dir():
        return tuple(parts)
    for name in ("config", "config.worktree", "commondir", "hooks"):
        parts.append(_stat(gitdir / name))
    with contextlib.suppress(OSError):
        for index, hook in enumerate(sorted(os.scandir(gitdir / "hooks"), key=lambda e: e.name)):
            if index >= MAX_HOOK_ENTRIES:
                parts.append(None)
                break
            parts.append(_stat(Path(hook.path)))
    return tuple(parts)


def _is_bare(directory: Path, names: set[str]) -> bool:
    """Whether git would take `directory` for a (bare) git directory: a `HEAD`, `objects/` and `refs/`."""
    return "HEAD" in names and (directory / "objects").is_dir() and (directory / "refs").is_dir()


def _walk(root: Path) -> list[Path]:
    """Every repository entry below `root` (not `root/.git` nor `root` itself): `<dir>/.git` of any type, and bare
    repository directories; the generated trees after the rest; no symlink followed."""
    found: list[Path] = []
    budget = MAX_WALK_DIRS
    stack: list[tuple[Path, int]] = [(root, 0)]
    later: list[tuple[Path, int]] = []
    while (stack or later) and budget > 0:
        current, depth = stack.pop() if stack else later.pop()
        budget -= 1
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        names = {e.name for e in entries}
        if current != root and _is_bare(current, names):
            found.append(current)
            continue
        for entry in entries:
            if entry.name == ".git":
                if current != root:
                    found.append(Path(entry.path))
                continue
            with contextlib.suppress(OSError):
                if not entry.is_dir(follow_symlinks=False):
                    continue
                if depth:  # inside a generated tree: only its first levels (`node_modules/@scope/pkg/.git`)
                    if depth < SKIPPED_TREE_DEPTH:
                        later.append((Path(entry.path), depth + 1))
                elif entry.name in SKIP_WALK:
                    later.append((Path(entry.path), 1))
                else:
                    stack.append((Path(entry.path), 0))
    seen = set(found)
    found += [p for p in _git_would_add(root) if p not in seen]
    return found


MAX_GIT_LISTING_BYTES = 512 << 20
"""How much of git's listing of untracked files is read (streamed, only the directories kept): some 8 million
paths."""


def _untracked_directories(root: Path, env: dict[str, str]) -> tuple[list[bytes], int | None]:
    """`git ls-files --others -z` in `root`: the directory records (`path/`, a nested repository) and git's exit
    status (None when the listing was cut at `MAX_GIT_LISTING_BYTES`)."""
    proc = subprocess.Popen(
        # the hardened runner's argument vector and environment (sandbox/git_run.py: fsmonitor off, no system
        # config, no prompt); streamed here rather than through git_run, since only directory records are kept
        git_command(["ls-files", "--others", "-z"]),
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**git_env(), **env},
    )
    records: list[bytes] = []
    total = 0
    try:
        assert proc.stdout is not None
        rest = b""
        while total < MAX_GIT_LISTING_BYTES and (chunk := proc.stdout.read(1 << 20)):
            total += len(chunk)
            *done, rest = (rest + chunk).split(b"\0")
            records += [r for r in done if r.endswith(b"/")]  # a file is never a repository: dropped at once
    finally:
        proc.kill()
        proc.wait(timeout=20)
    return records, (None if total >= MAX_GIT_LISTING_BYTES else proc.returncode)


NOT_A_REPOSITORY = 128
"""git's exit status when the directory is in no repository."""


def _git_would_add(root: Path) -> list[Path]:
    """The nested repositories git itself sees below `root` as untracked, ignored or not (what `git add -A` makes
    gitlinks, now or once `.gitignore` changes), at any depth, in the generated trees too: `git ls-files --others`
    without excludes lists each as `path/`. When `root` is in no repository, git lists it against an empty
    repository of its own (what a later `git init && git add -A` would add). The workspace's own config is
    read-only in the sandbox and fsmonitor is off, so this runs nothing; the listing is streamed, up to
    `MAX_GIT_LISTING_BYTES`."""
    out: list[Path] = []
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        records, status = _untracked_directories(root, {})
        if status == NOT_A_REPOSITORY and not records:
            with tempfile.TemporaryDirectory(prefix="bearagent-git-") as empty:
                subprocess.run(
                    git_command(["init", "-q", "--bare", empty]),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=20,
                    check=True,
                    env={**git_env(), "GIT_TEMPLATE_DIR": ""},
                )
                records, _ = _untracked_directories(root, {"GIT_DIR": empty, "GIT_WORK_TREE": str(root)})
        for record in records:
            directory = root / os.fsdecode(record.rstrip(b"/"))
            if ".." in Path(os.fsdecode(record)).parts:
                continue
            if os.path.lexists(directory / ".git"):
                out.append(directory / ".git")
    return out


def snapshot(root: Path) -> Repositories:
    """The repositories below `root` (real) as the call starts."""
    return Repositories(root, {p.relative_to(root).as_posix(): _stamp(p) for p in _walk(root)})


def _config_reason(config: Path) -> str | None:
    try:
        st = os.lstat(config)
    except FileNotFoundError:
        return None
    except OSError:
        return "its config cannot be read"
    if not os.path.isfile(config) or config.is_symlink():
        return "its config is not a regular file"
    if st.st_size > MAX_CONFIG_BYTES:
        return f"its config is larger than {MAX_CONFIG_BYTES} bytes"
    try:
        text = config.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return "its config is not UTF-8 text"
    section = ""
    for raw in text.split("\n"):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        match = _SECTION.match(line)
        if match:
            section = match.group(1).lower()
            line = match.group(3).strip()
            if not line or line[0] in "#;":
                continue
        key = _KEY.match(line)
        if key is None or not section:
            return f"its config has a line git may read differently: {raw.strip()[:80]!r}"
        name = f"{section}.{key.group(1).lower()}"
        if name not in INERT_KEYS:
            return f"its config sets {name}"
        value = (key.group(2) or "").strip()
        if value.endswith("\\"):
            return f"its config continues {name} on the next line"
        if name.startswith("remote.") and "::" in value:
            return f"its config sets {name} to a transport helper ({value[:80]!r})"
    return None


def hostile_reason(entry: Path) -> str | None:
    """Why git could run code or read another config through the repository at `entry`; None when it is inert."""
    if entry.is_symlink():
        return f"{entry.name} is a symlink (git follows it to another git directory)"
    if not entry.is_dir():
        return f"{entry.name} is a file (a gitdir: pointer to another git directory)"
    for name in ("commondir", "config.worktree"):
        if os.path.lexists(entry / name):
            return f"it has a {name} (git reads another directory's or file's config)"
    hooks = entry / "hooks"
    if os.path.lexists(hooks):
        if hooks.is_symlink() or not hooks.is_dir():
            return "its hooks directory is not a directory"
        with contextlib.suppress(OSError):
            for hook in os.scandir(hooks):
                if not hook.name.endswith(".sample"):
                    return f"it has a hook: hooks/{hook.name}"
    return _config_reason(entry / "config")


def _quarantine(path: Path) -> Path | None:
    for n in range(100):
        target = path.with_name(path.name + QUARANTINE_SUFFIX + (f".{n}" if n else ""))
        if not os.path.lexists(target):
            try:
                os.rename(path, target)
            except OSError:
                return None
            return target
    return None


def disarm(before: Repositories) -> list[str]:
    """Check every repository new or changed since `before`; quarantine the ones that are not inert. One note per
    repository quarantined (or that could not be), for the call's result."""
    root = before.root
    notes: list[str] = []
    for entry in _walk(root):
        rel = entry.relative_to(root).as_posix()
        if before.stamps.get(rel) == _stamp(entry):
            continue
        reason = hostile_reason(entry)
        if reason is None:
            continue
        bare = entry.name != ".git"
        moved = _quarantine(entry / "HEAD" if bare else entry)
        what = f"a bare repository at {rel}/" if bare else f"a repository at {rel}"
        if moved is None:
            notes.append(
                f"[BearAgent: {what} was created or changed by this command and {reason}, which git would run or "
                "read outside the sandbox; it could not be renamed: do not run git in or above it before removing "
                "it.]"
            )
        else:
            notes.append(
                f"[BearAgent: {what} was created or changed by this command and {reason}, which git would run or "
                f"read outside the sandbox. It was disabled: renamed to {moved.relative_to(root).as_posix()} "
                "(see docs/sandbox.md, 'Git's files').]"
            )
    return notes
