"""Diagnostics folded for people: the same warning from 140 files is one line with a count, not 140 lines.

`bearagent doctor` prints the folded groups (its `--json` keeps every diagnostic), and `bearagent run` and the
interactive session print the warnings at start (`run_start_lines`), so a misspelt key (`tool:` for `tools:`) is seen
where it matters, not only by those who run `doctor`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bearagent.domain.diagnostics import Diagnostic

MAX_NAMED_SOURCES = 3
MAX_RUN_START_LINES = 12


@dataclass(frozen=True, slots=True)
class DiagnosticGroup:
    """Diagnostics that say the same thing (severity, code, message and fix) about different files."""

    first: Diagnostic
    members: tuple[Diagnostic, ...]
    message: str

    @property
    def count(self) -> int:
        return len(self.members)

    def render(self, root: Path | None = None) -> str:
        """`where: severity: message` for one; `severity: message (N files: a, b, c and N-3 more)` for several."""
        if self.count == 1:
            d = self.first
            where = _short(d.source, root) or "<config>"
            if d.line is not None:
                where = f"{where}:{d.line}"
            text = f"{where}: {d.severity}: {d.message}"
        else:
            names = list(dict.fromkeys(_short(d.source, root) for d in self.members if d.source))
            shown = ", ".join(names[:MAX_NAMED_SOURCES])
            more = f" and {len(names) - MAX_NAMED_SOURCES} more" if len(names) > MAX_NAMED_SOURCES else ""
            text = f"{self.first.severity}: {self.message} ({len(names) or self.count} files: {shown}{more})"
        if self.first.fix:
            text += f"\n  fix: {self.first.fix}"
        return text


def _short(source: str, root: Path | None) -> str:
    if not source or root is None:
        return source
    path = Path(source)
    for base in (root, root.resolve()):
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    return source


def _message_key(d: Diagnostic) -> str:
    """The message without the per-file subject prefix (`agent 'x': ...`), so equal problems group."""
    if d.subject:
        for prefix in (f"agent {d.subject!r}: ", f"command /{d.subject}: "):
            if d.message.startswith(prefix):
                return d.message[len(prefix) :]
    return d.message


def group_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[DiagnosticGroup]:
    """Groups in first-seen order; a group's members are the diagnostics of equal severity, code, message and fix."""
    groups: dict[tuple[str, str, str, str], list[Diagnostic]] = {}
    for d in diagnostics:
        groups.setdefault((d.severity, d.code, _message_key(d), d.fix or ""), []).append(d)
    return [DiagnosticGroup(members[0], tuple(members), key[2]) for key, members in groups.items()]


ANNOUNCED_AT_RUN_START = frozenset({"model.from_environment"})
"""Infos `run` and the session say in one line before starting (the model chosen from the environment)."""


def run_start_lines(diagnostics: Sequence[Diagnostic], root: Path | None = None) -> list[str]:
    """What `run` and the interactive session print before starting: every warning, folded (at most
    MAX_RUN_START_LINES groups), and a count of the files skipped with an error."""
    warnings = [d for d in diagnostics if d.severity == "warning"]
    groups = group_diagnostics(warnings)
    lines: list[str] = [f"note: {d.message}" for d in diagnostics if d.code in ANNOUNCED_AT_RUN_START]
    for group in groups[:MAX_RUN_START_LINES]:
        head = group.render(root).split("\n", 1)[0]
        lines.append(f"{head} (fix: {group.first.fix})" if group.first.fix else head)
    if len(groups) > MAX_RUN_START_LINES:
        lines.append(f"… and {len(groups) - MAX_RUN_START_LINES} more warnings: `bearagent doctor` lists them")
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        files = {d.source for d in errors}
        lines.append(
            f"note: {len(errors)} error(s) in {len(files)} file(s) (those files were skipped): "
            "`bearagent doctor` lists them"
        )
    return lines
