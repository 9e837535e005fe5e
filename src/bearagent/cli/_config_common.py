"""Shared helpers of the config commands (agents, skills, actions, models, tools, plugins, doctor, init): the
`-w/--workspace` and `--json` options, loading the workspace, errors (what + how to fix, exit 2) and tables that
respect NO_COLOR and non-TTY output."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from bearagent.app import LoadedWorkspace
    from bearagent.config.layers import Resolved
    from bearagent.domain.diagnostics import Diagnostic

EXIT_CONFIG = 2
F = TypeVar("F", bound=Callable[..., object])
T = TypeVar("T")


def workspace_option(func: F) -> F:
    return click.option(
        "-w",
        "--workspace",
        "workspace",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Workspace directory (default: the nearest directory holding .bearagent/, else the current directory).",
    )(func)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(func)


def fail(what: str, fix: str | None, code: int = EXIT_CONFIG) -> NoReturn:
    click.echo(f"error: {what}", err=True)
    if fix:
        click.echo(f"fix: {fix}", err=True)
    sys.exit(code)


def load(workspace: Path | None) -> LoadedWorkspace:
    from bearagent.app import load_workspace
    from bearagent.domain.errors import BearAgentError

    if workspace is not None and not workspace.is_dir():
        fail(f"workspace directory {workspace} does not exist", "pass an existing directory to -w/--workspace")
    try:
        return load_workspace(workspace)
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)


def emit_json(value: object) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _use_rich() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, title: str | None = None) -> None:
    if _use_rich():
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title, show_lines=False, header_style="bold")
        for header in headers:
            table.add_column(header, overflow="fold")
        for row in rows:
            table.add_row(*row)
        Console().print(table)
        return
    if title:
        click.echo(title)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def short(text: str, limit: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def rel(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path


def diag_json(d: Diagnostic) -> dict[str, object]:
    return d.model_dump(mode="json")


def print_diagnostics(diags: Sequence[Diagnostic], *, heading: str | None = None) -> None:
    if not diags:
        return
    if heading:
        click.echo(heading)
    for d in diags:
        click.echo(d.render())


def shadows_of(resolved: Resolved[T], root: Path) -> list[dict[str, str]]:
    return [{"source": c.source.id, "path": rel(c.path, root)} for c in resolved.shadows]


def related(diags: Sequence[Diagnostic], *, path: str | None, name: str) -> list[Diagnostic]:
    return [d for d in diags if (path is not None and d.source == path) or d.subject == name]


def show_missing(kind: str, name: str, names: Sequence[str], broken: dict[str, tuple[str, ...]]) -> NoReturn:
    if name in broken:
        fail(
            f"{kind} {name!r} is defined more than once in one source: {', '.join(broken[name])}",
            "rename or delete all but one of those files",
        )
    import difflib

    close = difflib.get_close_matches(name, list(names), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    fail(f"no {kind} named {name!r}{hint}", f"`bearagent {kind}s list` shows the {kind}s: {', '.join(names) or 'none'}")
