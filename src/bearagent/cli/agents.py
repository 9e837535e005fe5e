"""`bearagent agents list|show`."""

from __future__ import annotations

from pathlib import Path

import click

from bearagent.cli._config_common import (
    broken_rows,
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
    short,
    workspace_option,
)
from bearagent.cli._groups import ListGroup


@click.group("agents", cls=ListGroup)
def agents() -> None:
    """List and inspect agents (agents/*.md from every source)."""


@agents.command("list")
@workspace_option
@json_option
def list_agents(workspace: Path | None, as_json: bool) -> None:
    """Every agent with its source, level and what it shadows."""
    ws = load(workspace)
    registry = ws.agents
    shown = problems(registry.diagnostics)
    if as_json:
        entries = [
            entry_json(r, ws.root, {"mode": r.item.mode, "model": r.item.model or "inherit"})
            for r in registry.entries()
        ]
        emit_list_json(ws, "agents", registry, entries, shown)
        return
    rows = [entry_row(r, ws.root, r.item.mode) for r in registry.entries()]
    rows.extend(broken_rows(registry.broken, ws.root, middle=1))
    print_table(["NAME", "MODE", "SOURCE", "PATH", "SHADOWS", "DESCRIPTION"], rows)
    print_diagnostics(shown, heading="\nproblems:")


@agents.command("show")
@click.argument("name")
@workspace_option
@json_option
def show_agent(name: str, workspace: Path | None, as_json: bool) -> None:
    """One agent: its settings, source path, level, what it shadows and its diagnostics."""
    ws = load(workspace)
    resolved, diags = resolve_shown("agent", ws.agents, name)
    agent = resolved.item
    if as_json:
        emit_show_json(agent.model_dump(mode="json"), resolved, ws.root, diags)
        return
    lines = [
        ("name", agent.name),
        ("description", agent.description),
        ("mode", agent.mode),
        ("model", agent.model or "inherit"),
        ("level", agent.level),
        *origin_fields(resolved),
        ("tools", "default set" if agent.tools is None else ", ".join(agent.tools) or "none"),
        ("disallowed_tools", ", ".join(agent.disallowed_tools) or "-"),
        ("skills", "all" if agent.skills is None else ", ".join(agent.skills) or "none"),
        ("actions", ", ".join(agent.actions or ()) or "none"),
        ("mcp", "all servers" if agent.mcp is None else ", ".join(agent.mcp) or "none"),
        ("subagents", "every delegatable agent" if agent.subagents is None else ", ".join(agent.subagents) or "none"),
        ("switch", ", ".join(agent.switch) or "-"),
        ("hooks", ", ".join(sorted({m.event for m in agent.hooks})) or "-"),
    ]
    print_fields(lines, max(len(k) for k, _ in lines) + 1)
    click.echo(f"\nprompt ({len(agent.prompt)} chars):\n{short(agent.prompt, 400)}")
    print_diagnostics(diags, heading="\ndiagnostics:")
