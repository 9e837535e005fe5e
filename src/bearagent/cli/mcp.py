"""`bearagent mcp list` and `bearagent mcp tools SERVER`: connect to the configured MCP servers (concurrently, each
bounded by its `startup_timeout_s`) and show their state, tools and last error.

Specs come from a loader function (`McpCliLoader`) so the commands can be tested with any set of servers; the
default loader is `bearagent.workspace.load_workspace` (config.yaml `mcp_servers`, `.mcp.json`, user config, plugins).
Workspace-level servers are commands from the repository, so they only start in a workspace the user trusted
(`bearagent trust`), like hooks.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bearagent.cli._config_common import DESCRIPTION_CHARS, fail, print_table, short, workspace_option
from bearagent.cli._groups import ListGroup
from bearagent.domain.diagnostics import name_list

if TYPE_CHECKING:
    from bearagent.domain.diagnostics import Diagnostic
    from bearagent.domain.specs import McpServerSpec
    from bearagent.mcp.launch import Launch
    from bearagent.mcp.manager import McpConnectionManager, McpServerStatus
    from bearagent.mcp.tool import McpTool
    from bearagent.sandbox.settings import SandboxSettings

EXIT_SERVER_FAILED = 1


@dataclass(frozen=True, slots=True)
class McpCliWorkspace:
    """What the mcp commands need: where, which servers, the environment, and whether workspace servers may run."""

    root: Path
    specs: tuple[McpServerSpec, ...]
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    diagnostics: tuple[Diagnostic, ...] = ()
    check_trust: Callable[[], None] | None = None
    """Raises `BearAgentError` when servers may not run: none at all under execution_policy none (a chat workspace
    too), workspace-level ones in an untrusted workspace."""
    sandbox: SandboxSettings | None = None
    """The merged sandbox settings (`mcp: true` starts stdio servers confined, as in a run); None = off."""


McpCliLoader = Callable[[Path | None], McpCliWorkspace]


def load_mcp_workspace(workspace: Path | None) -> McpCliWorkspace:
    """The default loader: the workspace's resolved MCP registry, and the trust check of `bearagent trust`."""
    from bearagent.cli._config_common import load

    ws = load(workspace)
    specs = tuple(ws.mcp.all())
    diagnostics = tuple(d for d in ws.mcp.diagnostics)

    def check_trust() -> None:
        from bearagent.cli.hooks import load_hook_workspace
        from bearagent.config.execution import require_execution
        from bearagent.trust import require_trust

        require_execution(ws.config, "starting MCP servers")  # before anything starts, every level's server too
        if any(s.level == "workspace" for s in specs):
            require_trust(ws.root, load_hook_workspace(ws.root).surface)

    return McpCliWorkspace(
        root=ws.root,
        specs=specs,
        env=ws.child_env(),
        diagnostics=diagnostics,
        check_trust=check_trust,
        sandbox=ws.config.sandbox,
    )


def _prepare(loader: McpCliLoader, workspace: Path | None) -> McpCliWorkspace:
    from bearagent.domain.errors import BearAgentError

    ws = loader(workspace)
    for d in ws.diagnostics:
        click.echo(d.render(), err=True)
    if ws.check_trust is not None:
        try:
            ws.check_trust()
        except BearAgentError as exc:
            fail(exc.info.message, exc.hint)
    return ws


async def _connect(ws: McpCliWorkspace, specs: Sequence[McpServerSpec]) -> McpConnectionManager:
    from bearagent.app.resources import connect_mcp_servers

    return await connect_mcp_servers(specs, ws.env or dict(os.environ), ws.root, sandbox=ws.sandbox)


def _status_json(s: McpServerStatus) -> dict[str, object]:
    return {
        "name": s.name,
        "transport": s.transport,
        "state": s.state,
        "tools": s.tool_count,
        "protocol_version": s.protocol_version,
        "ping_ms": round(s.ping_ms, 1) if s.ping_ms is not None else None,
        "source": s.source,
        "error": s.last_error,
        "fix": s.hint,
    }


