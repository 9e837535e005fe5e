"""Real agent plans for loop tests, made by the real planner: the scripted provider, the native tools and the real\ntool gate."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path

from bearagent.config.workspace import Source
from bearagent.domain.specs import AgentSpec, ModelEntry, ModelPrice
from bearagent.ports import Tool
from bearagent.providers.scripted import ScriptedProvider, parse_script
from bearagent.registries.models import build_model_registry
from bearagent.runtime.plan import AgentPlan
from bearagent.runtime.projection import AvailableTool, Capabilities, project_invocation
from bearagent.service.planner import PlanInputs, PolicyInputs, plan_agent
from bearagent.tools.builtin import native_tools
from bearagent.tools.gate import ToolGate
from bearagent.tools.permissions import PermissionRules


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
    """The planner's plan (`bearagent.service.planner.plan_agent`) for an agent over the native tools (plus `extra_tools`)
    with a scripted model; `allow` are permission rules (e.g. `Bash(sleep *)`: the shell asks outside the sandbox,
    and nobody answers in a test)."""
    script_path = root / ".bearagent" / "script.yaml"
    script_path.parent.mkdir(parents=True, exist_ok=True)
    script_path.write_text(script, encoding="utf-8")
    provider = ScriptedProvider(parse_script(script, script_path))
    tools = [t for t in native_tools() if t.spec.name in tool_names] + list(extra_tools)
    spec = AgentSpec(
        name=agent,
        description="A test agent.",
        prompt=system_prompt,
        tools=tuple(t.spec.name for t in tools),
        system_reminder=system_reminder,
    )
    entry = ModelEntry(name="scripted", provider="scripted", script=str(script_path), price=price)
    caps = Capabilities(
        tools={t.spec.name: AvailableTool(t, "native") for t in tools},
        default_tools=frozenset(t.spec.name for t in tools),
        skills={},
        actions={},
        agents={agent: spec},
        mcp_servers=(),
    )
    models = build_model_registry([(entry, Source("workspace", "workspace", 10_000))], [], [])
    projection = project_invocation(spec, caps, models, default_model="scripted")
    return plan_agent(
        PlanInputs(
            agent=spec,
            projection=projection,
            model=entry,
            provider=provider,
            root=root,
            today=date.today(),
            gates=ToolGate,
            policy=PolicyInputs(rules=PermissionRules.parse(allow=allow, root=root)),
        )
    )
