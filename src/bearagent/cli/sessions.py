"""`bearagent sessions list`: the workspace's conversations, most recently active first, to continue one with
`bearagent --session ID` (or `bearagent run --session ID "..."`), as Claude Code's `--resume` offers them.

Titles come from prompts (workspace users' text): shown through `safe_text.visible` and cut to one short line."""

from __future__ import annotations

from pathlib import Path

import click

from bearagent.cli._config_common import emit_json, json_option, print_table, short, workspace_option
from bearagent.cli._groups import ListGroup
from bearagent.cli.safe_text import visible


@click.group("sessions", cls=ListGroup, lazy={"fork": "bearagent.cli.session_fork:fork_command"})
def sessions() -> None:
    """List the sessions (conversations) stored in this workspace, and fork one."""


@sessions.command("list")
@workspace_option
@json_option
@click.option("--limit", type=click.IntRange(1, 1_000), default=20, show_default=True, help="How many sessions.")
def list_sessions(workspace: Path | None, as_json: bool, limit: int) -> None:
    """Most recently active first: id, last activity, agent and title (the first prompt's first line)."""
    from bearagent.cli.runs import open_recovered, when

    store = open_recovered(workspace)
    found = store.list_sessions(limit=limit)
    if as_json:
        emit_json(
            [
                {
                    "session_id": str(s.session_id),
                    "created_at": s.created_at.isoformat(),
                    "updated_at": s.updated_at.isoformat(),
                    "agent": s.active_agent_name or s.agent_name,
                    "title": s.title,
                    "caller": s.caller,
                    "forked_from": None if s.forked_from is None else s.forked_from.model_dump(mode="json"),
                }
                for s in found
            ]
        )
        return
    if not found:
        click.echo('no sessions yet: start one with `bearagent` (or `bearagent run "..."`)')
        return
    rows = [
        [
            str(s.session_id),
            when(s.updated_at),
            s.active_agent_name or s.agent_name or "-",
            short(s.title or "", 50),
        ]
        for s in found
    ]
    print_table(["SESSION", "UPDATED", "AGENT", "TITLE"], [[visible(cell) for cell in row] for row in rows])
    click.echo(
        '\ncontinue one: bearagent --session ID   (or: bearagent run --session ID "..."; --continue: the latest)'
    )