def _ping_text(s: McpServerStatus) -> str:
    return f"{s.ping_ms:.0f} ms" if s.ping_ms is not None else "-"


def _tool_json(tool: McpTool) -> dict[str, object]:
    from bearagent.domain._base import thaw_json_mapping

    return {
        "name": tool.spec.name,
        "server": tool.server,
        "remote_name": tool.remote_name,
        "description": tool.spec.description,
        "side_effect": tool.spec.side_effect,
        "version": tool.spec.version,
        "input_schema": thaw_json_mapping(tool.spec.input_schema),
    }


def _find_spec(ws: McpCliWorkspace, server: str) -> McpServerSpec:
    spec = next((s for s in ws.specs if s.name == server), None)
    if spec is None:
        names = [s.name for s in ws.specs]
        close = difflib.get_close_matches(server, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        fail(
            f"no MCP server named {server!r}{hint}",
            f"`bearagent mcp list` shows the configured servers: {name_list(names) or 'none'}",
        )
    return spec


def _http_launch(ws: McpCliWorkspace, spec: McpServerSpec, command: str) -> Launch:
    """The resolved launch of an http server (login/logout), or a clear error for a stdio one."""
    from bearagent.domain.errors import BearAgentError
    from bearagent.mcp.launch import resolve_launch, where_of

    if spec.transport != "http":
        fail(
            f"MCP server {spec.name!r} ({where_of(spec)}) is a stdio server: `bearagent mcp {command}` is for remote "
            "(http) servers that use OAuth",
            f"a stdio server takes its credentials from `env` in {where_of(spec)}",
        )
    try:
        launch = resolve_launch(spec, ws.env or dict(os.environ), ws.root)
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)
    assert launch.url is not None and launch.oauth_store is not None
    return launch


