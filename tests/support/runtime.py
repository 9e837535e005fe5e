"""Build real agent plans for loop tests: the scripted provider, the native tools and the real tool gate."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from bearagent.domain.models import ToolDescriptor
from bearagent.domain.specs import ModelPrice
from bearagent.ports import Tool
from bearagent.providers.scripted import ScriptedProvider, parse_script
from bearagent.runtime.plan import AgentPlan, BoundTool
from bearagent.tools.builtin import native_tools
from bearagent.tools.gate import ToolGate
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.policy import ToolPolicy


def bind(tools: Iterable[Tool]) -> dict[str, BoundTool]:
    out: dict[str, BoundTool] = {}
    for tool in tools:
        spec = tool.spec
        out[spec.name] = BoundTool(
            projected_name=spec.name,
            internal_name=spec.name,
            source="native",
            descriptor=ToolDescriptor(name=spec.name, description=spec.description, input_schema=spec.input_schema),
            spec_version=spec.version,
        )
    return out


def scripted_plan(
    root: Path,
    script: str,
    *,
    agent: str = "build",
    tool_names: Sequence[str] = ("Read", "Write", "Edit", "Glob", "Grep", "Bash", "TodoWrite"),
    extra_tools: Sequence[Tool] = (),
    system_prompt: str = "You are a careful agent.",
    price: ModelPrice | None = None,
    system_reminder: str | None = None,
    allow: Sequence[str] = (),
) -> AgentPlan:
    """A plan over the native tools with a scripted model; `allow` are permission rules (e.g. `Bash(sleep *)`: the
    shell asks outside the sandbox, and nobody answers in a test)."""
    script_path = root / ".bearagent" / "script.yaml"
    script_path.parent.mkdir(parents=True, exist_ok=True)
    script_path.write_text(script, encoding="utf-8")
    provider = ScriptedProvider(parse_script(script, script_path))
    tools = [t for t in native_tools() if t.spec.name in tool_names] + list(extra_tools)
    gate = ToolGate(
        {t.spec.name: t for t in tools},
        policy=ToolPolicy(root=root, rules=PermissionRules.parse(allow=allow, root=root)),
    )
    return AgentPlan(
        agent_name=agent,
        system_prompt=system_prompt,
        model_ref="workspace/scripted",
        model_name="scripted",
        provider=provider,
        gate=gate,
        tools=bind(tools),
        price=price,
        system_reminder=system_reminder,
    )
