"""What the model is told about the runtime tools: `Skill`, `Task` and `SwitchAgent` (their names, schemas and
descriptions), and whom `Task` may delegate to when `subagents` is omitted (as in Claude Code).

The Task tool's description lists the agents with their descriptions, bounded: the model reads it on every call.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence

from bearagent.domain._base import JsonValue
from bearagent.domain.grant import ToolGrant
from bearagent.domain.specs import AgentSpec
from bearagent.domain.tools import ToolSpec

SKILL_TOOL = "Skill"
TASK_TOOL = "Task"
SWITCH_TOOL = "SwitchAgent"
RUNTIME_TOOL_NAMES = frozenset({SKILL_TOOL, TASK_TOOL, SWITCH_TOOL, "Agent"})  # Agent: Claude Code's name of Task

TASK_LISTING_CHARS = 10_000
"""The most the descriptions in the Task tool's agent listing may take (the model reads it on every call); agents
past it are listed by name, and past TASK_NAMES_CHARS only counted (the enum still names each)."""
TASK_NAMES_CHARS = 15_000
TASK_DESCRIPTION_CHARS = 600
"""The most one agent's description takes in that listing (a wizard-written one with examples runs to pages)."""

_TASK_ENTRY = re.compile(r"^(?:Task|Agent)\((?P<names>[^()]*)\)$")


def _object_schema(properties: Mapping[str, JsonValue], required: Sequence[str]) -> dict[str, JsonValue]:
    return {"type": "object", "properties": dict(properties), "required": list(required), "additionalProperties": False}


def skill_spec(skills: Sequence[str]) -> ToolSpec:
    """The one `Skill` tool: its `name` an enum of the skills the agent may load. Agents mostly share one skill set
    (every skill of the workspace), so the spec of a set is made once (`ToolSpec` is immutable): `bearagent doctor`
    projects every agent, and with 2,000 agents and 2,000 skills it built and checked 2,000 copies of one schema."""
    return _skill_spec(tuple(skills))


@functools.lru_cache(maxsize=16)
def _skill_spec(skills: tuple[str, ...]) -> ToolSpec:
    schema = _object_schema(
        {
            "name": {"type": "string", "enum": list(skills), "description": "the skill to load"},
            "file": {
                "type": "string",
                "description": "optional: one of the skill's bundled files (as listed), to read its content",
            },
        },
        ["name"],
    )
    return ToolSpec(
        name=SKILL_TOOL,
        description="Load a skill: returns its instructions and the list of its bundled files. Call it again with "
        "`file` to read a bundled file. Use it when a task matches a skill in the catalog.",
        input_schema=schema,
    )


def task_spec(subagents: Sequence[str], listing: str) -> ToolSpec:
    """The `Task` tool: `subagent_type` an enum of the agents it may delegate to, `listing` (`agent_listing`) in its
    description."""
    schema = _object_schema(
        {
            "subagent_type": {
                "type": "string",
                "enum": list(subagents),
                "description": "which agent runs the task",
            },
            "prompt": {"type": "string", "description": "the complete task for the subagent"},
            "description": {"type": "string", "description": "a short (3-5 word) label of the task"},
        },
        ["subagent_type", "prompt"],
    )
    return ToolSpec(
        name=TASK_TOOL,
        description="Delegate a task to a subagent, which runs it in a fresh context and returns its final "
        "answer. Choose the agent whose description fits the task; use it proactively when a description says "
        f"so.\nAvailable agents:\n{listing}",
        input_schema=schema,
        side_effect="execute",
    )


def switch_spec(targets: Mapping[str, str]) -> ToolSpec:
    """The `SwitchAgent` tool: `agent` an enum of the primary agents (name -> description, in order) the session may
    be handed to."""
    listing = "\n".join(f"- {name}: {description}" for name, description in targets.items())
    schema = _object_schema(
        {
            "agent": {"type": "string", "enum": list(targets)},
            "reason": {"type": "string", "description": "why the switch"},
        },
        ["agent"],
    )
    return ToolSpec(
        name=SWITCH_TOOL,
        description=f"Hand this session over to another primary agent.\nAvailable agents:\n{listing}",
        input_schema=schema,
    )


def default_subagents(agent: AgentSpec, agents: Mapping[str, AgentSpec], grant: ToolGrant) -> list[str]:
    """`subagents` omitted: a primary agent delegates to every other agent whose mode allows it (subagent or all),
    as Claude Code's main agent does; a `mode: subagent` agent to none. An explicit `tools` list is a restriction
    (as in Claude Code): then only when it names `Task` or `Agent` (or is `*`)."""
    if not agent.is_primary:
        return []
    if grant.restricts_tools and not {"Task", "Agent"} & set(grant.listed or ()):
        return []
    return sorted(n for n, a in agents.items() if n != agent.name and a.is_subagent)


def task_entry_names(agent: AgentSpec) -> list[str]:
    """The agent names of `Agent(a, b)` / `Task(a, b)` entries in `tools`."""
    names: list[str] = []
    for entry in agent.tools or ():
        match = _TASK_ENTRY.match(entry.strip())
        if match is not None:
            names.extend(n.strip() for n in match.group("names").split(",") if n.strip() and n.strip() != "*")
    return names


def agent_listing(agents: Sequence[AgentSpec]) -> tuple[str, list[str]]:
    """`- name: description` lines for the Task tool (whitespace collapsed, each description at most
    TASK_DESCRIPTION_CHARS); past TASK_LISTING_CHARS the rest are listed by name only. Returns (text, names cut)."""
    lines: list[str] = []
    cut: list[str] = []
    total = 0
    for index, target in enumerate(agents):
        text = " ".join(target.description.split())
        if len(text) > TASK_DESCRIPTION_CHARS:
            text = text[: TASK_DESCRIPTION_CHARS - 1].rstrip() + "…"
        line = f"- {target.name}: {text}"
        if cut or total + len(line) > TASK_LISTING_CHARS:
            cut.append(target.name)
            line = f"- {target.name}"
        if total + len(line) > TASK_NAMES_CHARS:
            cut.extend(a.name for a in agents[index + 1 :])
            lines.append(f"- … and {len(agents) - index} more (every subagent_type value is an agent)")
            break
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines), cut
