"""The `bearagent` command group. Subcommands load lazily so `bearagent --help` stays fast."""

from __future__ import annotations

import importlib
from pathlib import Path

import click

from bearagent import __version__

# command name -> "module:attribute" of a click command; imported only when that command runs.
LAZY_COMMANDS: dict[str, str] = {
    "agents": "bearagent.cli.agents:agents",
    "skills": "bearagent.cli.skills:skills",
    "actions": "bearagent.cli.actions:actions",
    "models": "bearagent.cli.models:models",
    "tools": "bearagent.cli.tools:tools",
    "plugins": "bearagent.cli.plugins:plugins",
    "doctor": "bearagent.cli.doctor:doctor",
    "init": "bearagent.cli.init:init",
    "mcp": "bearagent.cli.mcp:mcp",
    "hooks": "bearagent.cli.hooks:hooks",
    "trust": "bearagent.cli.trust:trust",
    "run": "bearagent.cli.run:run",
    "runs": "bearagent.cli.runs:runs",
    "inspect": "bearagent.cli.runs:inspect",
    "events": "bearagent.cli.runs:events",
    "action": "bearagent.cli.action:action",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = LAZY_COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, "-V", "--version", prog_name="bearagent")
@click.option("-a", "--agent", default=None, help="Interactive session: the agent to start with.")
@click.option("-m", "--model", default=None, help="Interactive session: model ref instead of the agent's.")
@click.option(
    "-w",
    "--workspace",
    "workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Workspace directory (default: the nearest directory holding .bearagent/, else the current directory).",
)
@click.option("--continue", "continue_", is_flag=True, help="Interactive session: continue the latest session.")
@click.option("--session", default=None, help="Interactive session: continue the session with this id.")
@click.pass_context
def main(
    ctx: click.Context,
    agent: str | None,
    model: str | None,
    workspace: Path | None,
    continue_: bool,
    session: str | None,
) -> None:
    """BearAgent: agents as markdown files, every run an auditable event log.

    Without a command, starts an interactive session in the workspace (/help inside lists its commands).
    """
    if ctx.invoked_subcommand is None:
        from bearagent.cli.interactive import interactive_command

        interactive_command(ctx)
