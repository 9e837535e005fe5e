"""`bearagent actions list|show`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bearagent.cli._config_common import (
    emit_list_json,
    emit_show_json,
    entry_json,
    entry_row,
    json_option,
    load,
    origin_fields,
    print_diagnostics,
    print_fields,
    print_table,
    problems,
    resolve_shown,
    workspace_option,
)
from bearagent.cli._groups import ListGroup


@click.group("actions", cls=ListGroup)
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
    shown = problems(registry.diagnostics)
    if as_json:
        entries = [
            entry_json(
                r,
                ws.root,
                {"agent": r.item.agent or ws.config.default_agent, "model": r.item.model},
                {"inputs": thaw_json_mapping(r.item.inputs)},
            )
            for r in registry.entries()
        ]
        emit_list_json(ws, "actions", registry, entries, shown)
        return
    rows = [entry_row(r, ws.root, r.item.agent or ws.config.default_agent) for r in registry.entries()]
    print_table(["NAME", "AGENT", "SOURCE", "PATH", "SHADOWS", "DESCRIPTION"], rows)
    print_diagnostics(shown, heading="\nproblems:")


@actions.command("show")
@click.argument("name")
@workspace_option
@json_option
def show_action(name: str, workspace: Path | None, as_json: bool) -> None:
    """One action: its inputs schema, agent, template, source and diagnostics."""
    from bearagent.domain._base import thaw_json_mapping

    ws = load(workspace)
    resolved, diags = resolve_shown("action", ws.actions, name)
    action = resolved.item
    if as_json:
        emit_show_json(action.model_dump(mode="json"), resolved, ws.root, diags)
        return
    fields: list[tuple[str, object]] = [
        ("name", action.name),
        ("description", action.description),
        ("agent", action.agent or ws.config.default_agent),
        ("model", action.model or "(the agent model)"),
        *origin_fields(resolved),
        ("inputs", json.dumps(thaw_json_mapping(action.inputs))),
    ]
    print_fields(fields, 12)
    click.echo(f"\ntemplate:\n{action.template}")
    print_diagnostics(diags, heading="\ndiagnostics:")
