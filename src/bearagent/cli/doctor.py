"""`bearagent doctor`: every diagnostic of the workspace; exit 2 (configuration error) when there is an error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bearagent.cli._config_common import EXIT_CONFIG, diag_json, emit_json, json_option, load, workspace_option

if TYPE_CHECKING:
    from bearagent.domain._base import JsonValue
    from bearagent.domain.diagnostics import Diagnostic
    from bearagent.workspace import LoadedWorkspace


@click.command("doctor")
@workspace_option
@json_option
@click.option("--quiet", "-q", is_flag=True, help="Only errors and warnings (hide shadowing and other notes).")
def doctor(workspace: Path | None, as_json: bool, quiet: bool) -> None:
    """Check the workspace: config files, agents, skills, actions, models, MCP servers, hooks, plugins and every
    agent's tool projection. Exits 0 when there is no error, 2 when there is (warnings do not fail)."""
    from bearagent.domain.diagnostics import Diagnostic
    from bearagent.domain.errors import BearAgentError
    from bearagent.runtime.agent_model import CLAUDE_MODEL_ALIASES

    ws = load(workspace)
    diags: list[Diagnostic] = list(ws.diagnostics())
    seen = set(diags)
    no_model_reported = False
    for agent in ws.agents.all():
        try:
            projection = ws.project(agent.name, require_model=False)
            found = list(projection.diagnostics)
        except BearAgentError as exc:
            found = [
                Diagnostic(
                    severity="error",
                    code=f"{exc.info.category}.{exc.info.code.split('.')[-1]}",
                    message=exc.info.message,
                    source=agent.source,
                    subject=agent.name,
                    fix=exc.hint,
                )
            ]
        for d in found:
            if d.code == "agent.model_unresolved" and (agent.model is None or agent.model in CLAUDE_MODEL_ALIASES):
                # One workspace-level error instead of one per agent that inherits the default model.
                if no_model_reported:
                    continue
                no_model_reported = True
                d = Diagnostic(
                    severity="error",
                    code="config.no_model",
                    message="no model for agents that inherit one: config.yaml sets no default_model (and there is not exactly one model entry)",
                    source=str(ws.config_files[-1].path) if ws.config_files else "",
                    fix=d.fix,
                )
            if d not in seen and d.code != "projection.chat":
                seen.add(d)
                diags.append(d)
    from bearagent.service.preflight import as_diagnostic, preflight

    # what `run` would refuse, in its words (`service/preflight.py`: run raises the first of these)
    where = str(ws.config_files[-1].path) if ws.config_files else str(ws.root)
    for refusal in preflight(ws):
        d = as_diagnostic(refusal, where)
        if d not in seen:
            seen.add(d)
            diags.append(d)
    from bearagent.sandbox.probe import probe as probe_sandbox
    from bearagent.sandbox.settings import network_json, network_label

    sandbox = probe_sandbox(ws.config.sandbox)
    if sandbox.warning() is not None:
        diags.append(
            Diagnostic(
                severity="warning",
                code="sandbox.unavailable",
                message=f"the Bash sandbox cannot start: {sandbox.reason}; every Bash command needs approval",
                source="sandbox",
                fix=sandbox.fix,
            )
        )
    store, store_line = _store_report(ws, diags)
    hooks = _hook_rows(ws)
    if quiet:
        diags = [d for d in diags if d.severity != "info"]
    errors = sum(d.severity == "error" for d in diags)
    warnings = sum(d.severity == "warning" for d in diags)
    if as_json:
        emit_json(
            {
                "workspace": str(ws.root),
                "user_dir": str(ws.user_dir),
                "config_files": [str(cf.path) for cf in ws.config_files],
                "compat": ws.config.compat,
                "instructions": str(ws.instructions.path) if ws.instructions else None,
                "plugins": sorted(ws.plugins.plugins),
                "sandbox": {
                    "mode": ws.config.sandbox.mode,
                    "network": network_json(ws.config.sandbox.network),
                    "active": sandbox.active,
                    "backend": sandbox.backend,
                    "program": sandbox.program,
                    "reason": sandbox.reason or None,
                },
                "store": store,
                "hooks": hooks,
                "errors": errors,
                "warnings": warnings,
                "diagnostics": [diag_json(d) for d in diags],
            }
        )
    else:
        click.echo(f"workspace     {ws.root}")
        click.echo(f"user config   {ws.user_dir}")
        click.echo(f"config files  {', '.join(str(cf.path) for cf in ws.config_files) or 'none'}")
        click.echo(f"compat        {'on (.claude/, .agents/, .mcp.json)' if ws.config.compat else 'off'}")
        imports = f" (+ {len(ws.instructions.imports)} imported)" if ws.instructions and ws.instructions.imports else ""
        click.echo(
            f"instructions  {ws.instructions.path.name if ws.instructions else 'none (AGENTS.md / CLAUDE.md)'}{imports}"
        )
        click.echo(f"sandbox       {sandbox.describe(network_label(ws.config.sandbox.network))}")
        click.echo(f"store         {store_line}")
        click.echo(
            f"loaded        {len(ws.agents.names())} agents, {len(ws.skills.names())} skills, {len(ws.actions.names())} actions, "
            f"{len(ws.models.refs())} models, {len(ws.mcp.names())} MCP servers, {len(ws.hooks.all())} hook groups, {len(ws.plugins.plugins)} plugins"
        )
        for row in hooks:  # each handler's capability boundary (seed 002), `all (undeclared)` shown as such
            click.echo(f"hook          {row['event']}[{row['matcher']}] {row['handler']}: {row['capabilities_label']}")
        click.echo("")
        order = {"error": 0, "warning": 1, "info": 2}
        from bearagent.config.diag_summary import group_diagnostics

        # the same problem in many files is one entry with a count (`--json` lists each)
        for group in group_diagnostics(sorted(diags, key=lambda d: order[d.severity])):
            click.echo(group.first.render() if group.count == 1 else group.render())
        click.echo(f"\n{errors} error(s), {warnings} warning(s)" + ("" if errors else " — OK"))
    if errors:
        sys.exit(EXIT_CONFIG)


