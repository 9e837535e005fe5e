"""The permission mode in force for one agent, and the user's ceiling on it.

The mode comes from, most specific first: a `--permission-mode` flag, the agent's `policy.permission_mode`, the
workspace config, the user config, the built-in default (`acceptEdits`). The user's own `permission_mode` (user
config) is a ceiling: nothing a workspace defines may be looser, trusted or not; a workspace agent that shadows a
user or plugin agent is also held to that agent's mode. A `bypassPermissions` counts as the user's own (and then
lets Bash run unconfined without asking) only when it came from the user: the flag, user config, or an agent file
from the user's config directory, a plugin or the built-ins.

`disableBypassPermissionsMode: "disable"` (Claude Code's setting, in any settings file: it only restricts, so it
applies without trust) takes bypassPermissions off the table: a source that asks for it is skipped, as Claude Code
ignores a `bypassPermissions` it has disabled, and the next source decides (down to the built-in default); the
flag included. `capped` says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bearagent.domain.permission_modes import (
    BYPASS,
    DEFAULT_PERMISSION_MODE,
    PermissionMode,
    mode_looseness,
    parse_permission_mode,
)
from bearagent.domain.specs import AgentSpec


@dataclass(frozen=True, slots=True)
class ModeInForce:
    """The mode the gate uses, whether it is the user's own bypass, and why it was capped (if it was)."""

    mode: PermissionMode
    user_bypass: bool = False
    capped: str | None = None


def mode_in_force(
    agent: AgentSpec,
    *,
    workspace_mode: str | None,
    user_ceiling: str | None,
    shadowed: Iterable[AgentSpec] = (),
    flag: str | None = None,
    bypass_disabled_by: str | None = None,
) -> ModeInForce:
    """Resolve the mode for `agent` (see the module docstring). `workspace_mode` is the merged config value (the
    workspace's if it set one, else the user's); `shadowed` are the lower definitions of the agent's name;
    `bypass_disabled_by` is the settings file that disables bypassPermissions (None: it is allowed)."""
    agent_mode = agent.policy.permission_mode
    candidates: list[tuple[PermissionMode, bool, str]] = []  # (mode, from the user, where), most specific first
    if flag is not None:
        candidates.append((parse_permission_mode(flag, where="--permission-mode"), True, "--permission-mode"))
    if agent_mode is not None:
        where = f"agent {agent.name}: policy.permission_mode"
        candidates.append((parse_permission_mode(agent_mode, where=where), agent.level == "platform", where))
    if workspace_mode is not None:
        candidates.append((parse_permission_mode(workspace_mode), workspace_mode == user_ceiling, "permission_mode"))
    candidates.append((DEFAULT_PERMISSION_MODE, False, "the built-in default"))
    first = candidates[0]
    if bypass_disabled_by is not None:
        candidates = [c for c in candidates if c[0] != BYPASS]  # the default is never bypass: one is left
    requested, from_user, _where = candidates[0]
    ceilings: list[tuple[str, str]] = []
    if user_ceiling is not None and flag is None:
        ceilings.append((user_ceiling, "your user config's permission_mode"))
    if agent.level == "workspace":
        for lower in shadowed:
            if lower.level == "platform" and lower.policy.permission_mode is not None:
                ceilings.append((lower.policy.permission_mode, f"the {lower.name!r} agent it shadows ({lower.source})"))
    mode: PermissionMode = requested
    capped: str | None = None
    if candidates[0] is not first:
        capped = (
            f"permission mode {BYPASS} ({first[2]}) is disabled by disableBypassPermissionsMode in "
            f"{bypass_disabled_by}; {mode} ({candidates[0][2]}) is used instead"
        )
    for ceiling, why in ceilings:
        parsed = parse_permission_mode(ceiling)
        if mode_looseness(parsed) < mode_looseness(mode):
            capped = f"permission mode {mode} was capped at {parsed} by {why}"
            mode, from_user = parsed, True
    return ModeInForce(mode=mode, user_bypass=mode == BYPASS and from_user, capped=capped)
