"""Who is calling: the `CallerContext` of seed 002, from a bearer token.

Two kinds of token (SPEC §16):
- the server's own local token (`BEARAGENT_SERVE_TOKEN`, else generated and printed at start, like Jupyter): every
  scope, every workspace served, subject `local`;
- a JWT from an upstream gateway, verified with the key in server config (PyJWT): `sub` becomes `subject_ref`,
  `scope` (space-separated) or `scopes` (a list) the scopes, `workspaces` (a list of workspace ids, or `*`) the
  workspace access. An expired, unsigned or wrongly signed token is refused.
Tokens are compared in constant time; no token value ever reaches a log line or an error message.

And, with `auth.proxy` configured, identity headers set by a reverse proxy (`X-Forwarded-User`, scopes, workspaces):
believed only from the configured proxy addresses (the TCP peer, never an `X-Forwarded-For` it sends); the same
headers from anywhere else are refused (401), so a client that can reach the server directly cannot claim a name.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias, cast

from bearagent.domain._base import JsonValue
from bearagent.server.caller_metadata import collect, header_lookup, metadata_names
from bearagent.server.subjects import subject_ref

SCOPES: tuple[str, ...] = ("runs:read", "runs:write", "approvals:write", "actions:run", "admin")
Scope: TypeAlias = Literal["runs:read", "runs:write", "approvals:write", "actions:run", "admin"]
AuthSource: TypeAlias = Literal["local_token", "jwt", "proxy"]


@dataclass(frozen=True, slots=True)
class CallerContext:
    """The caller of one request: who (`subject_ref`), what they may do (`scopes`), which workspaces they may see
    (`workspace_access`: ids, or `*` for all) and how that was established (`auth_source`)."""

    subject_ref: str
    scopes: frozenset[str]
    workspace_access: frozenset[str]
    auth_source: AuthSource
    metadata: Mapping[str, str] = field(default_factory=dict[str, str])

    def may_see(self, workspace_id: str) -> bool:
        return "*" in self.workspace_access or workspace_id in self.workspace_access

    def has(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    def snapshot(self) -> dict[str, JsonValue]:
        """What a session or run records of the caller that created it: the whole context (no secrets: the metadata
        names are filtered when the server config is read, `server/caller_metadata.py`)."""
        return {
            "subject_ref": self.subject_ref,
            "scopes": list(sorted(self.scopes)),
            "workspace_access": list(sorted(self.workspace_access)),
            "auth_source": self.auth_source,
            "metadata": dict(self.metadata),
        }


class AuthError(Exception):
    """A request without a valid token (401)."""


@dataclass(frozen=True, slots=True)
class JwtSettings:
    """How gateway tokens are verified: a key (PEM public key or shared secret) and the accepted algorithms; the
    audience and issuer are checked when set."""

    key: str
    algorithms: tuple[str, ...] = ("RS256", "ES256")
    audience: str | None = None
    issuer: str | None = None
    metadata_claims: tuple[str, ...] = ()
    """Claims copied into `CallerContext.metadata` (`auth.jwt.metadata_claims`)."""

    @classmethod
    def from_config(cls, raw: Mapping[str, object], base: Path) -> JwtSettings:
        key_file = raw.get("key_file")
        key = raw.get("key")
        if isinstance(key_file, str):
            path = Path(key_file) if Path(key_file).is_absolute() else base / key_file
            key = path.read_text(encoding="utf-8")
        if not isinstance(key, str) or not key:
            raise ValueError("auth.jwt needs `key_file` (a PEM public key) or `key` (a shared secret)")
        algorithms = raw.get("algorithms", ["RS256", "ES256"])
        if not isinstance(algorithms, list) or not all(isinstance(a, str) for a in cast(list[object], algorithms)):
            raise ValueError("auth.jwt.algorithms must be a list of algorithm names, e.g. [RS256]")
        audience = raw.get("audience")
        issuer = raw.get("issuer")
        return cls(
            key=key,
            algorithms=tuple(cast(list[str], algorithms)),
            audience=audience if isinstance(audience, str) else None,
            issuer=issuer if isinstance(issuer, str) else None,
            metadata_claims=metadata_names(raw.get("metadata_claims"), "auth.jwt.metadata_claims"),
        )


IpNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class ProxySettings:
    """Identity from headers a reverse proxy sets, believed only from `trusted` addresses. The scopes header is
    space- or comma-separated; the workspaces header comma-separated ids, or `*`."""

    trusted: tuple[IpNetwork, ...]
    subject_header: str = "X-Forwarded-User"
    scopes_header: str = "X-Forwarded-Scopes"
    workspaces_header: str = "X-Forwarded-Workspaces"
    metadata_headers: tuple[str, ...] = ()
    """Headers copied into `CallerContext.metadata`, keyed by the header name as configured
    (`auth.proxy.metadata_headers`)."""

    @classmethod
    def from_config(cls, raw: Mapping[str, object]) -> ProxySettings:
        trusted = raw.get("trusted")
        if not isinstance(trusted, list) or not trusted:
            raise ValueError("auth.proxy.trusted must list the proxy's addresses, e.g. [127.0.0.1/32]")
        networks: list[IpNetwork] = []
        for item in cast(list[object], trusted):
            try:
                networks.append(ipaddress.ip_network(str(item), strict=False))
            except ValueError:
                raise ValueError(f"auth.proxy.trusted: {item!r} is not an address or a network (10.0.0.0/8)") from None
        names: dict[str, str] = {}
        for key in ("subject_header", "scopes_header", "workspaces_header"):
            value = raw.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"auth.proxy.{key} must be a header name")
            if isinstance(value, str):
                names[key] = value.strip()
        metadata = metadata_names(raw.get("metadata_headers"), "auth.proxy.metadata_headers")
        return cls(trusted=tuple(networks), metadata_headers=metadata, **names)

    def trusts(self, peer: str | None) -> bool:
        if not peer:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self.trusted)


class Authenticator:
    """Maps an `Authorization: Bearer …` header (or a trusted proxy's identity headers) to a `CallerContext`, or
    raises `AuthError`."""

    def __init__(self, local_token: str, jwt: JwtSettings | None = None, proxy: ProxySettings | None = None) -> None:
        self._local = local_token
        self._jwt = jwt
        self._proxy = proxy

    @staticmethod
    def new_local_token() -> str:
        return secrets.token_urlsafe(32)

    def authenticate(
        self,
        authorization: str | None,
        *,
        peer: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> CallerContext:
        """`peer` is the address the request came from (the TCP peer); `headers` the request's headers, for the
        proxy's identity headers (case-insensitive, as Starlette's are)."""
        proxy = self._proxy
        subject = headers.get(proxy.subject_header) if proxy is not None and headers is not None else None
        if proxy is not None and headers is not None and subject is not None:
            if not proxy.trusts(peer):
                raise AuthError(
                    f"identity headers ({proxy.subject_header}) are accepted only from the configured proxy "
                    "addresses (auth.proxy.trusted)"
                )
            return self._from_proxy(subject, headers, proxy)
        if not authorization or not authorization.lower().startswith("bearer "):
            raise AuthError("missing bearer token: send `Authorization: Bearer <token>`")
        token = authorization[7:].strip()
        if hmac.compare_digest(token.encode(), self._local.encode()):
            return CallerContext("local", frozenset(SCOPES), frozenset({"*"}), "local_token")
        if self._jwt is None:
            raise AuthError("the token is not valid for this server")
        return self._from_jwt(token, self._jwt)

    def _from_proxy(self, subject: str, headers: Mapping[str, str], proxy: ProxySettings) -> CallerContext:
        subject = subject.strip()
        if not subject:
            raise AuthError(f"the {proxy.subject_header} header is empty")
        scopes = (headers.get(proxy.scopes_header) or "").replace(",", " ").split()
        workspaces = [w.strip() for w in (headers.get(proxy.workspaces_header) or "").split(",") if w.strip()]
        return CallerContext(
            subject_ref=subject_ref(subject),
            scopes=frozenset(s for s in scopes if s in SCOPES),
            workspace_access=frozenset(workspaces),
            auth_source="proxy",
            metadata=collect(proxy.metadata_headers, header_lookup(headers)),
        )

    def _from_jwt(self, token: str, settings: JwtSettings) -> CallerContext:
        import jwt

        try:
            claims = cast(
                dict[str, object],
                jwt.decode(  # pyright: ignore[reportUnknownMemberType]
                    token,
                    settings.key,
                    algorithms=list(settings.algorithms),
                    audience=settings.audience,
                    issuer=settings.issuer,
                    options={"require": ["sub", "exp"]},
                ),
            )
        except jwt.PyJWTError as exc:
            raise AuthError(f"the token was refused: {type(exc).__name__}") from None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise AuthError("the token has no subject (`sub`)")
        scopes = _strings(claims.get("scopes")) or tuple(str(claims.get("scope") or "").split())
        workspaces = _strings(claims.get("workspaces"))
        return CallerContext(
            subject_ref=subject_ref(subject),
            scopes=frozenset(s for s in scopes if s in SCOPES),
            workspace_access=frozenset(workspaces),
            auth_source="jwt",
            metadata=collect(settings.metadata_claims, claims.get),
        )


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return tuple(v for v in cast(Sequence[object], value) if isinstance(v, str))
    return ()
