"""`bearagent acp`: BearAgent as an ACP v1 agent over stdio (an editor starts it; docs/acp.md)."""

from __future__ import annotations

import click


@click.command("acp")
@click.option(
    "-a", "--agent", default=None, help="Agent every session starts with (default: the workspace's default_agent)."
)
@click.option("-m", "--model", default=None, help="Model ref to use instead of the agent's.")
@click.option(
    "--permission-mode",
    default=None,
    help="Permission mode sessions start in (default, acceptEdits, plan, dontAsk, bypassPermissions); the client "
    "may change it per session (session/set_mode), always within your permission ceiling.",
)
@click.option(
    "--client-terminal",
    is_flag=True,
    help="Run Bash in the editor's terminal (ACP terminal/*) when it offers one. The commands then run as the "
    "editor runs them, outside BearAgent's sandbox, so permission mode default asks before each one.",
)
def acp(agent: str | None, model: str | None, permission_mode: str | None, client_terminal: bool) -> None:
    """Speak the Agent Client Protocol on stdin/stdout: an editor (Zed, JetBrains, Neovim) starts this command and
    each session it opens runs in the session's working directory as its workspace, trusted as for `bearagent run`.
    Diagnostics go to stderr; stdout carries only the protocol."""
    import asyncio

    from bearagent.domain.errors import BearAgentError

    if permission_mode is not None:
        from bearagent.tools.policy import parse_permission_mode

        try:
            permission_mode = parse_permission_mode(permission_mode, where="--permission-mode")
        except BearAgentError as exc:
            raise click.UsageError(exc.info.message) from None
    asyncio.run(_serve(agent, model, permission_mode, client_terminal))


async def _serve(agent: str | None, model: str | None, permission_mode: str | None, client_terminal: bool) -> None:
    import asyncio
    import contextlib
    import os
    import signal

    from acp import run_agent

    from bearagent.acp.agent import BearAcpAgent
    from bearagent.acp.stdio import stdio_streams

    server = BearAcpAgent(
        env=dict(os.environ),
        agent=agent,
        model=model,
        permission_mode=permission_mode,
        client_terminal=client_terminal,
    )
    # Our streams, not the SDK's: its stdin reader never saw end of file on /dev/null (bearagent.acp.stdio). At end
    # of file the SDK's receive loop returns, its close cancels the requests in flight (a prompt's run is cancelled
    # by the agent), and `server.aclose` closes every session: the process exits 0 on its own.
    reader, writer = await stdio_streams()
    # SIGTERM and SIGHUP (an editor that does not wait for end of file: the SDK's own client sends SIGTERM 2 s after
    # closing stdin) stop the same way, instead of killing the process with a prompt's run still marked running.
    # A second signal is not caught: it ends the process at once, should closing the sessions hang.
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = (signal.SIGTERM, signal.SIGHUP)

    def stopping() -> None:
        for sig in signals:
            loop.remove_signal_handler(sig)
        stop.set()

    for sig in signals:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stopping)
    serving = asyncio.ensure_future(run_agent(server, input_stream=writer, output_stream=reader))
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
        serving.cancel()  # (nothing if it has returned: end of file)
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    finally:
        stopped.cancel()
        await server.aclose()
