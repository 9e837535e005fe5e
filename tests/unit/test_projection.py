"""Invocation projection: allowlists, runtime tools, MCP naming, collisions, model resolution."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.config_ws import EchoTool, agent_file, load, skill_file, write

from bearagent import hookimpl
from bearagent.domain.errors import BearAgentError
from bearagent.domain.tools import ToolSpec
from bearagent.plugins.manager import PluginHost
from bearagent.ports import Tool
from bearagent.runtime.tool_names import PROVIDER_SAFE_RE, provider_safe_name

CONFIG = "models:\n  demo: {provider: scripted, script: s.yaml}\n  sonnet: {provider: anthropic, model: claude-x}\ndefault_model: demo\n"
NATIVE = {"Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch", "TodoWrite"}


def _ws(tmp_path: Path, agents: dict[str, str], plugins: PluginHost | None = None) -> Path:
    write(tmp_path, ".bearagent/config.yaml", CONFIG)
    for name, text in agents.items():
        write(tmp_path, f".bearagent/agents/{name}.md", text)
    write(tmp_path, ".bearagent/skills/alpha/SKILL.md", skill_file("alpha"))
    write(
        tmp_path,
        ".bearagent/actions/review.md",
        "---\ndescription: Review.\ninputs: {type: object, properties: {path: {type: string}}, required: [path]}\n---\nReview $path\n",
    )
    return tmp_path


def _mcp(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=f"mcp {name}", input_schema={"type": "object"})


def test_omitted_tools_is_the_native_default_set_plus_skill(tmp_path: Path) -> None:
    ws = load(_ws(tmp_path, {"a": agent_file()}), tmp_path / "home")
    p = ws.project("a")
    names = {t.name for t in p.tools}
    assert names >= NATIVE and "Skill" in names and "SwitchAgent" not in names
    assert p.subagents == ("explore",)  # `subagents` omitted: every agent it may delegate to (see test_delegation)
    assert p.model is not None and p.model.ref == "workspace/demo"
    skill = p.lookup("Skill")
    assert skill is not None and skill.tool is None and skill.source == "skill"
    enum = skill.spec.input_schema["properties"]["name"]["enum"]  # type: ignore[index]
    assert list(enum) == ["alpha", "code-review"]  # type: ignore[call-overload]


def test_disallowed_removed_first_then_allowlist(tmp_path: Path) -> None:
    ws = load(
        _ws(tmp_path, {"a": agent_file(tools="Read, Grep, Bash", disallowed_tools="[Bash]", skills="[]")}),
        tmp_path / "home",
    )
    p = ws.project("a")
    assert [t.name for t in p.tools] == ["Read", "Grep"]
    assert p.lookup("Bash") is None and p.lookup("Skill") is None


def test_star_includes_plugin_tools_and_default_does_not(tmp_path: Path) -> None:
    class Plugin:
        @hookimpl
        def register_tools(self, register: Callable[[Tool], None]) -> None:
            register(EchoTool())

    host = PluginHost()
    host.register(Plugin(), "echo-plugin")
    ws = load(
        _ws(tmp_path, {"star": agent_file(tools='["*"]'), "plain": agent_file()}), tmp_path / "home", plugins=host
    )
    star = ws.project("star").lookup("Echo")
    assert (
        star is not None and star.source == "plugin" and star.origin == "plugin:echo-plugin" and star.tool is not None
    )
    assert ws.project("plain").lookup("Echo") is None


def test_subagents_switch_and_actions_become_tools(tmp_path: Path) -> None:
    ws = load(
        _ws(
            tmp_path,
            {
                "lead": agent_file(
                    mode="primary",
                    subagents="[explore, plan, ghost]",
                    switch="[plan, explore]",
                    actions="[review, nope]",
                )
            },
        ),
        tmp_path / "home",
    )
    p = ws.project("lead")
    task = p.lookup("Task")
    assert task is not None and task.spec.input_schema["properties"]["subagent_type"]["enum"] == ("explore",)  # type: ignore[index]
    switch = p.lookup("SwitchAgent")
    assert switch is not None and switch.spec.input_schema["properties"]["agent"]["enum"] == ("plan",)  # type: ignore[index]
    action = p.lookup("action__review")
    assert action is not None and action.source == "action" and action.internal_name == "review"
    assert action.spec.input_schema["required"] == ("path",)  # type: ignore[index]
    messages = " | ".join(d.message for d in p.diagnostics)
    assert "'plan', which is not a subagent" in messages and "'ghost', which does not exist" in messages
    assert "'explore', which is not a primary agent" in messages and "action 'nope' does not exist" in messages


def test_mcp_tools_are_projected_with_allowlist(tmp_path: Path) -> None:
    write(tmp_path, ".mcp.json", '{"mcpServers": {"time": {"command": "x"}, "fs": {"command": "y"}}}')
    ws = load(
        _ws(tmp_path, {"all": agent_file(), "some": agent_file(mcp="[time, fs.read_file, nope]")}), tmp_path / "home"
    )
    live = [("time", _mcp("now")), ("fs", _mcp("read_file")), ("fs", _mcp("write_file")), ("time", _mcp("odd.name"))]
    p_all = ws.project("all", mcp_tools=live)
    assert {t.name for t in p_all.tools if t.source == "mcp"} == {
        "mcp__time__now",
        "mcp__fs__read_file",
        "mcp__fs__write_file",
        "mcp__time__odd_name",
    }
    p = ws.project("some", mcp_tools=live)
    assert {t.name for t in p.tools if t.source == "mcp"} == {
        "mcp__time__now",
        "mcp__time__odd_name",
        "mcp__fs__read_file",
    }
    assert p.lookup("mcp__time__odd_name").internal_name == "time.odd.name"  # type: ignore[union-attr]
    assert any("MCP server 'nope' is not configured" in d.message for d in p.diagnostics)
    declared = ws.project("some")
    assert declared.mcp_servers == ("fs", "time") and not [t for t in declared.tools if t.source == "mcp"]


def test_collision_between_sources_names_both_origins(tmp_path: Path) -> None:
    class Plugin:
        @hookimpl
        def register_tools(self, register: Callable[[Tool], None]) -> None:
            register(EchoTool("mcp__time__now"))

    host = PluginHost()
    host.register(Plugin(), "clash")
    write(tmp_path, ".mcp.json", '{"mcpServers": {"time": {"command": "x"}}}')
    ws = load(_ws(tmp_path, {"a": agent_file(tools='["*"]')}), tmp_path / "home", plugins=host)
    with pytest.raises(BearAgentError) as info:
        ws.project("a", mcp_tools=[("time", _mcp("now"))])
    message = info.value.info.message
    assert (
        "'mcp__time__now' is projected twice" in message and "plugin:clash" in message and "mcp server time" in message
    )
    assert info.value.hint


def test_plugin_tool_named_like_a_native_tool_is_refused(tmp_path: Path) -> None:
    class Plugin:
        @hookimpl
        def register_tools(self, register: Callable[[Tool], None]) -> None:
            register(EchoTool("Read"))

    host = PluginHost()
    host.register(Plugin(), "bad")
    ws = load(_ws(tmp_path, {}), tmp_path / "home", plugins=host)
    d = next(d for d in ws.tools.diagnostics if d.code == "tool.name_collision")
    assert "plugin 'bad'" in d.message and "native" in d.message
    assert ws.tools.entry("Read").origin == "native"  # type: ignore[union-attr]


def test_model_alias_resolution_and_errors(tmp_path: Path) -> None:
    ws = load(
        _ws(
            tmp_path,
            {"s": agent_file(model="sonnet"), "h": agent_file(model="haiku"), "bad": agent_file(model="workspace/gtp")},
        ),
        tmp_path / "home",
    )
    assert ws.project("s").model.ref == "workspace/sonnet"  # type: ignore[union-attr]
    h = ws.project("h")
    assert h.model and h.model.ref == "workspace/demo"
    assert any(d.code == "agent.model_alias_inherited" for d in h.diagnostics)
    with pytest.raises(BearAgentError) as info:
        ws.project("bad")
    assert "unknown model 'workspace/gtp'" in info.value.info.message and "workspace/demo" in (info.value.hint or "")
    lenient = ws.project("bad", require_model=False)
    assert lenient.model is None and any(d.code == "agent.model_unresolved" for d in lenient.errors)


def test_no_model_configured_is_a_clear_error(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/agents/a.md", agent_file())
    ws = load(tmp_path, tmp_path / "home")
    with pytest.raises(BearAgentError) as info:
        ws.project("a")
    assert "no default_model" in info.value.info.message and "bearagent init" in (info.value.hint or "")


def test_parent_model_is_inherited(tmp_path: Path) -> None:
    ws = load(_ws(tmp_path, {"a": agent_file()}), tmp_path / "home")
    parent = ws.models.resolve("sonnet")
    assert ws.project("explore", parent_model=parent).model == parent


def test_chat_workspace_projects_no_tools(tmp_path: Path) -> None:
    _ws(tmp_path, {})
    write(tmp_path, ".bearagent/config.yaml", CONFIG + "kind: chat\n")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.project("build").tools == ()


def test_unknown_tool_names_warn_and_none_resolving_is_an_error(tmp_path: Path) -> None:
    ws = load(_ws(tmp_path, {"a": agent_file(tools="Raed, Grep"), "b": agent_file(tools="Nope")}), tmp_path / "home")
    a = ws.project("a")
    assert any("'Raed' is not available (did you mean 'Read'?)" in d.message for d in a.diagnostics)
    assert any(d.code == "agent.no_tools_resolved" for d in ws.project("b").errors)


def test_bind_fills_executors_and_descriptors_are_provider_safe(tmp_path: Path) -> None:
    ws = load(_ws(tmp_path, {"a": agent_file(actions="[review]", subagents="[]")}), tmp_path / "home")
    p = ws.project("a")
    assert set(p.unbound()) == {"Skill", "action__review"}
    bound = p.bind({"Skill": EchoTool("Skill")})
    assert bound.lookup("Skill").tool is not None and bound.unbound() == ("action__review",)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="not projected"):
        p.bind({"Nope": EchoTool()})
    assert all(PROVIDER_SAFE_RE.match(d.name) for d in p.descriptors())


def test_provider_safe_name() -> None:
    assert provider_safe_name("a.b:c d") == "a_b_c_d"
    long = provider_safe_name("mcp__" + "x" * 100)
    assert len(long) == 64 and PROVIDER_SAFE_RE.match(long)
    assert provider_safe_name("mcp__" + "x" * 100) != provider_safe_name("mcp__" + "x" * 99 + "y")
