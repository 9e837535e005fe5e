"""`bearagent mcp logout NAME`: revoke the stored tokens at the authorization server (RFC 7009) before they are
deleted locally.

The revocation endpoint is the one the authorization server's metadata advertised at login (`revocation_endpoint`,
kept in the token file). The refresh token is revoked first (that ends the grant), then the access token, each a
form POST `token=...&token_type_hint=...`, the client authenticated as at the token endpoint (`client_id` for a
public client; its secret by `client_secret_post` or HTTP Basic when the registration gave one), bounded in time. Whatever
happens here, `logout` deletes the local file; this only tells the user whether the server forgot the tokens too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from bearagent.mcp.oauth import TokenFile

if TYPE_CHECKING:
    import httpx2

REVOKE_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class Revocation:
    revoked: bool
    """True when the server accepted every revocation (HTTP 200, RFC 7009 §2.2)."""
    detail: str
    """What happened, for the user: the endpoint, or why the tokens were not revoked."""


async def revoke(store: TokenFile, timeout_s: float = REVOKE_TIMEOUT_S) -> Revocation | None:
    """Revoke the login kept in `store`; None when there is no token to revoke."""
    import httpx2

    endpoint, client, tokens = store.revocation()
    if not tokens:
        return None
    if endpoint is None:
        return Revocation(False, "the authorization server did not advertise a revocation endpoint (RFC 7009) at login")
    try:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s), follow_redirects=False) as http:
            for token, hint in tokens:
                form, auth = _client_auth(client)
                data = {"token": token, "token_type_hint": hint, **form}
                answer = await (http.post(endpoint, data=data, auth=auth) if auth else http.post(endpoint, data=data))
                if answer.status_code != 200:
                    body = " ".join(answer.text.split())[:200]
                    return Revocation(
                        False,
                        f"{endpoint} refused to revoke the {hint.replace('_', ' ')} "
                        f"(HTTP {answer.status_code}{': ' + body if body else ''})",
                    )
    except httpx2.HTTPError as exc:
        return Revocation(False, f"could not reach {endpoint} ({type(exc).__name__}: {str(exc)[:200] or 'no answer'})")
    return Revocation(True, f"revoked at {endpoint}")


def _client_auth(client: dict[str, Any]) -> tuple[dict[str, str], httpx2.BasicAuth | None]:
    """The client's credentials for the revocation request, as its registration says to send them."""
    import httpx2

    client_id, secret = client.get("client_id"), client.get("client_secret")
    if not isinstance(client_id, str):
        return {}, None
    if isinstance(secret, str) and secret:
        if client.get("token_endpoint_auth_method") == "client_secret_basic":
            return {}, httpx2.BasicAuth(quote(client_id, safe=""), quote(secret, safe=""))
        return {"client_id": client_id, "client_secret": secret}, None
    return {"client_id": client_id}, None