def make_mcp_command(loader: McpCliLoader) -> click.Group:
    @click.group(name="mcp", cls=ListGroup)
    def mcp() -> None:
        """MCP tool servers: state, tools and errors (servers are started to check them)."""

    @mcp.command(name="list")
    @workspace_option
    @click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
    def list_cmd(workspace: Path | None, as_json: bool) -> None:
        """Connect to every configured server (concurrently), ping the ready ones and show state, tool count,
        ping time and last error."""
        ws = _prepare(loader, workspace)

        async def go() -> list[McpServerStatus]:
            manager = await _connect(ws, ws.specs)
            try:
                await manager.ping_all()
                return manager.status()
            finally:
                await manager.aclose()

        import asyncio

        statuses = asyncio.run(go()) if ws.specs else []
        if as_json:
            click.echo(json.dumps([_status_json(s) for s in statuses], indent=2, ensure_ascii=False))
            return
        if not statuses:
            click.echo("No MCP servers configured (add `mcp_servers:` to .bearagent/config.yaml or a .mcp.json).")
            return
        rows = [
            [s.name, s.state, s.transport, str(s.tool_count), _ping_text(s), short(s.last_error or "", 60)]
            for s in statuses
        ]
        print_table(["SERVER", "STATE", "TRANSPORT", "TOOLS", "PING", "LAST ERROR"], rows)
        for s in statuses:
            if s.last_error:
                click.echo(f"\n{s.name}: {s.last_error}")
                if s.hint:
                    click.echo(f"  fix: {s.hint}")

    @mcp.command(name="tools")
    @click.argument("server")
    @workspace_option
    @click.option("--json", "as_json", is_flag=True, help="Print JSON (with input schemas) instead of a table.")
    def tools_cmd(server: str, workspace: Path | None, as_json: bool) -> None:
        """Connect to SERVER and list its tools as the model sees them (mcp__<server>__<tool>)."""
        ws = _prepare(loader, workspace)
        spec = _find_spec(ws, server)

        async def go() -> tuple[McpServerStatus, list[McpTool]]:
            manager = await _connect(ws, [spec])
            try:
                return manager.server_status(server), manager.server_tools(server)
            finally:
                await manager.aclose()

        import asyncio

        status, tools = asyncio.run(go())
        if status.state != "ready":
            click.echo(f"error: {status.last_error}", err=True)
            if status.hint:
                click.echo(f"fix: {status.hint}", err=True)
            sys.exit(EXIT_SERVER_FAILED)
        if as_json:
            click.echo(json.dumps([_tool_json(t) for t in tools], indent=2, ensure_ascii=False))
            return
        rows = [[t.spec.name, t.spec.side_effect, short(t.spec.description, DESCRIPTION_CHARS)] for t in tools]
        print_table(["TOOL", "SIDE EFFECT", "DESCRIPTION"], rows, title=f"{server}: {len(tools)} tool(s)")

    @mcp.command(name="login")
    @click.argument("server")
    @workspace_option
    @click.option("--no-browser", is_flag=True, help="Print the authorization URL only; do not open a browser.")
    @click.option(
        "--timeout",
        "timeout_s",
        type=click.FloatRange(1, 3600),
        default=300,
        show_default=True,
        help="Seconds to wait for the browser to come back to BearAgent.",
    )
    def login_cmd(server: str, workspace: Path | None, no_browser: bool, timeout_s: float) -> None:
        """Log in to the remote MCP server SERVER with OAuth (browser, PKCE, loopback redirect on 127.0.0.1).

        The tokens are kept in the user config dir (mcp-oauth/, mode 0600) and refreshed by every session; a new
        login replaces them."""
        from bearagent.mcp.oauth import McpLoginError
        from bearagent.mcp.oauth_login import login

        ws = _prepare(loader, workspace)
        spec = _find_spec(ws, server)
        launch = _http_launch(ws, spec, "login")
        assert launch.url is not None and launch.oauth_store is not None

        def announce(url: str) -> None:
            click.echo(f"Open this URL in a browser to log in to {server!r}:\n  {url}", err=True)
            click.echo("Waiting for the browser to come back to 127.0.0.1 ...", err=True)

        import asyncio

        try:
            outcome = asyncio.run(
                login(
                    server=server,
                    url=launch.url,
                    headers=launch.headers,
                    store_path=Path(launch.oauth_store),
                    announce=announce,
                    open_browser=not no_browser,
                    timeout_s=timeout_s,
                    connect_timeout_s=spec.startup_timeout_s,
                    client_id=launch.oauth_client_id,
                    callback_port=launch.oauth_callback_port,
                )
            )
        except McpLoginError as exc:
            fail(
                f"login to MCP server {server!r} ({launch.url}) failed: {exc}",
                f"check the server, then run `bearagent mcp login {server}` again",
                EXIT_SERVER_FAILED,
            )
        if not outcome.needed_login:
            click.echo(f"{server}: the server did not ask for a login ({outcome.tool_count} tool(s)); nothing stored.")
            return
        click.echo(f"Logged in to {server} ({outcome.tool_count} tool(s)). Tokens stored in {outcome.path}.")

    @mcp.command(name="logout")
    @click.argument("server")
    @workspace_option
    def logout_cmd(server: str, workspace: Path | None) -> None:
        """Log out of SERVER: revoke its tokens at the authorization server when it offers revocation (RFC 7009),
        then delete the login (tokens and client registration) from the user config dir either way."""
        import asyncio

        from bearagent.mcp.oauth import TokenFile
        from bearagent.mcp.oauth_revoke import revoke

        ws = _prepare(loader, workspace)
        spec = _find_spec(ws, server)
        launch = _http_launch(ws, spec, "logout")
        assert launch.oauth_store is not None
        store = TokenFile(Path(launch.oauth_store))
        revoked = asyncio.run(revoke(store)) if store.path.is_file() else None
        if not store.remove():
            click.echo(f"{server}: not logged in; nothing to remove.")
            return
        click.echo(f"Logged out of {server} (removed {launch.oauth_store}).")
        if revoked is not None and revoked.revoked:
            click.echo(f"The tokens were {revoked.detail}.")
        elif revoked is not None:
            click.echo(
                f"The tokens were NOT revoked at the server: {revoked.detail}. They stay valid there until they "
                "expire; revoke the access in the service's own settings if that matters.",
                err=True,
            )

    return mcp


mcp = make_mcp_command(load_mcp_workspace)