def _hook_rows(ws: LoadedWorkspace) -> list[dict[str, JsonValue]]:
    """`bearagent hooks list --json`'s rows: every handler with its effective capabilities."""
    from bearagent.cli.hooks import hook_rows, hook_workspace

    return hook_rows(hook_workspace(ws))


def _store_report(ws: LoadedWorkspace, diags: list[Diagnostic]) -> tuple[dict[str, object], str]:
    """The store (backend, display form, schema state, queued and interrupted runs) read without creating or
    migrating it, as `--json` and as one line; a store that cannot be read, or is newer than this BearAgent, is an
    error diagnostic."""
    from bearagent.app.store_status import newer_error, read_status_sync
    from bearagent.domain.diagnostics import Diagnostic
    from bearagent.domain.errors import BearAgentError

    settings = ws.config.store
    source = settings.source or "default"
    if settings.refusal is not None:  # the config diagnostic of that section says what and how to fix it
        code = f"configuration.{settings.refusal[0]}"
        return {"backend": settings.backend, "source": settings.source, "error": code}, f"refused ({source}: {code})"
    try:
        found = read_status_sync(ws)
    except BearAgentError as exc:
        diags.append(
            Diagnostic(
                severity="error",
                code=exc.info.code,
                message=f"the {settings.backend} store cannot be read: {exc.info.message}",
                source=settings.source or "store",
                fix=exc.hint or "see docs/store.md",
            )
        )
        return (
            {"backend": settings.backend, "source": settings.source, "error": exc.info.code},
            f"{settings.backend} ({source}): cannot be read ({exc.info.code})",
        )
    if found.state == "newer":
        error = newer_error(found)
        diags.append(
            Diagnostic(
                severity="error",
                code=error.info.code,
                message=error.info.message,
                source=found.source or "store",
                fix=error.hint or "upgrade BearAgent",
            )
        )
    limit = ws.config.retention.warn_size_bytes
    if found.size_bytes > limit:
        keep = ws.config.retention.keep_days
        diags.append(
            Diagnostic(
                severity="warning",
                code="store.large",
                message=(
                    f"the {found.backend} store takes {found.size_bytes / 1e6:,.0f} MB, more than retention.warn_size "
                    f"({limit / 1e6:,.0f} MB)"
                ),
                source=ws.config.retention.source or found.display,
                fix=(
                    f"remove old runs with `bearagent db prune --older-than {keep or 90}d --dry-run` (then without "
                    "--dry-run; pinned runs stay), or raise retention.warn_size in your user config"
                ),
            )
        )
    line = (
        f"{found.backend} {found.display} ({source}) · {found.describe_schema()} · "
        f"{found.describe_runs(('queued', 'interrupted'))} runs · {found.size_bytes / 1e6:,.1f} MB"
    )
    return found.to_json(), line
