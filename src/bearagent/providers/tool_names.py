"""Internal tool names <-> provider-safe names (`^[A-Za-z0-9_-]{1,64}$`), deterministically and reversibly.

A legal name is sent unchanged. An illegal one (e.g. `mcp.time/now`, `Bash(git)`, 80 characters) has each illegal
character replaced by `_`; when that shortened form is longer than 64 characters or collides with another name of
the same request, it is cut to 55 characters and suffixed with `_` + the first 8 hex digits of the SHA-256 of the
internal name. Names are assigned in sorted order, so the same set of names always gives the same map.

A name the model sends back that is not in the map is returned unchanged: the runtime reports it as an unknown
tool; nothing here guesses which tool was meant.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ILLEGAL_RE = re.compile(r"[^A-Za-z0-9_-]")
MAX_SAFE_CHARS = 64


def _hashed(name: str, salt: int = 0) -> str:
    digest = hashlib.sha256(f"{name}\x00{salt}".encode() if salt else name.encode()).hexdigest()[:8]
    base = _ILLEGAL_RE.sub("_", name)[: MAX_SAFE_CHARS - 9] or "tool"
    return f"{base}_{digest}"


class ToolNameMap:
    """The projection of one request's tool names (offered tools plus names found in the history)."""

    __slots__ = ("_to_internal", "_to_provider")

    def __init__(self, names: Iterable[str]) -> None:
        self._to_provider: dict[str, str] = {}
        self._to_internal: dict[str, str] = {}
        unique = sorted(set(names))
        # Legal names keep their spelling and are reserved first, so an illegal name never steals one.
        for name in unique:
            if SAFE_NAME_RE.match(name):
                self._assign(name, name)
        for name in unique:
            if name in self._to_provider:
                continue
            candidate = _ILLEGAL_RE.sub("_", name)
            if not candidate or len(candidate) > MAX_SAFE_CHARS or candidate in self._to_internal:
                candidate = _hashed(name)
            salt = 0
            while candidate in self._to_internal:
                salt += 1
                candidate = _hashed(name, salt)
            self._assign(name, candidate)

    def _assign(self, internal: str, safe: str) -> None:
        self._to_provider[internal] = safe
        self._to_internal[safe] = internal

    def to_provider(self, internal: str) -> str:
        """The provider-safe name (names outside the map are projected on the fly, without collision checks)."""
        safe = self._to_provider.get(internal)
        if safe is not None:
            return safe
        if SAFE_NAME_RE.match(internal):
            return internal
        return _hashed(internal)

    def to_internal(self, provider_name: str) -> str:
        """The internal name, or `provider_name` itself when the model invented a name not in the map."""
        return self._to_internal.get(provider_name, provider_name)

    def items(self) -> tuple[tuple[str, str], ...]:
        return tuple(self._to_provider.items())
