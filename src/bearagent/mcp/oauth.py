"""OAuth 2.1 for remote (streamable HTTP) MCP servers, as the MCP authorization spec and Claude Code do it.

The protocol itself is the `mcp` SDK's `OAuthClientProvider` (an `httpx2.Auth`): on a 401 it discovers the protected
resource metadata (RFC 9728, from `WWW-Authenticate` or the well-known URLs), the authorization server metadata
(RFC 8414 / OpenID discovery), registers a client dynamically (RFC 7591), runs the authorization code grant with PKCE
(S256) and the `resource` indicator (RFC 8707), and refreshes an expired access token with its refresh token.

What BearAgent adds around it:

- `TokenFile`: the SDK's `TokenStorage`, one JSON file per server and URL under `<user config dir>/mcp-oauth/`
  (directory 0700, file 0600, written atomically), holding the client registration, the tokens and the absolute
  expiry time (the SDK keeps only `expires_in`, so a token loaded by a later process would never look expired and
  never be refreshed). A file that is unreadable, too big or not what we wrote counts as "no login" (fail closed).
- `bearagent mcp login NAME`: `bearagent.mcp.oauth_login` (the loopback redirect and the browser).
- Sessions (`session_auth()`): a server with a stored login gets a provider that refreshes silently; it never opens
  a browser. When the server still answers 401 (no login, refresh refused, token revoked), the connection fails with
  `McpLoginRequired`, and the message names `bearagent mcp login NAME`.

The SDK is imported lazily (inside the functions), like everywhere in `bearagent.mcp`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

TOKEN_DIR = "mcp-oauth"
MAX_TOKEN_FILE_BYTES = 64 * 1024
MAX_CALLBACK_REQUEST_BYTES = 16 * 1024
CALLBACK_READ_TIMEOUT_S = 10.0
DEFAULT_LOGIN_TIMEOUT_S = 300.0
CALLBACK_PATH = "/callback"
CLIENT_NAME = "BearAgent"
FILE_VERSION = 1


class McpLoginRequired(Exception):
    """The server answered 401 and there is no usable login (sessions never start an interactive login)."""

    def __init__(self, server: str) -> None:
        super().__init__(f"MCP server {server!r} needs a login: run `bearagent mcp login {server}`")
        self.server = server


class McpLoginError(Exception):
    """`bearagent mcp login` failed: what went wrong (already user-facing)."""


def token_dir(config_dir: Path) -> Path:
    return config_dir / TOKEN_DIR


def token_path(config_dir: Path, server: str, url: str) -> Path:
    """Where the login of `server` at `url` is kept. The URL is part of the key: the same name pointing somewhere
    else (another workspace, an edited entry) never receives this server's tokens."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", server)[:64]
    return token_dir(config_dir) / f"{safe}-{digest}.json"


@dataclass(frozen=True, slots=True)
class StoredLogin:
    """What `bearagent mcp list`/`logout` may show about a stored login (never the tokens)."""

    path: Path
    has_tokens: bool
    expires_at: float | None
    has_refresh_token: bool


