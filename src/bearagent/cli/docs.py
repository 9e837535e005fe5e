"""Render every command's `--help` as Markdown (the source of docs/cli.md, checked by the tests)."""

from __future__ import annotations

import click

WIDTH = 100


def _help(command: click.Command, path: list[str], parent: click.Context | None) -> str:
    ctx = click.Context(command, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH)
    return command.get_help(ctx)


def _walk(command: click.Command, path: list[str], parent: click.Context | None, out: list[str]) -> None:
    ctx = click.Context(command, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH)
    title = " ".join(path)
    out.append(f"## `{title}`\n\n```text\n{_help(command, path, parent).rstrip()}\n```\n")
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
        "cancelled, 2 usage or configuration error, 3 a budget stopped the run. `NO_COLOR` and non-TTY output are",
        "respected everywhere.\n",
    ]
    _walk(root, ["bearagent"], None, out)
    return "\n".join(out)
