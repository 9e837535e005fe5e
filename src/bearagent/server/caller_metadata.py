"""`CallerContext.metadata` (seed 002): the extra fields an upstream gateway passes about its caller, from the JWT
claims (`auth.jwt.metadata_claims`) or the proxy headers (`auth.proxy.metadata_headers`) the server config names.

Bounded and filtered like error details (`domain/errors.py`): a name that looks like it carries a secret (`token`,
`password`, `secret`, ...) is refused when the server config is read, at most `MAX_KEYS` names, keys of at most
`MAX_KEY_CHARS`; values are scalars (a string, number or boolean; anything else is left out) cut to
`MAX_VALUE_CHARS`. The metadata is recorded with every session and run the caller creates (`auth_context`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast

from bearagent.domain.errors import SENSITIVE_KEY_FRAGMENTS

MAX_KEYS = 16
MAX_KEY_CHARS = 64
MAX_VALUE_CHARS = 256


def metadata_names(raw: object, field: str) -> tuple[str, ...]:
    """The configured names of `field` (`auth.jwt.metadata_claims`): a list of non-empty strings, none that looks
    sensitive, at most `MAX_KEYS`. Raises `ValueError` naming the field and the fix."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(n, str) and n.strip() for n in cast(list[object], raw)):
        raise ValueError(f"{field} must be a list of names, e.g. [tenant, org]")
    names = tuple(n.strip() for n in cast(list[str], raw))
    if len(names) > MAX_KEYS:
        raise ValueError(f"{field} lists {len(names)} names; at most {MAX_KEYS} are allowed")
    for name in names:
        if len(name) > MAX_KEY_CHARS:
            raise ValueError(f"{field}: {name[:20]!r}... is longer than {MAX_KEY_CHARS} characters")
        lowered = name.lower()
        for fragment in SENSITIVE_KEY_FRAGMENTS:
            if fragment in lowered:
                raise ValueError(
                    f"{field}: {name!r} looks sensitive (contains {fragment!r}); a secret is never recorded with a "
                    "session or run: remove it"
                )
    return names


def collect(names: tuple[str, ...], lookup: Callable[[str], object]) -> dict[str, str]:
    """`{name: value}` for each configured name the caller carries, bounded as the module says."""
    out: dict[str, str] = {}
    for name in names:
        value = lookup(name)
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str | int | float):
            text = str(value)
        else:
            continue
        out[name] = text[:MAX_VALUE_CHARS]
    return out


def header_lookup(headers: Mapping[str, str]) -> Callable[[str], object]:
    return lambda name: headers.get(name)
