"""`bearagent tools list [--agent NAME] [--all]`: the invocation projection of an agent."""

from __future__ import annotations

from pathlib import Path

import click

from bearagent.cli._config_common import (
    DESCRIPTION_CHARS,
    diag_json,
    emit_json,
    fail,
    json_option,
    load,
    print_diagnostics,
    print_table,
    problems,
    short,
    workspace_option,
)
from bearagent.cli._groups import ListGroup
from bearagent.domain.diagnostics import name_list


@click.group("tools", cls=ListGroup)
def tools() -> None:
    """Show which tools an agent gets (the invocation projection)."""


@tools.command("list")
@click.option("-a", "--agent", "agent_name", default=None, help="Agent to project (default: default_agent).")
@click.option("--all", "show_all", is_flag=True, help="List every registered native and plugin tool instead.")
@workspace_option
@json_option
def list_tools(agent_name: str | None, show_all: bool, workspace: Path | None, as_json: bool) -> None:
    """The tools the model sees for one agent: projected name, source kind, internal name and origin. MCP tools of
    declared servers appear once the servers are connected at run time; the declared servers are listed."""
    from bearagent.domain.errors import BearAgentError

    ws = load(workspace)
    if show_all:
        entries = ws.tools.entries()
        if as_json:
            emit_json(
                {
                    "tools": [
                        {
                            "name": e.name,
                            "origin": e.origin,
                            "side_effect": e.tool.spec.side_effect,
                            "description": e.tool.spec.description,
                        }
                        for e in entries
                    ]
                }
            )
            return
        print_table(
            ["NAME", "ORIGIN", "SIDE EFFECT", "DESCRIPTION"],
            [
                [e.name, e.origin, e.tool.spec.side_effect, short(e.tool.spec.description, DESCRIPTION_CHARS)]
                for e in entries
            ],
        )
        print_diagnostics(problems(ws.tools.diagnostics), heading="\nproblems:")
        return
    try:
        projection = ws.project(agent_name, require_model=False)
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)
    model = projection.model.ref if projection.model else None
    if as_json:
        emit_json(
            {
                "agent": projection.agent.name,
                "model": model,
                "tools": [
                    {
                        "name": t.name,
                        "source": t.source,
                        "internal_name": t.internal_name,
                        "origin": t.origin,
                        "bound": t.tool is not None,
                    }
                    for t in projection.tools
                ],
                "skills": list(projection.skills),
                "actions": list(projection.actions),
                "subagents": list(projection.subagents),
                "switch": list(projection.switch_targets),
                "mcp_servers": list(projection.mcp_servers),
                "diagnostics": [diag_json(d) for d in projection.diagnostics],
            }
        )
        return
    click.echo(f"agent {projection.agent.name}  model {model or '(unresolved)'}\n")
    print_table(
        ["TOOL", "SOURCE", "INTERNAL", "ORIGIN"],
        [[t.name, t.source, t.internal_name, t.origin] for t in projection.tools],
    )
    if projection.skills:
        click.echo(f"\nSkill enum: {name_list(projection.skills)}")
    if projection.mcp_servers:
        click.echo(
            f"MCP servers (tools appear as mcp__<server>__<tool> once connected): {name_list(projection.mcp_servers)}"
        )
    print_diagnostics(projection.diagnostics, heading="\ndiagnostics:")
