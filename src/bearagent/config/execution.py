"""Seed 002's `Workspace.execution_policy`, the one owner of what it means and of its refusal.

`local` (the default) runs tools, MCP servers and hooks on this machine. `none` runs none of them: a `kind: chat`
workspace always; any other when a config file says `execution_policy: none` (the user's config.yaml or the
workspace's own: a level can only tighten, never loosen another's `none`) or the server config marks the workspace
so (`workspaces[].execution_policy: none`). Runs and actions are still admitted under `none` (the model answers with
its prompt and no tools: nothing is projected and the gate denies every call, `runtime/projection.py`,
`tools/policy.py`); a command whose only purpose is to execute something (`mcp list`, `mcp tools`, `hooks test`)
refuses with `execution_disabled` (`require_execution`).
"""

from __future__ import annotations

from bearagent.config.model import BearConfig, ExecutionPolicy
from bearagent.domain.errors import BearAgentError, ErrorInfo

SERVER_CONFIG = "the server config"


def with_server_policy(config: BearConfig, policy: ExecutionPolicy | None) -> BearConfig:
    """`config` with the server config's policy for the workspace over it: `none` tightens; `local` (or None)
    leaves the workspace's own (a server cannot loosen a chat workspace or a user's `none`)."""
    if policy != "none" or config.execution_policy == "none":
        return config
    return config.model_copy(update={"execution_policy": "none", "execution_policy_by": SERVER_CONFIG})


def executes(config: BearConfig) -> bool:
    """Whether anything (a tool, an MCP server, a hook) may run in this workspace."""
    return config.execution_policy == "local"


def policy_reason(config: BearConfig) -> str:
    """Why nothing runs, in words: `this is a chat workspace (kind: chat)` or `execution_policy is none (FILE)`."""
    by = config.execution_policy_by
    if by == "kind: chat":
        return "this is a chat workspace (kind: chat), which runs no tools, MCP servers or hooks"
    return f"this workspace's execution_policy is none (set by {by or 'its configuration'})"


def require_execution(config: BearConfig, what: str) -> None:
    """Refuse `what` (e.g. `starting MCP servers`) in a workspace whose policy is `none`, naming what set it and the
    fix."""
    if executes(config):
        return
    by = config.execution_policy_by
    if by == "kind: chat":
        fix = "use a project workspace (set `kind: project` in .bearagent/config.yaml) to run it"
    elif by == SERVER_CONFIG:
        fix = "ask the server's operator: its config marks this workspace `execution_policy: none`"
    else:
        fix = f"remove `execution_policy: none` from {by or 'the config file'} (or write `local`) to run it"
    raise BearAgentError(
        ErrorInfo.of("configuration", "execution_disabled", f"{what} is refused: {policy_reason(config)}"),
        hint=fix,
    )
