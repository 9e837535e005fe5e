"""`bearagent actions list|show`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bearagent.cli._config_common import (
    diag_json,
    emit_json,
    json_option,
    load,
    print_diagnostics,
    print_table,
    rel,
    related,
    shadows_of,
    short,
    show_missing,
    workspace_option,
)


@click.group("actions")
def actions() -> None:
    """List and inspect actions (actions/*.md)."""


@actions.command("list")
@workspace_option
@json_option
def list_actions(workspace: Path | None, as_json: bool) -> None:
    """Every action with its agent, source and shadowing."""
    from bearagent.domain._base import thaw_json_mapping

    ws = load(workspace)
    registry = ws.actions
    problems = [d for d in registry.diagnostics if d.severity != "info"]
    if as_json:
        emit_json(
            {
                "workspace": str(ws.root),
                "actions": [
                    {
                        "name": r.name,
                        "agent": r.item.agent or ws.config.default_agent,
                        "model": r.item.model,
                        "level": r.item.level,
                        "source": r.source.id,
                        "path": rel(r.path, ws.root),
                        "description": r.item.description,
                        "inputs": thaw_json_mapping(r.item.inputs),
                        "shadows": shadows_of(r, ws.root),
                    }
                    for r in registry.entries()
                ],
                "broken": {name: list(paths) for name, paths in registry.broken.items()},
                "diagnostics": [diag_json(d) for d in problems],
            }
        )
        return
    rows = [
        [
            r.name,
            r.item.agent or ws.config.default_agent,
            r.source.id,
            rel(r.path, ws.root),
            ", ".join(c.source.id for c in r.shadows) or "-",
            short(r.item.description, 60),
        ]
        for r in registry.entries()
    ]
    print_table(["NAME", "AGENT", "SOURCE", "PATH", "SHADOWS", "DESCRIPTION"], rows)
    print_diagnostics(problems, heading="\nproblems:")


@actions.command("show")
@click.argument("name")
@workspace_option
@json_option
def show_action(name: str, workspace: Path | None, as_json: bool) -> None:
    """One action: its inputs schema, agent, template, source and diagnostics."""
    from bearagent.domain._base import thaw_json_mapping

    ws = load(workspace)
    resolved = ws.actions.resolved(name)
    if resolved is None:
        show_missing("action", name, ws.actions.names(), dict(ws.actions.broken))
    action = resolved.item
    diags = related(ws.actions.diagnostics, path=resolved.path, name=name)
    if as_json:
        data = action.model_dump(mode="json")
        data.update(
            source=resolved.source.id,
            path=resolved.path,
            shadows=shadows_of(resolved, ws.root),
            diagnostics=[diag_json(d) for d in diags],
        )
        emit_json(data)
        return
    click.echo(f"name         {action.name}")
    click.echo(f"description  {action.description}")
    click.echo(f"agent        {action.agent or ws.config.default_agent}")
    click.echo(f"model        {action.model or '(the agent model)'}")
    click.echo(f"source       {resolved.source.id}  {resolved.path}")
    click.echo(f"shadows      {'; '.join(f'{c.source.id} {c.path}' for c in resolved.shadows) or '-'}")
    click.echo(f"inputs       {json.dumps(thaw_json_mapping(action.inputs))}")
    click.echo(f"\ntemplate:\n{action.template}")
    print_diagnostics(diags, heading="\ndiagnostics:")
