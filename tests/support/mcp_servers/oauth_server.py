"""A streamable HTTP MCP server that requires OAuth, with its own authorization server on the same origin.

Run: `python oauth_server.py PORT LOG [TOKEN_LIFETIME_S] [deny]` (`deny`: /authorize answers `error=access_denied`,
as a user clicking "Deny" would). Everything binds 127.0.0.1:PORT.

- Protected resource metadata (RFC 9728) at /.well-known/oauth-protected-resource/mcp, authorization server metadata
  (RFC 8414), dynamic client registration (/register), /authorize (approves at once: it redirects to the client's
  loopback redirect URI with a code, as a user clicking "Allow" would), /token (authorization_code with PKCE, and
  refresh_token with rotation). Access tokens live TOKEN_LIFETIME_S seconds (default 3600).
- /mcp needs `Authorization: Bearer <token>` (401 with `WWW-Authenticate: Bearer resource_metadata=...` otherwise).
- Tool `whoami` answers which client and which token generation made the call.
- Every grant is appended to LOG as one JSON line: {"grant": "authorization_code"|"refresh_token"|"register", ...}.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from pathlib import Path

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class Provider:
    def __init__(self, log: Path, lifetime_s: int, deny: bool = False) -> None:
        self.log = log
        self.deny = deny
        self.lifetime_s = lifetime_s
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.generation = 0

    def _note(self, **fields: object) -> None:
        with self.log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(fields) + "\n")

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self._note(
            grant="register",
            client_id=client_info.client_id,
            redirect_uris=[str(u) for u in client_info.redirect_uris or []],
        )

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        assert client.client_id is not None
        if self.deny:
            return construct_redirect_uri(
                str(params.redirect_uri),
                error="access_denied",
                error_description="the user said no",
                state=params.state,
            )
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None, grant: str) -> OAuthToken:
        self.generation += 1
        access = f"at-{self.generation}-{secrets.token_urlsafe(16)}"
        refresh = f"rt-{self.generation}-{secrets.token_urlsafe(16)}"
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time() + self.lifetime_s),
            resource=resource,
            claims={"generation": self.generation},
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        self._note(grant=grant, client_id=client_id, generation=self.generation, resource=resource)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.lifetime_s,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource, "authorization_code"
        )

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token already used")
        return self._issue(
            refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource, "refresh_token"
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)
        self._note(grant="revoke", client_id=token.client_id, token=token.token[:5])

    async def exchange_identity_assertion(self, *args: object, **kwargs: object) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "not supported")


def _public_clients_may_revoke() -> None:
    """The SDK's revocation form model declares `client_secret: str | None` without a default, so a public client's
    RFC 7009 request (no secret, as BearAgent sends it) is refused as "Field required"; give the field its default."""
    from mcp.server.auth.handlers import revoke

    revoke.RevocationRequest.model_fields["client_secret"].default = None
    revoke.RevocationRequest.model_rebuild(force=True)


def main(argv: list[str]) -> None:
    _public_clients_may_revoke()
    port = int(argv[1])
    log = Path(argv[2])
    lifetime = int(argv[3]) if len(argv) > 3 else 3600
    base = f"http://127.0.0.1:{port}"
    provider = Provider(log, lifetime, deny=len(argv) > 4 and argv[4] == "deny")
    if len(argv) > 6:  # a client registered in advance: CLIENT_ID CALLBACK_PORT (the user's oauth.clientId)
        provider.clients[argv[5]] = OAuthClientInformationFull(
            client_id=argv[5],
            redirect_uris=[f"http://127.0.0.1:{argv[6]}/callback"],  # pyright: ignore[reportArgumentType]
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope="mcp",
        )
    server = MCPServer(
        "oauth-demo",
        auth_server_provider=provider,  # pyright: ignore[reportArgumentType]
        auth=AuthSettings(
            issuer_url=base,  # pyright: ignore[reportArgumentType]
            resource_server_url=f"{base}/mcp",  # pyright: ignore[reportArgumentType]
            validate_token_resource=False,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=["mcp"],
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Which client and which token generation made this call."""
        token = get_access_token()
        if token is None:
            return "anonymous"
        generation = (token.claims or {}).get("generation")
        return f"client {token.client_id}, token generation {generation}"

    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main(sys.argv)
