"""`LoadedWorkspace.capabilities()` is built once for the registries it is made of (`bearagent doctor` projects every
agent through it) and again when one of them is replaced: the tools an editor serves (`use_tools`), or an MCP
registry with the editor's servers added (`acp/agent.py`). An agent without a `skills` list is offered every skill
the model may load, sorted."""

from __future__ import annotations

from pathlib import Path

from tests.support.config_ws import load, skill_file, write
from tests.support.run_ws import scripted_workspace

from bearagent.registries.mcp import build_mcp_registry
from bearagent.registries.tools import NativeToolRegistry
from bearagent.workspace import LoadedWorkspace


def _workspace(tmp_path: Path) -> LoadedWorkspace:
    root = scripted_workspace(tmp_path / "ws", "turns:\n  - text: hi\n")
    for name in ("zeta", "alpha", "mid"):
        write(root, f".bearagent/skills/{name}/SKILL.md", skill_file(name, f"Skill {name}."))
    hidden = "---\nname: hidden\ndescription: Only as /hidden.\ndisable-model-invocation: true\n---\nSteps.\n"
    write(root, ".bearagent/skills/hidden/SKILL.md", hidden)
    return load(root, tmp_path / "home")


def test_the_capabilities_are_built_once_and_again_when_a_registry_is_replaced(tmp_path: Path) -> None:
    loaded = _workspace(tmp_path)
    first = loaded.capabilities()
    assert loaded.capabilities() is first
    assert {"alpha", "mid", "zeta", "hidden"} <= set(first.skills)  # with the built-in skills
    assert first.invocable_skills == tuple(sorted(set(first.skills) - {"hidden"}))  # sorted, `/hidden` only

    tools = loaded.tools
    native = [e.tool for e in tools.entries() if e.is_native and e.name != "Read"]
    loaded.use_tools(NativeToolRegistry(native, [], tools.diagnostics))
    second = loaded.capabilities()
    assert second is not first and "Read" not in second.tools and "Read" in first.tools

    loaded.mcp = build_mcp_registry([], loaded.mcp.diagnostics)
    assert loaded.capabilities() is not second


def test_an_agent_without_a_skills_list_is_offered_every_skill_the_model_may_load(tmp_path: Path) -> None:
    loaded = _workspace(tmp_path)
    projection = loaded.project("build")
    assert loaded.agents.require("build").skills is None
    assert projection.skills == tuple(sorted(set(loaded.capabilities().skills) - {"hidden"}))
    assert {"alpha", "mid", "zeta"} <= set(projection.skills)
