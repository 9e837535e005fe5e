"""`bearagent mcp login NAME`: the interactive half of MCP OAuth (`bearagent.mcp.oauth` has the storage and the
provider sessions use).

A loopback redirect on 127.0.0.1 (RFC 8252: port chosen by the system, or the port of the earlier registration so it
is reused), the authorization URL announced (and opened in the browser unless `--no-browser`), the callback checked
(state, error) and bounded in time and size; then the tools are listed with the new token to prove it works.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, urlsplit

from bearagent.mcp.oauth import (
    CALLBACK_PATH,
    CALLBACK_READ_TIMEOUT_S,
    DEFAULT_LOGIN_TIMEOUT_S,
    MAX_CALLBACK_REQUEST_BYTES,
    McpLoginError,
    TokenFile,
    provider_for,
)

if TYPE_CHECKING:
    from mcp.shared.auth import AuthorizationCodeResult


# ----- the loopback redirect (RFC 8252 §7.3) -----


class _Loopback:
    """A one-shot HTTP listener on 127.0.0.1 that receives the authorization server's redirect."""

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None
        self.port = 0
        self.result: asyncio.Future[dict[str, str]] | None = None

    async def start(self, preferred_port: int | None, fixed_port: int | None = None) -> None:
        self.result = asyncio.get_running_loop().create_future()
        ports = (fixed_port,) if fixed_port else (preferred_port, 0) if preferred_port else (0,)
        failure: OSError | None = None
        for port in ports:
            try:
                self.server = await asyncio.start_server(self._handle, "127.0.0.1", port)
            except OSError as exc:
                failure = exc
                continue
            break
        if self.server is None and fixed_port:
            raise McpLoginError(
                f"could not listen on 127.0.0.1:{fixed_port} for the login redirect (the server's oauth.callbackPort): "
                f"{failure.strerror if failure else 'failed'}; free that port, or change oauth.callbackPort (the "
                "authorization server must accept the new redirect URI)"
            )
        if self.server is None:
            raise McpLoginError("could not listen on 127.0.0.1 for the login redirect")
        sock = self.server.sockets[0]
        self.port = int(sock.getsockname()[1])

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2.0)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(self._read_head(reader), CALLBACK_READ_TIMEOUT_S)
            status, body = self._answer(head)
            payload = body.encode("utf-8")
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(payload)}\r\n"
                "Cache-Control: no-store\r\nConnection: close\r\n\r\n".encode("ascii")
                + payload
            )
            await writer.drain()
        except (OSError, TimeoutError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _read_head(reader: asyncio.StreamReader) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data and b"\n\n" not in data:
            chunk = await reader.read(4096)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_CALLBACK_REQUEST_BYTES:
                raise ValueError("request too large")
        return data

    def _answer(self, head: bytes) -> tuple[str, str]:
        line = head.split(b"\n", 1)[0].decode("latin-1").strip()
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "GET":
            return "405 Method Not Allowed", "<p>Only GET is accepted here.</p>"
        target = urlsplit(parts[1])
        if target.path != CALLBACK_PATH:
            return "404 Not Found", "<p>Not found.</p>"
        query = {k: v[0] for k, v in parse_qs(target.query, max_num_fields=20).items() if v}
        if self.result is None or self.result.done():
            return "409 Conflict", "<p>This login was already completed; you can close this window.</p>"
        if "code" not in query and "error" not in query:
            return "400 Bad Request", "<p>The redirect carried neither a code nor an error.</p>"
        self.result.set_result(query)
        if "error" in query:
            return "200 OK", "<p>BearAgent: the login was refused. You can close this window.</p>"
        return "200 OK", "<p>BearAgent: logged in. You can close this window and return to the terminal.</p>"


@dataclass(frozen=True, slots=True)
class LoginOutcome:
    needed_login: bool
    """False when the server never asked for authorization (no 401): nothing was stored."""
    tool_count: int
    path: Path


async def login(
    *,
    server: str,
    url: str,
    headers: Mapping[str, str],
    store_path: Path,
    announce: Callable[[str], None],
    open_browser: bool,
    timeout_s: float = DEFAULT_LOGIN_TIMEOUT_S,
    connect_timeout_s: float = 30.0,
    scope: str | None = None,
    client_id: str | None = None,
    callback_port: int | None = None,
) -> LoginOutcome:
    """Log in to `server` (always a fresh authorization: the old tokens are dropped first), then list its tools with
    the new token to prove it works. Raises `McpLoginError` with a user-facing message."""
    import httpx2
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult

    from bearagent._version import __version__
    from bearagent.mcp._sdk import list_tools
    from bearagent.mcp.errors import leaves

    store = TokenFile(store_path)
    loop = _Loopback()
    await loop.start(store.registered_redirect_port(), callback_port)
    asked = False
    try:
        store.clear_tokens()
        if client_id:
            store.use_client(client_id, loop.redirect_uri)  # pre-registered: no dynamic registration
        elif store.registered_redirect_port() not in (None, loop.port):
            store.forget_client()  # the registration names another redirect URI: register again

        async def redirect_handler(authorization_url: str) -> None:
            nonlocal asked
            asked = True
            announce(authorization_url)
            if open_browser:
                import webbrowser

                with contextlib.suppress(Exception):
                    await asyncio.to_thread(webbrowser.open, authorization_url)

        async def callback_handler() -> AuthorizationCodeResult:
            assert loop.result is not None
            try:
                query = await asyncio.wait_for(asyncio.shield(loop.result), timeout_s)
            except TimeoutError:
                raise McpLoginError(
                    f"no answer from the browser within {timeout_s:g}s (the authorization server never redirected to "
                    f"{loop.redirect_uri})"
                ) from None
            if "error" in query:
                desc = query.get("error_description", "")
                raise McpLoginError(
                    f"the authorization server refused the login: {query['error'][:100]}"
                    + (f" ({desc[:300]})" if desc else "")
                )
            return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

        provider = provider_for(server, url, store, loop.redirect_uri, redirect_handler, callback_handler, scope)
        try:
            async with httpx2.AsyncClient(
                headers=dict(headers), timeout=httpx2.Timeout(connect_timeout_s, read=connect_timeout_s), auth=provider
            ) as http:
                transport = streamable_http_client(url, http_client=http)
                async with Client(
                    cast(Any, transport),
                    read_timeout_seconds=connect_timeout_s,
                    client_info=types.Implementation(name="bearagent", version=__version__),
                ) as client:
                    tools = await list_tools(client)
        except BaseException as exc:  # the SDK nests what failed in exception groups
            if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError):
                raise
            raise McpLoginError(_login_failure(exc, url, list(leaves(exc)))) from exc
        metadata = provider.context.oauth_metadata
        revocation = metadata.revocation_endpoint if metadata is not None else None
        if asked:
            store.set_revocation_endpoint(str(revocation) if revocation else None)
        return LoginOutcome(needed_login=asked, tool_count=len(tools), path=store_path)
    finally:
        await loop.close()


def _login_failure(exc: BaseException, url: str, found: list[BaseException]) -> str:
    import httpx2
    from mcp import MCPError
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    for leaf in found:
        if isinstance(leaf, McpLoginError):
            return str(leaf)
    for leaf in found:
        if isinstance(leaf, OAuthRegistrationError):
            return f"the authorization server refused the client registration: {str(leaf)[:500]}"
        if isinstance(leaf, OAuthTokenError):
            return f"the authorization server refused the token request: {str(leaf)[:500]}"
        if isinstance(leaf, OAuthFlowError):
            return f"the OAuth flow failed: {str(leaf)[:500]}"
    for leaf in found:
        if isinstance(leaf, httpx2.ConnectError | httpx2.ConnectTimeout):
            return f"could not connect to {url} ({leaf or 'connection refused'})"
        if isinstance(leaf, httpx2.HTTPError):
            return f"HTTP error talking to {url}: {type(leaf).__name__}: {str(leaf)[:300]}"
    for leaf in found:
        if isinstance(leaf, MCPError):
            return f"{url} answered with error {leaf.code}: {leaf.message[:300]}"
    leaf = found[0] if found else exc
    return f"{type(leaf).__name__}: {str(leaf)[:500]}"
