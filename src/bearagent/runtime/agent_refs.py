"""An agent's references checked against the workspace: the agents its `subagents`/`switch` lists name, the MCP
servers its `mcp` list names. A name that is not there is a warning naming the closest match, worded once for
every kind of reference (`agent_warning`, `did_you_mean`)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import AgentSpec


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `candidates`, or nothing."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def agent_warning(
    agent: AgentSpec, code: str, key: str, message: str, fix: str, severity: Literal["warning", "error"] = "warning"
) -> Diagnostic:
    """A diagnostic about one field of an agent file, worded `agent 'name': ...`."""
    return Diagnostic(
        severity=severity,
        code=code,
        message=f"agent {agent.name!r}: {message}",
        source=agent.source,
        field=key,
        subject=agent.name,
        fix=fix,
    )


def agents_for(
    agent: AgentSpec,
    names: Sequence[str],
    agents: Mapping[str, AgentSpec],
    key: str,
    check: Callable[[AgentSpec], bool],
    need: str,
    diags: list[Diagnostic],
) -> list[str]:
    """The names of `names` (the agent's `key` list) that are agents passing `check`; the others are warnings."""
    found: list[str] = []
    for name in dict.fromkeys(names):
        target = agents.get(name)
        if target is None:
            diags.append(
                agent_warning(
                    agent,
                    f"agent.unknown_{key}",
                    key,
                    f"{key} names {name!r}, which does not exist{did_you_mean(name, agents)}; it is skipped",
                    "`bearagent agents list` shows the agents",
                )
            )
        elif not check(target):
            diags.append(
                agent_warning(
                    agent,
                    f"agent.invalid_{key}",
                    key,
                    f"{key} names {name!r}, which is not {need}; it is skipped",
                    f"set `mode:` in {target.source or name}",
                )
            )
        else:
            found.append(name)
    return found


def mcp_servers_for(agent: AgentSpec, configured: Sequence[str], diags: list[Diagnostic]) -> set[str]:
    """The configured servers the agent's `mcp` allowlist names (all when omitted); unknown names are warnings."""
    if agent.mcp is None:
        return set(configured)
    servers: set[str] = set()
    for entry in agent.mcp:
        server = entry.partition(".")[0]
        if server not in configured:
            diags.append(
                agent_warning(
                    agent,
                    "agent.unknown_mcp_server",
                    "mcp",
                    f"MCP server {server!r} is not configured{did_you_mean(server, configured)}; it is skipped",
                    "declare it under `mcp_servers:` in config.yaml or in .mcp.json",
                )
            )
            continue
        servers.add(server)
    return servers
