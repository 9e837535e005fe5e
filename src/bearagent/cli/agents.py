"""`bearagent agents list|show`."""

from __future__ import annotations

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


@click.group("agents")
def agents() -> None:
    """List and inspect agents (agents/*.md from every source)."""


@agents.command("list")
@workspace_option
@json_option
def list_agents(workspace: Path | None, as_json: bool) -> None:
    """Every agent with its source, level and what it shadows."""
    ws = load(workspace)
    registry = ws.agents
    if as_json:
        emit_json(
            {
                "workspace": str(ws.root),
                "agents": [
                    {
                        "name": r.name,
                        "mode": r.item.mode,
                        "model": r.item.model or "inherit",
                        "level": r.item.level,
                        "source": r.source.id,
                        "path": rel(r.path, ws.root),
                        "description": r.item.description,
                        "shadows": shadows_of(r, ws.root),
                    }
                    for r in registry.entries()
                ],
                "broken": {name: list(paths) for name, paths in registry.broken.items()},
                "diagnostics": [diag_json(d) for d in registry.diagnostics if d.severity != "info"],
            }
        )
        return
    rows = [
        [
            r.name,
            r.item.mode,
            r.source.id,
            rel(r.path, ws.root),
            ", ".join(c.source.id for c in r.shadows) or "-",
            short(r.item.description, 60),
        ]
        for r in registry.entries()
    ]
    rows.extend(
        [name, "-", "ERROR", "duplicate: " + ", ".join(rel(p, ws.root) for p in paths), "-", "unusable until fixed"]
        for name, paths in registry.broken.items()
    )
    print_table(["NAME", "MODE", "SOURCE", "PATH", "SHADOWS", "DESCRIPTION"], rows)
    print_diagnostics([d for d in registry.diagnostics if d.severity != "info"], heading="\nproblems:")


@agents.command("show")
@click.argument("name")
@workspace_option
@json_option
def show_agent(name: str, workspace: Path | None, as_json: bool) -> None:
    """One agent: its settings, source path, level, what it shadows and its diagnostics."""
    ws = load(workspace)
    resolved = ws.agents.resolved(name)
    if resolved is None:
        show_missing("agent", name, ws.agents.names(), dict(ws.agents.broken))
    agent = resolved.item
    diags = related(ws.agents.diagnostics, path=resolved.path, name=name)
    if as_json:
        data = agent.model_dump(mode="json")
        data["source"] = resolved.source.id
        data["path"] = resolved.path
        data["shadows"] = shadows_of(resolved, ws.root)
        data["diagnostics"] = [diag_json(d) for d in diags]
        emit_json(data)
        return
    lines = [
        ("name", agent.name),
        ("description", agent.description),
        ("mode", agent.mode),
        ("model", agent.model or "inherit"),
        ("level", agent.level),
        ("source", f"{resolved.source.id}  {resolved.path}"),
        ("shadows", "; ".join(f"{c.source.id} {c.path}" for c in resolved.shadows) or "-"),
        ("tools", "default set" if agent.tools is None else ", ".join(agent.tools) or "none"),
        ("disallowed_tools", ", ".join(agent.disallowed_tools) or "-"),
        ("skills", "all" if agent.skills is None else ", ".join(agent.skills) or "none"),
        ("actions", ", ".join(agent.actions or ()) or "none"),
        ("mcp", "all servers" if agent.mcp is None else ", ".join(agent.mcp) or "none"),
        ("subagents", ", ".join(agent.subagents) or "-"),
        ("switch", ", ".join(agent.switch) or "-"),
        ("hooks", ", ".join(sorted({m.event for m in agent.hooks})) or "-"),
    ]
    width = max(len(k) for k, _ in lines)
    for key, value in lines:
        click.echo(f"{key.ljust(width)}  {value}")
    click.echo(f"\nprompt ({len(agent.prompt)} chars):\n{short(agent.prompt, 400)}")
    print_diagnostics(diags, heading="\ndiagnostics:")
