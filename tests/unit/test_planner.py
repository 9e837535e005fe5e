"""The agent planner from values alone: no workspace on disk, no store, no network."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from bearagent.config.workspace import Source
from bearagent.domain._base import frozen_json
from bearagent.domain.specs import AgentPolicy, AgentSpec, ModelEntry
from bearagent.domain.tools import ToolSpec
from bearagent.providers.scripted import ScriptedProvider, parse_script
from bearagent.registries.models import build_model_registry
from bearagent.runtime.projection import AvailableTool, Capabilities, project_invocation
from bearagent.service.planner import PlanInputs, PolicyInputs, plan_agent
from bearagent.tools.builtin import native_tools
from bearagent.tools.gate import ToolGate

ROOT = Path("/nonexistent/ws")
MODEL = ModelEntry(name="m", provider="scripted", script="s.yaml", temperature=0.3, max_output_tokens=500)


def caps(agents: dict[str, AgentSpec] | None = None) -> Capabilities:
    tools = {t.spec.name: AvailableTool(t, "native") for t in native_tools()}
    return Capabilities(
        tools=tools,
        default_tools=frozenset(tools),
        skills={},
        actions={},
        agents=agents or {},
        mcp_servers=(),
    )


def inputs(agent: AgentSpec, **overrides: object) -> PlanInputs:
    models = build_model_registry([(MODEL, Source("user", "user", 20_000))], [], [])
    projection = project_invocation(agent, caps({agent.name: agent}), models, default_model="m")
    provider = ScriptedProvider(parse_script("turns:\n  - text: hi\n", Path("s.yaml")))
    values: dict[str, object] = {
        "agent": agent,
        "projection": projection,
        "model": MODEL,
        "provider": provider,
        "root": ROOT,
        "today": date(2026, 12, 1),
        "gates": ToolGate,
        **overrides,
    }
    return PlanInputs(**values)  # type: ignore[arg-type]


def spec_of(plan_gate: object, name: str) -> ToolSpec:
    assert isinstance(plan_gate, ToolGate)
    return plan_gate.tools[name].spec


def test_a_subagent_never_gets_a_tool_its_parent_lacks() -> None:
    agent = AgentSpec(name="scout", description="Finds.", tools=("Read", "Glob", "Write"))
    plan = plan_agent(inputs(agent, parent_tools=frozenset({"Read", "Glob"})))
    assert sorted(plan.tools) == ["Glob", "Read"]
    assert plan.tool_spec_versions == {"Glob": "1", "Read": "1"}


def test_the_grant_and_the_mode_reach_the_gate() -> None:
    agent = AgentSpec(name="b", description="Builds.", tools=("Read", "Bash(git *)"), disallowed_tools=("Bash(rm *)",))
    plan = plan_agent(inputs(agent))
    gate = plan.gate
    assert isinstance(gate, ToolGate)
    bash = spec_of(gate, "Bash")
    assert gate.policy.decide(bash, {"command": "git status"}, ROOT).outcome == "allow"  # pre-approved by `tools`
    assert gate.policy.decide(bash, {"command": "rm -rf x"}, ROOT).outcome == "deny"  # the deny specifier
    assert gate.policy.decide(bash, {"command": "ls"}, ROOT).outcome == "ask"  # unconfined shell asks
    sandboxed = plan_agent(inputs(agent, policy=PolicyInputs(shell_sandboxed=True)))
    assert isinstance(sandboxed.gate, ToolGate)
    assert sandboxed.gate.policy.decide(bash, {"command": "ls"}, ROOT).outcome == "allow"
    strict = plan_agent(inputs(agent, policy=PolicyInputs(mode="plan", shell_sandboxed=True)))
    assert isinstance(strict.gate, ToolGate) and strict.permission_mode == "plan"
    assert strict.gate.policy.decide(bash, {"command": "ls"}, ROOT).outcome == "deny"


def test_project_instructions_go_to_a_top_level_primary_agent_only() -> None:
    primary = AgentSpec(name="main", description="Main.", mode="primary", prompt="You lead.")
    sub = AgentSpec(name="sub", description="Sub.", mode="subagent", prompt="You help.")
    notes = ("Always run the tests.", "AGENTS.md")
    assert "Always run the tests." in plan_agent(inputs(primary, instructions=notes)).system_prompt
    assert "Always run the tests." not in plan_agent(inputs(primary, instructions=notes, depth=1)).system_prompt
    assert "Always run the tests." not in plan_agent(inputs(sub, instructions=notes)).system_prompt


def test_agent_settings_win_over_the_model_entry() -> None:
    plain = plan_agent(inputs(AgentSpec(name="a", description="A.")))
    assert (plain.temperature, plain.max_output_tokens, plain.model_ref) == (0.3, 500, "workspace/m")
    tuned = AgentSpec(
        name="t", description="T.", temperature=0.9, max_output_tokens=64, policy=AgentPolicy(max_switches=2)
    )
    plan = plan_agent(inputs(tuned, tool_settings=frozen_json({"allow_private_network": False})))
    assert (plan.temperature, plan.max_output_tokens, plan.max_switches) == (0.9, 64, 2)
    assert plan.tool_settings == {"allow_private_network": False}
