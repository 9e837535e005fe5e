"""The `bearagent` command group. Subcommands load lazily so `bearagent --help` stays fast, and what their start-up
builds is frozen out of the cyclic garbage collector's way (`start_up_over`)."""

from __future__ import annotations

import importlib
from pathlib import Path

import click

from bearagent import __version__
from bearagent.cli._choice_flags import run_choice_options

# command name -> ("module:attribute" of a click command, one-line help). A command's module is imported only when
# that command runs; `bearagent --help` lists the one-line helps from this table without importing anything.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("bearagent.cli.run:run", "Run a prompt once, streamed (--json / --stream-json)."),
    "action": ("bearagent.cli.action:action", "Run named actions (action run NAME k=v...)."),
    "runs": ("bearagent.cli.runs:runs", "List the runs stored in this workspace's event log."),
    "sessions": ("bearagent.cli.sessions:sessions", "List the sessions of this workspace, to continue one; fork one."),
    "inspect": ("bearagent.cli.runs:inspect", "Show one run: status, usage vs budgets, activities, children."),
    "events": ("bearagent.cli.runs:events", "Print the stored events of a run (--json, --follow)."),
    "approvals": (
        "bearagent.cli.approvals:approvals",
        "List the runs waiting for an approval; answer one (allow/deny) and the run continues.",
    ),
    "replay": ("bearagent.cli.replay:replay", "Re-drive a run from its log, no model called; --dry only checks it."),
    "rewind": (
        "bearagent.cli.rewind:rewind",
        "Put the files and the conversation back as they were before a run or a tool call (--code, --conversation).",
    ),
    "diff": ("bearagent.cli.diff:diff", "Align two runs step by step: text, tool calls, results, usage."),
    "agents": ("bearagent.cli.agents:agents", "List and show agents, with source and shadowing."),
    "skills": ("bearagent.cli.skills:skills", "List and show skills, with the catalog budget."),
    "actions": ("bearagent.cli.actions:actions", "List and show actions."),
    "models": ("bearagent.cli.models:models", "List and show model entries."),
    "tools": ("bearagent.cli.tools:tools", "Show the tools an agent gets (the invocation projection)."),
    "mcp": ("bearagent.cli.mcp:mcp", "MCP servers: state, tools, last error."),
    "hooks": ("bearagent.cli.hooks:hooks", "List hooks; test them with a payload."),
    "plugins": (
        "bearagent.cli.plugins:plugins",
        "List, install and uninstall plugins (into BearAgent's own environment).",
    ),
    "doctor": ("bearagent.cli.doctor:doctor", "Print every configuration diagnostic."),
    "init": ("bearagent.cli.init:init", "Scaffold .bearagent/ in this directory."),
    "serve": ("bearagent.cli.serve:serve", "Serve workspaces over HTTP: sessions, background runs, SSE events."),
    "db": ("bearagent.cli.db:db", "The store: db status (versions, runs waiting), db migrate, db check."),
    "worker": ("bearagent.cli.worker:worker", "Execute queued runs of the served workspaces (scale-out)."),
    "acp": ("bearagent.cli.acp:acp", "Speak the Agent Client Protocol on stdio, for editors (Zed, JetBrains, Neovim)."),
    "trust": (
        "bearagent.cli.trust:trust",
        "Show what this workspace would run, send or allow, then trust it (or --revoke).",
    ),
}


def _plugin_commands() -> dict[str, click.Command]:
    """Commands registered by installed plugins (only scanned when the name is not a built-in command)."""
    import os
    from importlib.metadata import entry_points

    if not entry_points(group="bearagent"):
        return {}
    from bearagent.plugins.manager import PluginHost, plugin_commands

    return plugin_commands(PluginHost.from_entry_points(dict(os.environ)), set(LAZY_COMMANDS))


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS, *_plugin_commands()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = LAZY_COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name) or _plugin_commands().get(cmd_name)
        from bearagent.cli.startup import importing  # a leaf; `--help` loads no module of cli/ but this one

        module_name, attr = target[0].split(":")
        with importing("command"):
            command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except Exception as exc:  # a damaged or unreachable store, from any command: never a traceback
            from bearagent.domain.errors import BearAgentError  # here: `--help` imports no pydantic

            if not isinstance(exc, BearAgentError) or exc.info.category != "storage":
                raise
            from bearagent.cli.safe_text import visible

            click.echo(visible(f"error: {exc.info.message}"), err=True)
            click.echo(visible(f"fix: {exc.hint or 'see docs/store.md'}"), err=True)
            click.echo("check: `bearagent db check` says whether the store file is whole", err=True)
            ctx.exit(2)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_target, help_text) in LAZY_COMMANDS.items()]
        rows.extend((name, command.get_short_help_str(70)) for name, command in sorted(_plugin_commands().items()))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


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
@run_choice_options(session=True)
@click.pass_context
def main(
    ctx: click.Context,
    agent: str | None,
    model: str | None,
    workspace: Path | None,
    continue_: bool,
    session: str | None,
    **choice_flags: object,
) -> None:
    """BearAgent: agents as markdown files, every run an auditable event log.

    Without a command, starts an interactive session in the workspace (/help inside lists its commands).
    """
    session_flags = any(choice_flags.values())
    if ctx.invoked_subcommand is not None and session_flags:
        from bearagent.cli._run_common import die

        die(
            "--allowed-tools, --disallowed-tools, --system-prompt, --append-system-prompt and --add-dir before a "
            "command apply to the interactive session only",
            f"put them after the command (bearagent {ctx.invoked_subcommand} --add-dir DIR ...)",
        )
    if ctx.invoked_subcommand is None:
        from bearagent.cli.interactive import interactive_command

        interactive_command(ctx)
