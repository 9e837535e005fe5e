"""Turn what the SDK raises while connecting (often nested `ExceptionGroup`s) into ONE clear message per server.

`describe_failure` walks the group tree, picks the most telling leaf and says what failed and how to fix it. The SDK
and `httpx2` classes are imported inside the function, so importing this module stays cheap.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from bearagent.domain.errors import BearAgentError

CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
METHOD_NOT_FOUND = -32601


@dataclass(frozen=True, slots=True)
class McpFailure:
    """What went wrong with one server (`message`) and what the user should do about it (`hint`)."""

    kind: str
    message: str
    hint: str

    def text(self) -> str:
        return f"{self.message} Fix: {self.hint}"


class McpConnectError(Exception):
    """A server could not be connected; carries the unwrapped, user-facing `McpFailure`."""

    def __init__(self, failure: McpFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass(frozen=True, slots=True)
class ConnectContext:
    """What the message may mention about the attempt (never header or env values)."""

    server: str
    where: str  # e.g. "config.yaml: mcp_servers.time"
    transport: str
    command: Sequence[str] = ()
    cwd: str | None = None
    url: str | None = None
    startup_timeout_s: float = 30.0
    stderr_tail: str = ""
    garbage_lines: int = 0
    garbage_sample: str = ""
    unauthorized: bool = False
    """http: the server answered 401 at some point of the attempt."""
    has_auth_header: bool = False


def leaves(exc: BaseException) -> Iterator[BaseException]:
    """Every non-group exception inside `exc` (depth first)."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]
            yield from leaves(inner)  # pyright: ignore[reportUnknownArgumentType]
    else:
        yield exc


def _stderr_part(ctx: ConnectContext) -> str:
    tail = ctx.stderr_tail.strip()
    return f" Its stderr ended with:\n{tail}\n" if tail else " It wrote nothing to stderr."


def _garbage_part(ctx: ConnectContext) -> str:
    if not ctx.garbage_lines:
        return ""
    sample = f" (first: {ctx.garbage_sample!r})" if ctx.garbage_sample else ""
    return f" It printed {ctx.garbage_lines} line(s) on stdout that are not JSON-RPC{sample}."


def _run_by_hand(ctx: ConnectContext) -> str:
    if not ctx.command:
        return ""
    return f"run `{shlex.join(ctx.command)}` by hand{f' in {ctx.cwd}' if ctx.cwd else ''} to see why, "


def startup_timeout(ctx: ConnectContext) -> McpFailure:
    what = (
        f"MCP server {ctx.server!r} ({ctx.where}) did not finish starting (initialize + tools/list) within "
        f"{ctx.startup_timeout_s:g}s."
    )
    if ctx.transport == "stdio":
        what += _garbage_part(ctx) + _stderr_part(ctx)
        hint = (
            f"check that `{shlex.join(ctx.command)}` is an MCP stdio server (it must answer JSON-RPC on stdout), "
            f"or raise `startup_timeout_s` in {ctx.where} if it is just slow to start."
        )
    else:
        hint = f"check that {ctx.url} is a streamable HTTP MCP endpoint, or raise `startup_timeout_s` in {ctx.where}."
    return McpFailure("startup_timeout", what.strip(), hint)


def login_required(ctx: ConnectContext) -> McpFailure:
    head = f"MCP server {ctx.server!r} ({ctx.where})"
    fix = f"run `bearagent mcp login {ctx.server}`"
    if ctx.has_auth_header:
        fix += f", or fix the `Authorization` header in {ctx.where}"
    return McpFailure(
        "auth_required",
        f"{head}: {ctx.url} answered 401 Unauthorized: the server needs a login (OAuth) and there is no valid one.",
        fix + ".",
    )


