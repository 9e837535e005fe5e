"""The permission mode in force for one agent, and the user's ceiling on it.

The mode comes from, most specific first: a `--permission-mode` flag, the agent's `policy.permission_mode`, the
workspace config, the user config, the built-in default (`acceptEdits`). The user's own `permission_mode` (user
config) is a ceiling: nothing a workspace defines may be looser, trusted or not; a workspace agent that shadows a
user or plugin agent is also held to that agent's mode. A `bypassPermissions` counts as the user's own (and then
lets Bash run unconfined without asking) only when it came from the user: the flag, user config, or an agent file
from the user's config directory, a plugin or the built-ins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bearagent.domain.specs import AgentSpec
from bearagent.tools.policy import DEFAULT_PERMISSION_MODE, PermissionMode, parse_permission_mode
from bearagent.trust.widening import mode_looseness


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
) -> ModeInForce:
    """Resolve the mode for `agent` (see the module docstring). `workspace_mode` is the merged config value (the
    workspace's if it set one, else the user's); `shadowed` are the lower definitions of the agent's name."""
    agent_mode = agent.policy.permission_mode
    from_user = False
    if flag is not None:
        requested, from_user = parse_permission_mode(flag, where="--permission-mode"), True
    elif agent_mode is not None:
        requested = parse_permission_mode(agent_mode, where=f"agent {agent.name}: policy.permission_mode")
        from_user = agent.level == "platform"
    elif workspace_mode is not None:
        requested = parse_permission_mode(workspace_mode)
        from_user = workspace_mode == user_ceiling
    else:
        requested = DEFAULT_PERMISSION_MODE
    ceilings: list[tuple[str, str]] = []
    if user_ceiling is not None and flag is None:
        ceilings.append((user_ceiling, "your user config's permission_mode"))
    if agent.level == "workspace":
        for lower in shadowed:
            if lower.level == "platform" and lower.policy.permission_mode is not None:
                ceilings.append((lower.policy.permission_mode, f"the {lower.name!r} agent it shadows ({lower.source})"))
    mode: PermissionMode = requested
    capped: str | None = None
    for ceiling, why in ceilings:
        parsed = parse_permission_mode(ceiling)
        if mode_looseness(parsed) < mode_looseness(mode):
            capped = f"permission mode {mode} was capped at {parsed} by {why}"
            mode, from_user = parsed, True
    return ModeInForce(mode=mode, user_bypass=mode == "bypassPermissions" and from_user, capped=capped)
