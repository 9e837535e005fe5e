"""`bearagent trust [--revoke] [--list] [-y] [-w DIR]`: show what a workspace's files would decide (where requests
and keys go, what code runs, what is allowed), then trust it. The decision goes to `$BEARAGENT_HOME/trust.json`,
never into the repository."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from bearagent.cli.hooks import HookWorkspaceLoader, load_hook_workspace
from bearagent.domain.errors import BearAgentError
from bearagent.rewind.workspace_writes import writes_record
from bearagent.trust import TrustStore, TrustSurface, trust_store_path


def make_trust_command(loader: HookWorkspaceLoader) -> click.Command:
    @click.command(name="trust")
    @click.option("-w", "--workspace", type=click.Path(file_okay=False, path_type=Path), default=None)
    @click.option("--revoke", is_flag=True, help="Stop trusting this workspace.")
    @click.option("--list", "list_only", is_flag=True, help="Only show what would be trusted and the current status.")
    @click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation on a terminal.")
    @click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print the status and the items as JSON; asks nothing (trusts only with -y).",
    )
    def trust_command(workspace: Path | None, revoke: bool, list_only: bool, yes: bool, as_json: bool) -> None:
        """Show what this workspace would run, send or allow, then trust it (stored outside the repo)."""
        ws = loader(workspace)
        store = TrustStore(trust_store_path())
        try:
            if as_json:
                _emit_json(ws.root, ws.surface, store, revoke=revoke, trust_it=yes and not list_only)
                return
            if revoke:
                if store.revoke(ws.root):
                    click.echo(f"Revoked trust for {ws.root}; it will not run until trusted again.")
                else:
                    click.echo(f"{ws.root} was not trusted; nothing to revoke.")
                return
            for diagnostic in ws.diagnostics:
                click.echo(diagnostic.render(), err=True)
            surface = ws.surface
            status = store.status(ws.root, surface)
            written = writes_record(store.path.parent).since_trust(ws.root)
            if surface.is_empty:
                click.echo(
                    f"{ws.root} needs no trust: none of its files decides where requests go, what runs or "
                    "what is allowed."
                )
                if written is not None and not list_only:  # your own hooks were confined by runs' writes
                    writes_record(store.path.parent).trusted(ws.root)
                    click.echo(f"Cleared the record of {written.describe()}: your hooks here run as configured again.")
                return
            click.echo(f"{ws.root} ({status}): its files would decide")
            for line in surface.lines():
                click.echo(line)
            if status == "changed":
                click.echo(f"Changed since you trusted it: {store.change(ws.root, surface).describe()}")
            if written is not None:
                click.echo(
                    f"Runs may have written in it since you trusted it (first: {written.describe()}): until you "
                    "trust it again, its command hooks, statusLine and stdio MCP servers run in the sandbox. "
                    "Trusting it now means you accept what those runs left in it."
                )
            if list_only:
                return
            if not yes and sys.stdin.isatty() and not click.confirm("Trust this workspace?", default=False):
                click.echo("Not trusted; nothing was recorded.")
                sys.exit(1)
            store.trust(ws.root, surface)
        except BearAgentError as exc:
            click.echo(f"error: {exc.info.message}", err=True)
            if exc.hint:
                click.echo(f"  fix: {exc.hint}", err=True)
            sys.exit(2)
        click.echo(f"Trusted {ws.root}: {surface.describe()}.")
        click.echo(f"Stored in {store.path}. A change to any of these (or to a script they run) asks for trust again.")

    return trust_command


def _emit_json(root: Path, surface: TrustSurface, store: TrustStore, *, revoke: bool, trust_it: bool) -> None:
    """`trust --json`: the workspace, its status (after `--revoke` or `-y` when given) and every item."""
    out: dict[str, object] = {"workspace": str(root)}
    if revoke:
        out["revoked"] = store.revoke(root)
    elif trust_it and not surface.is_empty:
        store.trust(root, surface)
    out["status"] = store.status(root, surface)
    out["summary"] = surface.describe()
    out["items"] = [
        {"kind": item.kind, "key": item.key, "summary": item.summary, "file": item.file, "line": item.line}
        for item in surface.items
    ]
    click.echo(json.dumps(out, indent=2, ensure_ascii=False))


trust = make_trust_command(load_hook_workspace)
