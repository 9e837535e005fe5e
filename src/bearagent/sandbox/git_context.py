"""The git facts of the system prompt's environment section (as Claude Code gives them): the current branch, a
status summary and the recent commits of the repository the workspace is in, read through the hardened runner
(`sandbox/git_run.py`). Bounded: at most `MAX_STATUS_LINES` status lines and `MAX_COMMITS` commits, each line at
most `MAX_LINE_CHARS`, with a count of what was left out; control characters are removed (a commit subject and a
file name are workspace content). None when the workspace is in no repository, git is missing, or the runner
refuses the repository (its reason is one line of the section instead, so the model is told why)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from bearagent.sandbox.git_run import git_run

MAX_STATUS_LINES = 30
MAX_COMMITS = 5
MAX_LINE_CHARS = 200
TIMEOUT_S = 3.0
STATUS_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class GitFacts:
    branch: str | None = None
    status: tuple[str, ...] = ()
    status_left_out: int = 0
    commits: tuple[str, ...] = ()
    refused: str | None = None

    def section_lines(self) -> list[str]:
        """Lines of the environment section (without a leading `- `)."""
        if self.refused is not None:
            return [f"Git: not read ({self.refused})"]
        lines = [f"Git branch: {self.branch or '(detached HEAD)'}"]
        if self.status:
            count = f"{len(self.status) + self.status_left_out} changed"
            if self.status_left_out:
                count += f", {len(self.status)} shown, {self.status_left_out} more left out"
            lines.append(f"Git status ({count}): " + "; ".join(self.status))
        else:
            lines.append("Git status: clean")
        if self.commits:
            lines.append("Recent commits: " + "; ".join(self.commits))
        return lines


def _clean(text: str) -> str:
    flat = "".join(c if c.isprintable() else " " for c in text).rstrip()
    return flat if len(flat) <= MAX_LINE_CHARS else flat[: MAX_LINE_CHARS - 1] + "…"


def git_facts(root: Path, *, timeout_s: float = TIMEOUT_S) -> GitFacts | None:
    """The git facts of `root` (see the module docstring); never raises."""
    deadline = time.monotonic() + timeout_s

    def left() -> float:
        return max(0.2, deadline - time.monotonic())

    inside = git_run(["rev-parse", "--is-inside-work-tree"], cwd=root, timeout_s=left())
    if not inside.ok:
        reason = inside.reason or ""
        if reason.startswith(("not run:", "git refuses")):
            return GitFacts(refused=reason)
        return None  # not a repository, or no git: nothing to say
    if inside.text.strip() != "true":
        return None
    branch = git_run(["symbolic-ref", "--short", "-q", "HEAD"], cwd=root, timeout_s=left(), max_bytes=4096)
    status = git_run(
        ["status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames"],
        cwd=root,
        timeout_s=left(),
        max_bytes=STATUS_BYTES,
    )
    records = [r for r in status.stdout.split(b"\0") if r] if status.ok else []
    if status.truncated and records:
        records = records[:-1]
    shown = [_clean(r.decode("utf-8", "replace")) for r in records[:MAX_STATUS_LINES]]
    left_out = len(records) - len(shown) if not status.truncated else max(len(records) - len(shown), 1)
    log = git_run(
        ["log", f"-{MAX_COMMITS}", "--no-color", "--format=%h %s"],
        cwd=root,
        timeout_s=left(),
        max_bytes=MAX_COMMITS * (MAX_LINE_CHARS * 4 + 64),
    )
    commits = tuple(_clean(line) for line in log.text.splitlines() if line.strip())[:MAX_COMMITS] if log.ok else ()
    name = _clean(branch.text) if branch.ok and branch.text.strip() else None
    return GitFacts(branch=name, status=tuple(shown), status_left_out=left_out, commits=commits)
