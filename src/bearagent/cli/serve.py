"""`bearagent serve`: serve registered workspaces over HTTP (SPEC §16; docs/server.md)."""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

import click

from bearagent.cli._run_common import die
from bearagent.cli._served import load_served, served_workspaces

DESCRIPTOR_RESERVE = 256
"""File descriptors kept beside the connections: stores, logs, subprocess pipes, MCP servers."""


def _descriptors_for(max_connections: int) -> None:
    """Make sure `limits.max_connections` open connections cannot run the server out of file descriptors: raise the
    soft limit towards the hard one as needed; refuse to start when even that is too low."""
    try:
        import resource
    except ImportError:  # not on POSIX: nothing to check
        return
    need = max_connections + DESCRIPTOR_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft < need:
        die(
            f"limits.max_connections is {max_connections}, which needs {need} file descriptors "
            f"({DESCRIPTOR_RESERVE} kept for the server itself), and this process may open only {soft}",
            f"lower limits.max_connections in --config to at most {max(1, soft - DESCRIPTOR_RESERVE)}, "
            f"or raise the descriptor limit (`ulimit -n {need}`)",
        )


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
        body_timeout_s=config.body_timeout_s,
    )
    _descriptors_for(config.max_connections)
    manager.worker.report = lambda ws, problem: click.echo(
        f"workspace {ws}: runs are not executed: {problem}", err=True
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
            # idle and slow request heads are closed, and connections over the cap at once
            http=edge_protocol(config.header_timeout_s, config.max_header_bytes, config.max_connections),
            timeout_keep_alive=max(1, round(config.keep_alive_timeout_s)),
            h11_max_incomplete_event_size=config.max_header_bytes,
            limit_concurrency=config.max_connections + 1,  # uvicorn counts the asking connection itself
        )
    )
    original = server.startup

    async def startup(sockets: object = None) -> None:
        from bearagent.store.postgres.io_loop import use_this_loop

        use_this_loop()  # uvicorn's loop runs for the process's life: PostgreSQL store calls need no thread hops
        await original(sockets)  # pyright: ignore[reportArgumentType]
        bound = server.servers[0].sockets[0].getsockname() if server.servers else (host, port)
        click.echo(f"serving {len(config.workspaces)} workspace(s) on http://{bound[0]}:{bound[1]}", err=True)
        if "BEARAGENT_SERVE_TOKEN" not in os.environ:
            click.echo(f"token: {token}")
        sys.stdout.flush()

    server.startup = startup  # type: ignore[method-assign]
    from bearagent.cli.startup import long_lived

    long_lived()
    server.run()
