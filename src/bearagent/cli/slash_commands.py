"""Workspace commands in the interactive session: `/review 42` runs the custom command (or action) `review`.

The session's built-in commands (`/agent`, `/help`, `/exit`, ...) win over a workspace command of the same name
(it stays reachable with `bearagent action run`). A custom command's prompt is rendered with its arguments
(`registries/commands.py`: `$ARGUMENTS`, `$1`…, `@file`, `!` lines never run) and sent as the next message of the
session, run by the command's `agent` if it names one, else the session's agent, with its `allowed-tools`
pre-approved for that run only. An action (`.bearagent/actions/`) takes `key=value` arguments, or the whole line as
`arguments` when its inputs have that property.

A skill is a slash command too, as in Claude Code (which merged commands into skills): `/commit-helper fix typo`
sends the skill's instructions, rendered like a command's body (`$ARGUMENTS`, `$1`…; `ARGUMENTS:` appended when it
has none), with its folder and bundled files named so `Read` can open them, and pre-approves its `allowed-tools`
for that run. Precedence of one name: the session's built-ins, then an action, then a skill, then a custom command
(Claude Code: "the skill wins" over a command of its name); `/help` says which command a skill shadows. A skill with
`user-invocable: false` is not a slash command.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError

if TYPE_CHECKING:
    from bearagent.domain.specs import ActionSpec, SkillSpec
    from bearagent.workspace import LoadedWorkspace

BUILTIN_COMMANDS = frozenset(
    {
        "exit",
        "quit",
        "help",
        "agent",
        "agents",
        "skills",
        "tools",
        "clear",
        "model",
        "mcp",
        "permissions",
        "cost",
        "compact",
        "resume",
        "memory",
        "init",
        "rewind",
        "diff",
    }
)


@dataclass(frozen=True, slots=True)
class SlashInvocation:
    """A workspace command typed in the session, rendered: the message to send and how to run it."""

    action: ActionSpec
    prompt: str
    agent: str | None
    model: str | None
    allowed_tools: tuple[str, ...]
    notes: tuple[str, ...] = ()
    arguments: str = ""
    """The arguments as typed (UserPromptExpansion's `command_args`)."""


def workspace_command(text: str, loaded: LoadedWorkspace) -> SlashInvocation | str | None:
    """The invocation of `/name args` when `name` is a workspace command; an error message (str) when it is one but
    cannot be run as typed; None for a built-in command or an unknown name."""
    from bearagent.registries.actions import invoke_action

    name, _, arg = text[1:].partition(" ")
    if not name or name in BUILTIN_COMMANDS:
        return None
    action = loaded.actions.get(name)
    skill = invocable_skill(loaded, name)
    if skill is not None and (action is None or action.kind == "command"):
        return skill_invocation(skill, arg.strip(), loaded)
    several = loaded.actions.ambiguous(name)
    if several:
        return f"/{name} could be any of {', '.join('/' + n for n in several)}; type it in full"
    action = loaded.actions.find(name)
    if action is None:
        return None
    arguments = arg.strip()
    try:  # the one rule for running an action (`registries.actions.invoke_action`), as the CLI and HTTP use it
        inputs = {"arguments": arguments} if action.kind == "command" else _action_inputs(action, arguments)
        invocation = invoke_action(action, inputs, root=loaded.root, models=loaded.models)
    except BearAgentError as exc:
        return f"{exc.info.message}" + (f" ({exc.hint})" if exc.hint else "")
    except ValueError as exc:
        return f"/{name}: {exc}"
    return SlashInvocation(
        action=action,
        prompt=invocation.prompt,
        agent=invocation.agent,
        model=invocation.model,
        allowed_tools=invocation.allowed_tools,
        notes=invocation.notes,
        arguments=arguments,
    )


def invocable_skill(loaded: LoadedWorkspace, name: str) -> SkillSpec | None:
    """The skill `/name` invokes (None when there is none, or it is not `user-invocable`)."""
    skill = loaded.skills.get(name)
    return skill if skill is not None and skill.user_invocable else None


def skill_command(skill: SkillSpec) -> ActionSpec:
    """A skill as a custom command: its body (rendered as a command's) with its folder and bundled files named."""
    from bearagent.domain.specs import ActionSpec
    from bearagent.registries.actions import DEFAULT_INPUTS

    listing = "\n".join(f"- {path}" for path in skill.files)
    how = f"read one with Skill(name={skill.name!r}, file=...)"
    files = f"\n\nBundled files of this skill ({how}):\n{listing}" if skill.files else ""
    return ActionSpec(
        name=skill.name,
        description=skill.description,
        inputs=DEFAULT_INPUTS,  # type: ignore[arg-type]
        template=f"{skill.body.strip()}\n\n(The instructions of skill {skill.name!r}; its folder is {skill.directory}.){files}",
        source=skill.source,
        level=skill.level,
        origin=skill.origin,
        kind="command",
        argument_hint=skill.argument_hint,
        allowed_tools=skill.allowed_tools,
        argument_names=skill.argument_names,
    )


def skill_invocation(skill: SkillSpec, arguments: str, loaded: LoadedWorkspace) -> SlashInvocation:
    from bearagent.registries.commands import render_command

    action = skill_command(skill)
    rendered = render_command(action, arguments, root=loaded.root)
    return SlashInvocation(
        action=action,
        prompt=rendered.prompt,
        agent=None,
        model=None,
        allowed_tools=skill.allowed_tools,
        notes=rendered.notes,
        arguments=arguments,
    )


def _action_inputs(action: ActionSpec, arguments: str) -> dict[str, JsonValue]:
    properties = action.inputs.get("properties")
    if isinstance(properties, dict) and "arguments" in properties and "=" not in arguments.split(" ", 1)[0]:
        return {"arguments": arguments}
    out: dict[str, JsonValue] = {}
    for pair in shlex.split(arguments):
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"argument {pair!r} is not key=value")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def command_help(loaded: LoadedWorkspace) -> list[str]:
    """One line per workspace command for `/help`: `/name [hint]  description` (built-in names shadow)."""
    lines: list[str] = ["workspace commands:"] if loaded.actions.all() else []
    skills = {s.name: s for s in loaded.skills.all() if s.user_invocable}
    for action in loaded.actions.all():
        usage = f"/{action.name}" + (f" {action.argument_hint}" if action.argument_hint else "")
        if action.name in BUILTIN_COMMANDS:
            usage += " (shadowed by the built-in; use `bearagent action run`)"
        elif action.kind == "command" and action.name in skills:
            usage += " (shadowed by the skill of this name)"
        lines.append(f"  {usage:<30} {action.description.splitlines()[0][:80]}")
    shown = [s for name, s in sorted(skills.items()) if name not in BUILTIN_COMMANDS]
    if shown:
        lines.append("skills (as commands):")
    for skill in shown:
        usage = f"/{skill.name}" + (f" {skill.argument_hint}" if skill.argument_hint else "")
        action = loaded.actions.get(skill.name)
        if action is not None and action.kind != "command":
            usage += " (shadowed by the action of this name)"
        lines.append(f"  {usage:<30} {skill.description.splitlines()[0][:80]}")
    return lines
