"""`bearagent serve`: serve registered workspaces over HTTP (SPEC §16; docs/server.md)."""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

import click

from bearagent.cli._run_common import die
from bearagent.cli._served import load_served, served_workspaces


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (0 = any free).")
@served_workspaces(
    "A workspace to serve (repeatable); its id is the directory name.",
    "Server config: workspaces, gateway JWT or proxy-header auth, limits (docs/server.md).",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(0, 64),
    help="In-process workers that execute queued runs (0 = API only: `bearagent worker` processes run them).",
)
@click.option(
    "--concurrency",
    default=16,
    show_default=True,
    type=click.IntRange(1, 1024),
    help="Runs each in-process worker executes at once.",
)
def serve(
    host: str, port: int, workspaces: tuple[Path, ...], config_file: Path | None, workers: int, concurrency: int
) -> None:
    """Serve workspaces over HTTP: sessions, background runs, events as JSON or SSE (OpenAPI at /openapi.json).

    Without gateway auth the server only binds loopback and prints its local token as `token: <value>`
    (BEARAGENT_SERVE_TOKEN sets it)."""
    config = load_served(workspaces, config_file)
    if not _is_loopback(host) and not config.gateway_auth:
        die(
            f"refusing to bind {host}: it is not a loopback address and no gateway auth is configured",
            "configure `auth.jwt` or `auth.proxy` in --config (docs/server.md#auth), or bind 127.0.0.1 behind your gateway",
        )
    import uvicorn

    from bearagent.server.app import create_app
    from bearagent.server.auth import Authenticator
    from bearagent.server.edges import edge_protocol
    from bearagent.server.registry import RunManager

    token = os.environ.get("BEARAGENT_SERVE_TOKEN") or Authenticator.new_local_token()
    manager = RunManager(
        config.workspaces,
        dict(os.environ),
        workers=workers,
        concurrency=concurrency,
        resume_interrupted=config.resume_on_start,
        store=config.store,
    )
    app = create_app(
        manager,
        Authenticator(token, config.jwt, config.proxy),
        max_body_bytes=config.max_body_bytes,
        max_active_runs_per_caller=config.max_active_runs_per_caller,
        max_sse_per_caller=config.max_sse_per_caller,
        sse_idle_timeout_s=config.sse_idle_timeout_s,
        resume_on_start=config.resume_on_start,
    )
    # proxy_headers off: the client address is the TCP peer, so auth.proxy.trusted cannot be met by a forged
    # X-Forwarded-For from a client that reaches the server directly
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
            proxy_headers=False,
            http=edge_protocol(config.header_timeout_s),  # idle and slow request heads are closed
            timeout_keep_alive=max(1, round(config.keep_alive_timeout_s)),
            h11_max_incomplete_event_size=config.max_header_bytes,
            limit_concurrency=config.max_connections,
        )
    )
    original = server.startup

    async def startup(sockets: object = None) -> None:
        await original(sockets)  # pyright: ignore[reportArgumentType]
        bound = server.servers[0].sockets[0].getsockname() if server.servers else (host, port)
        click.echo(f"serving {len(config.workspaces)} workspace(s) on http://{bound[0]}:{bound[1]}", err=True)
        if "BEARAGENT_SERVE_TOKEN" not in os.environ:
            click.echo(f"token: {token}")
        sys.stdout.flush()

    server.startup = startup  # type: ignore[method-assign]
    server.run()