def describe_failure(exc: BaseException, ctx: ConnectContext) -> McpFailure:
    """One message for one failed connection attempt (startup or a later crash)."""
    import httpx2
    import pydantic
    from mcp import MCPError

    from bearagent.mcp.oauth import McpLoginRequired

    found = list(leaves(exc))
    head = f"MCP server {ctx.server!r} ({ctx.where})"

    if ctx.transport == "http" and (ctx.unauthorized or any(isinstance(leaf, McpLoginRequired) for leaf in found)):
        return login_required(ctx)

    for leaf in found:
        if isinstance(leaf, BearAgentError):
            return McpFailure("configuration", f"{head}: {leaf.info.message}.", leaf.hint or f"fix {ctx.where}.")

    for leaf in found:
        if isinstance(leaf, FileNotFoundError | PermissionError | NotADirectoryError) and ctx.transport == "stdio":
            filename = getattr(leaf, "filename", None)
            if ctx.cwd and filename and str(filename) == ctx.cwd:
                return McpFailure(
                    "bad_cwd",
                    f"{head}: working directory {ctx.cwd!r} does not exist.",
                    f"create it or fix `cwd` in {ctx.where}.",
                )
            command = ctx.command[0] if ctx.command else "?"
            if isinstance(leaf, PermissionError):
                return McpFailure(
                    "command_not_executable",
                    f"{head}: command {command!r} is not executable.",
                    f"`chmod +x {command}` or fix `command` in {ctx.where}.",
                )
            return McpFailure(
                "command_not_found",
                f"{head}: command {command!r} was not found (looked up in the PATH passed to the server).",
                f"install it, or set `command` in {ctx.where} to an absolute path.",
            )

    for leaf in found:
        if isinstance(leaf, httpx2.ConnectError | httpx2.ConnectTimeout):
            return McpFailure(
                "http_connect",
                f"{head}: could not connect to {ctx.url} ({leaf or 'connection refused'}).",
                f"start the server, or fix `url` in {ctx.where}.",
            )
        if isinstance(leaf, httpx2.RemoteProtocolError):
            return McpFailure(
                "http_disconnected",
                f"{head}: the HTTP server at {ctx.url} dropped the connection ({leaf}).",
                "check that the server is still running; the next call reconnects.",
            )
        if isinstance(leaf, httpx2.HTTPError):
            return McpFailure(
                "http_error",
                f"{head}: HTTP error talking to {ctx.url}: {type(leaf).__name__}: {leaf}.",
                f"check the server and `url`/`headers` in {ctx.where}.",
            )

    for leaf in found:
        if isinstance(leaf, TimeoutError) or (isinstance(leaf, MCPError) and leaf.code == REQUEST_TIMEOUT):
            return startup_timeout(ctx)

    for leaf in found:
        if isinstance(leaf, MCPError):
            if leaf.code == CONNECTION_CLOSED:
                if ctx.transport == "stdio":
                    msg = f"{head}: the server process exited or closed its stdout ({leaf.message})." + _stderr_part(
                        ctx
                    )
                    return McpFailure(
                        "exited", msg.strip(), f"{_run_by_hand(ctx)}or fix `command`/`args`/`env` in {ctx.where}."
                    )
                return McpFailure(
                    "connection_closed",
                    f"{head}: the connection to {ctx.url} closed ({leaf.message}).",
                    "check that the server is still running; the next call reconnects.",
                )
            if leaf.code == METHOD_NOT_FOUND and ctx.transport == "http":
                return McpFailure(
                    "http_not_found",
                    f"{head}: {ctx.url} answered 'Not Found' — no MCP endpoint at that path.",
                    f"fix `url` in {ctx.where} (streamable HTTP servers usually serve `/mcp`).",
                )
            return McpFailure(
                "protocol_error",
                f"{head}: the server answered the handshake with error {leaf.code}: {leaf.message}.",
                "check that the server speaks MCP (protocol 2025-11-25 or later).",
            )

    for leaf in found:
        if isinstance(leaf, UnicodeDecodeError | pydantic.ValidationError | ValueError):
            msg = f"{head}: the server sent data that is not valid MCP ({type(leaf).__name__}: {str(leaf)[:300]})."
            return McpFailure(
                "protocol_garbage", msg + _garbage_part(ctx), "check that the server speaks MCP on this transport."
            )

    leaf = found[0] if found else exc
    msg = f"{head}: {type(leaf).__name__}: {str(leaf)[:500]}."
    if ctx.transport == "stdio":
        msg += _stderr_part(ctx)
    return McpFailure("unexpected", msg.strip(), f"check the server and {ctx.where}.")