class TokenFile:
    """The SDK's `TokenStorage` protocol on one 0600 JSON file (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.expires_at: float | None = None

    # ----- file -----

    def _read(self) -> dict[str, Any]:
        try:
            with self.path.open("rb") as f:
                raw = f.read(MAX_TOKEN_FILE_BYTES + 1)
        except OSError:
            return {}
        if len(raw) > MAX_TOKEN_FILE_BYTES:
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return {}
        if not isinstance(data, dict) or cast(dict[str, Any], data).get("version") != FILE_VERSION:
            return {}
        return cast(dict[str, Any], data)

    def _write(self, data: dict[str, Any]) -> None:
        directory = self.path.parent
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            os.chmod(directory, 0o700)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")  # mkstemp creates it 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({**data, "version": FILE_VERSION}, f, indent=2)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def stored(self) -> StoredLogin | None:
        if not self.path.is_file():
            return None
        data = self._read()
        tokens = data.get("tokens")
        tokens_map = cast(dict[str, Any], tokens) if isinstance(tokens, dict) else {}
        expires = data.get("expires_at")
        return StoredLogin(
            path=self.path,
            has_tokens=bool(tokens_map.get("access_token")),
            expires_at=float(expires) if isinstance(expires, int | float) else None,
            has_refresh_token=bool(tokens_map.get("refresh_token")),
        )

    def has_tokens(self) -> bool:
        stored = self.stored()
        return stored is not None and stored.has_tokens

    def clear_tokens(self) -> None:
        data = self._read()
        if not data:
            return
        data.pop("tokens", None)
        data.pop("expires_at", None)
        self._write(data)

    def forget_client(self) -> None:
        data = self._read()
        data.pop("client_info", None)
        self._write(data)

    def remove(self) -> bool:
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    # ----- TokenStorage -----

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken
        from pydantic import ValidationError

        data = self._read()
        tokens = data.get("tokens")
        if not isinstance(tokens, dict):
            return None
        try:
            token = OAuthToken.model_validate(tokens)
        except ValidationError:
            return None
        expires = data.get("expires_at")
        self.expires_at = float(expires) if isinstance(expires, int | float) else None
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        data = self._read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        # a little early, like the SDK's own expiry computation, so a token is not sent in its last second
        self.expires_at = time.time() + max(0, tokens.expires_in - 5) if tokens.expires_in is not None else None
        data["expires_at"] = self.expires_at
        self._write(data)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull
        from pydantic import ValidationError

        info = self._read().get("client_info")
        if not isinstance(info, dict):
            return None
        try:
            return OAuthClientInformationFull.model_validate(info)
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        data = self._read()
        data["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)

    def use_client(self, client_id: str, redirect_uri: str) -> None:
        """A pre-registered client (`oauth.clientId`): stored as the registration, so the SDK never registers one;
        a stored registration of another client is replaced."""
        data = self._read()
        info = data.get("client_info")
        if isinstance(info, dict) and cast(dict[str, Any], info).get("client_id") == client_id:
            cast(dict[str, Any], info)["redirect_uris"] = [redirect_uri]
        else:
            data.pop("tokens", None)
            data["client_info"] = {
                "client_id": client_id,
                "redirect_uris": [redirect_uri],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            }
        self._write(data)

    def set_revocation_endpoint(self, url: str | None) -> None:
        """Where `logout` revokes the tokens (RFC 7009), as the authorization server's metadata said at login."""
        data = self._read()
        if url:
            data["revocation_endpoint"] = url
        else:
            data.pop("revocation_endpoint", None)
        self._write(data)

    def revocation(self) -> tuple[str | None, dict[str, Any], list[tuple[str, str]]]:
        """(revocation endpoint, client registration, [(token, token_type_hint)]) of the stored login: the refresh
        token first (revoking it ends the grant), then the access token."""
        data = self._read()
        endpoint = data.get("revocation_endpoint")
        info = data.get("client_info")
        if not isinstance(info, dict):
            info = {}
        tokens = data.get("tokens")
        found: list[tuple[str, str]] = []
        if isinstance(tokens, dict):
            for key, hint in (("refresh_token", "refresh_token"), ("access_token", "access_token")):
                value = cast(dict[str, Any], tokens).get(key)
                if isinstance(value, str) and value:
                    found.append((value, hint))
        return (endpoint if isinstance(endpoint, str) else None, cast(dict[str, Any], info) if info else {}, found)

    def registered_redirect_port(self) -> int | None:
        """The loopback port of the stored registration's redirect URI (reused so the registration stays valid)."""
        info = self._read().get("client_info")
        if not isinstance(info, dict):
            return None
        uris = cast(dict[str, Any], info).get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            return None
        parts = urlsplit(str(cast(list[object], uris)[0]))
        if parts.hostname != "127.0.0.1" or parts.port is None:
            return None
        return parts.port


def provider_for(
    server: str,
    url: str,
    store: TokenFile,
    redirect_uri: str,
    redirect_handler: Callable[[str], Awaitable[None]],
    callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
    scope: str | None,
) -> OAuthClientProvider:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata
    from pydantic import AnyUrl

    from bearagent._version import __version__

    class _Provider(OAuthClientProvider):
        async def _initialize(self) -> None:
            await super()._initialize()
            # the SDK does not persist the expiry: without it a stored, expired token is sent as is and never
            # refreshed (the server's 401 would then start a new interactive login)
            self.context.token_expiry_time = store.expires_at

    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=scope,
        software_id="bearagent",
        software_version=__version__,
    )
    return _Provider(
        server_url=url,
        client_metadata=metadata,
        storage=store,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )


def session_auth(server: str, url: str, store_path: Path, scope: str | None = None) -> httpx2.Auth | None:
    """The auth of a session's HTTP client: None without a stored login (a 401 then fails the connection with
    the login hint), else a provider that refreshes but never starts an interactive login."""
    store = TokenFile(store_path)
    if not store.has_tokens():
        return None

    async def no_browser(_url: str) -> None:
        raise McpLoginRequired(server)

    async def no_callback() -> AuthorizationCodeResult:
        raise McpLoginRequired(server)

    registered = store.registered_redirect_port()
    redirect = f"http://127.0.0.1:{registered or 0}{CALLBACK_PATH}"
    return provider_for(server, url, store, redirect, no_browser, no_callback, scope)
