"""Render every command's `--help` as Markdown (the source of docs/cli.md, checked by the tests)."""

from __future__ import annotations

import click

WIDTH = 100


def _context(command: click.Command, path: list[str], parent: click.Context | None) -> click.Context:
    """The context a real invocation builds: the root's `context_settings` (e.g. `-h` as a help option) apply, and
    subcommands inherit them, so the page shows what users see (and does not depend on what ran before)."""
    settings = dict(command.context_settings) if parent is None else {}
    settings.update(terminal_width=WIDTH, max_content_width=WIDTH)
    return click.Context(command, info_name=path[-1], parent=parent, **settings)


def _walk(command: click.Command, path: list[str], parent: click.Context | None, out: list[str]) -> None:
    ctx = _context(command, path, parent)
    title = " ".join(path)
    out.append(f"## `{title}`\n\n```text\n{command.get_help(ctx).rstrip()}\n```\n")
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                _walk(sub, [*path, name], ctx, out)


def render_cli_docs(root: click.Command) -> str:
    out: list[str] = [
        "# Command line reference\n",
        "Generated from the commands' own `--help` by `uv run python scripts/gen_cli_docs.py`; a test fails when this",
        "page and the code disagree. Exit codes of the commands that run agents: 0 success, 1 the run failed or was",
        "cancelled, 2 usage or configuration error, 3 a budget stopped the run, 4 the run waits for an approval",
        "(`--wait-approvals`; answer it with `bearagent approvals answer`). `NO_COLOR` and non-TTY output are",
        "respected everywhere. The interactive session (`bearagent` alone: keys, slash commands, the status line,",
        "and a captured screen of a real session) is described in [terminal.md](terminal.md).\n",
    ]
    _walk(root, ["bearagent"], None, out)
    return "\n".join(out)
