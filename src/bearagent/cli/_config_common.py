"""Shared helpers of the commands (agents, skills, actions, models, tools, plugins, doctor, init, and the read
commands of the run log): the `-w/--workspace` and `--json` options, loading the workspace, opening its store for one
command (`open_command_store`), errors (what + how to fix, exit 2) and tables that respect NO_COLOR and non-TTY
output."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Protocol, TypeVar

import click

from bearagent.domain.diagnostics import name_list

if TYPE_CHECKING:
    from bearagent.config.layers import Resolved
    from bearagent.domain.diagnostics import Diagnostic
    from bearagent.ports import WorkspaceStore
    from bearagent.registries._base import LayeredRegistry
    from bearagent.workspace import LoadedWorkspace


class Listed(Protocol):
    """What the list commands show of every agent, skill and action."""

    @property
    def level(self) -> str: ...
    @property
    def description(self) -> str: ...


EXIT_CONFIG = 2
F = TypeVar("F", bound=Callable[..., object])
T = TypeVar("T")
L = TypeVar("L", bound=Listed)


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
    from bearagent.domain.errors import BearAgentError
    from bearagent.workspace import load_workspace

    if workspace is not None and not workspace.is_dir():
        fail(f"workspace directory {workspace} does not exist", "pass an existing directory to -w/--workspace")
    try:
        return load_workspace(workspace)
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)


def open_command_store(loaded: LoadedWorkspace) -> WorkspaceStore:
    """The workspace's store for one command, closed when the command ends, however it ends (output, `fail`, an
    error): an unclosed PostgreSQL store keeps its pooled connections and its loop thread, for ever in a process
    that invokes commands in-process, and its pending tasks are destroyed at exit with a warning on stderr. Never
    creates a store (`create=False`: a read of a workspace where nothing has run is `no_state`). Raises
    `BearAgentError` as `open_store` does."""
    from bearagent.app.stores import open_store

    store = open_store(loaded, create=False)
    context = click.get_current_context(silent=True)
    if context is not None:
        context.call_on_close(store.close)
    return store


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
    wrap_at = 0
    if sys.stdout.isatty() and widths:  # on a terminal (NO_COLOR, TERM=dumb) the last column wraps to fit
        room = shutil.get_terminal_size((100, 24)).columns - sum(widths[:-1]) - 2 * (len(widths) - 1) - 1
        if room >= 10 and widths[-1] > room:
            widths[-1] = wrap_at = room
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    indent = " " * (sum(widths[:-1]) + 2 * (len(widths) - 1))
    for row in rows:
        last = textwrap.wrap(row[-1], wrap_at, break_on_hyphens=False) or [""] if wrap_at else [row[-1]]
        cells = [*row[:-1], last[0]]
        click.echo("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
        for more in last[1:]:
            click.echo(indent + more)


DESCRIPTION_CHARS = 400
"""How much of a description a table shows (whitespace folded onto one line); the table wraps it to the terminal."""


def short(text: str, limit: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def rel(path: str, root: Path) -> str:
    """`path` for a table: relative to the workspace `root`, else `~/...` under the home directory, else from the
    installed package on (`…/site-packages/bearagent/...`), else as it is."""
    target = Path(path)
    try:
        return str(target.relative_to(root))
    except ValueError:
        pass
    try:
        return str(Path("~") / target.relative_to(Path.home()))
    except (ValueError, RuntimeError):
        pass
    parts = target.parts
    if "site-packages" in parts:
        return str(Path("…", *parts[parts.index("site-packages") :]))
    return path


def diag_json(d: Diagnostic) -> dict[str, object]:
    return d.model_dump(mode="json")


def problems(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics a list command reports (all but `info`)."""
    return [d for d in diags if d.severity != "info"]


def print_diagnostics(diags: Sequence[Diagnostic], *, heading: str | None = None) -> None:
    if not diags:
        return
    if heading:
        click.echo(heading)
    from bearagent.config.diag_summary import group_diagnostics

    for group in group_diagnostics(diags):  # the same problem in many files: one entry with a count
        click.echo(group.first.render() if group.count == 1 else group.render())


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
    fail(f"no {kind} named {name!r}{hint}", f"`bearagent {kind}s list` shows the {kind}s: {name_list(names) or 'none'}")


def resolve_shown(kind: str, registry: LayeredRegistry[T], name: str) -> tuple[Resolved[T], list[Diagnostic]]:
    """The entry `show` prints and the diagnostics about it; exits with what went wrong when there is none."""
    resolved = registry.resolved(name)
    if resolved is None:
        show_missing(kind, name, registry.names(), dict(registry.broken))
    return resolved, related(registry.diagnostics, path=resolved.path, name=name)


def emit_list_json(
    ws: LoadedWorkspace,
    key: str,
    registry: LayeredRegistry[T],
    entries: Sequence[Mapping[str, object]],
    diags: Sequence[Diagnostic],
    **extra: object,
) -> None:
    """`list --json`: the workspace, the entries under `key`, `extra`, the broken names and the diagnostics."""
    emit_json(
        {
            "workspace": str(ws.root),
            key: list(entries),
            **extra,
            "broken": {name: list(paths) for name, paths in registry.broken.items()},
            "diagnostics": [diag_json(d) for d in diags],
        }
    )


def entry_json(
    r: Resolved[L], root: Path, before: Mapping[str, object] | None = None, after: Mapping[str, object] | None = None
) -> dict[str, object]:
    """One entry of `list --json`: name, `before`, level, source, path, description, `after`, shadows."""
    return {
        "name": r.name,
        **(before or {}),
        "level": r.item.level,
        "source": r.source.id,
        "path": rel(r.path, root),
        "description": r.item.description,
        **(after or {}),
        "shadows": shadows_of(r, root),
    }


def entry_row(r: Resolved[L], root: Path, *middle: str) -> list[str]:
    """One table row of `list`: name, `middle`, source, path, what it shadows, description."""
    return [
        r.name,
        *middle,
        r.source.id,
        rel(r.path, root),
        ", ".join(c.source.id for c in r.shadows) or "-",
        short(r.item.description, DESCRIPTION_CHARS),
    ]


def broken_rows(broken: Mapping[str, tuple[str, ...]], root: Path, *, middle: int = 0) -> list[list[str]]:
    """Table rows for names defined twice in one source (`middle` blank columns after the name)."""
    return [
        [
            name,
            *["-"] * middle,
            "ERROR",
            "duplicate: " + ", ".join(rel(p, root) for p in paths),
            "-",
            "unusable until fixed",
        ]
        for name, paths in broken.items()
    ]


def emit_show_json(data: dict[str, object], resolved: Resolved[T], root: Path, diags: Sequence[Diagnostic]) -> None:
    """`show --json`: the item's fields plus where it comes from, what it shadows and its diagnostics."""
    data.update(
        source=resolved.source.id,
        path=resolved.path,
        shadows=shadows_of(resolved, root),
        diagnostics=[diag_json(d) for d in diags],
    )
    emit_json(data)


def origin_fields(resolved: Resolved[T]) -> list[tuple[str, str]]:
    """The `source` and `shadows` lines of `show`."""
    return [
        ("source", f"{resolved.source.id}  {resolved.path}"),
        ("shadows", "; ".join(f"{c.source.id} {c.path}" for c in resolved.shadows) or "-"),
    ]


def print_fields(fields: Sequence[tuple[str, object]], width: int) -> None:
    """`show`'s `key value` lines, keys padded to `width`."""
    for key, value in fields:
        click.echo(f"{key.ljust(width)} {value}")
