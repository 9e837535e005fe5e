"""A hook handler's capability boundary as the user sees it (seed 002: every hook declares what it may do).

A handler that declares no `capabilities` gets all three (`block`, `rewrite`, `context`: Claude Code's scripts work
unchanged); that boundary is shown, never hidden: `all (undeclared)` in `hooks list`, `doctor` and the trust
listing, so a workspace hook that may do everything says so before it is trusted."""

from __future__ import annotations

from bearagent.domain.specs import HookHandlerSpec


def declared(spec: HookHandlerSpec) -> bool:
    """Whether the handler's entry declared `capabilities` (a plugin's Python handler always does)."""
    return "capabilities" in spec.model_fields_set


def effective(spec: HookHandlerSpec) -> list[str]:
    """The capabilities the dispatcher lets the handler use, sorted."""
    return sorted(spec.capabilities)


def label(spec: HookHandlerSpec) -> str:
    """`block,context` as declared, `none` for an empty declaration, `all (undeclared)` for none declared."""
    if not declared(spec):
        return "all (undeclared)"
    return ",".join(effective(spec)) or "none"
