"""`bearagent trust [--revoke] [-w DIR]`: trust (or stop trusting) this workspace's hooks, MCP servers and
shell-executing config. The decision goes to `$BEARAGENT_HOME/trust.json`, never into the repository."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bearagent.cli.hooks import HookWorkspaceLoader, load_hook_workspace
from bearagent.domain.errors import BearAgentError
from bearagent.hooks.runners import describe_handler
from bearagent.hooks.trust import TrustStore, trust_store_path


def make_trust_command(loader: HookWorkspaceLoader) -> click.Command:
    @click.command(name="trust")
    @click.option("-w", "--workspace", type=click.Path(file_okay=False, path_type=Path), default=None)
    @click.option("--revoke", is_flag=True, help="Stop trusting this workspace.")
    def trust_command(workspace: Path | None, revoke: bool) -> None:
        """Trust this workspace's hooks, MCP servers and shell-executing config (stored outside the repo)."""
        ws = loader(workspace)
        store = TrustStore(trust_store_path())
        try:
            if revoke:
                if store.revoke(ws.root):
                    click.echo(
                        f"Revoked trust for {ws.root}; its hooks and MCP servers will not run until trusted again."
                    )
                else:
                    click.echo(f"{ws.root} was not trusted; nothing to revoke.")
                return
            for diagnostic in ws.diagnostics:
                click.echo(diagnostic.render(), err=True)
            surface = ws.surface
            store.trust(ws.root, surface)
        except BearAgentError as exc:
            click.echo(f"error: {exc.info.message}", err=True)
            if exc.hint:
                click.echo(f"  fix: {exc.hint}", err=True)
            sys.exit(2)
        click.echo(f"Trusted {ws.root}: {surface.describe()}.")
        for group in surface.hooks:
            for spec in group.hooks:
                click.echo(f"  hook {group.event} matcher={group.matcher or '*'}: {describe_handler(spec)}")
        for server in surface.mcp_servers:
            what = server.url if server.transport == "http" else " ".join([server.command or "", *server.args])
            click.echo(f"  MCP server {server.name}: {what}")
        for key, value in surface.shell_config.items():
            click.echo(f"  {key}: {value}")
        click.echo(
            f"Stored in {store.path}. A change to these hooks, MCP servers or shell config asks for trust again."
        )

    return trust_command


trust = make_trust_command(load_hook_workspace)
