"""Delegation as in Claude Code: a primary agent may delegate to every agent whose mode allows it unless its own
`subagents` list narrows it; the Task tool's description lists them with their descriptions."""

from __future__ import annotations

from pathlib import Path

from tests.support.config_ws import agent_file, load, write
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.runtime.runtime_tools import TASK_DESCRIPTION_CHARS, TASK_LISTING_CHARS, TASK_NAMES_CHARS

CONFIG = "default_model: demo\nmodels:\n  demo: {provider: scripted, script: s.yaml}\n"


def _ws(root: Path, agents: dict[str, str]) -> Path:
    write(root, ".bearagent/config.yaml", CONFIG)
    for name, text in agents.items():
        write(root, f".claude/agents/{name}.md", text)
    return root


def _task(ws_root: Path, home: Path, agent: str) -> tuple[list[str], str]:
    p = load(ws_root, home).project(agent)
    task = p.lookup("Task")
    if task is None:
        return [], ""
    enum = task.spec.input_schema["properties"]["subagent_type"]["enum"]  # type: ignore[index]
    return list(enum), task.spec.description  # type: ignore[call-overload]


def test_the_builtin_primary_agents_delegate_to_every_claude_code_agent(tmp_path: Path) -> None:
    root = _ws(
        tmp_path,
        {
            "code-reviewer": agent_file("Reviews code for bugs. Use proactively after code changes."),
            "test-runner": agent_file("Runs the tests.", mode="subagent"),
            "lead": agent_file("A primary agent.", mode="primary"),
        },
    )
    for primary in ("build", "plan"):
        names, description = _task(root, tmp_path / "home", primary)
        assert names == ["code-reviewer", "explore", "test-runner"]
        assert "- code-reviewer: Reviews code for bugs. Use proactively after code changes." in description
        assert "- test-runner: Runs the tests." in description
    names, _ = _task(root, tmp_path / "home", "code-reviewer")  # mode all: primary too, never itself
    assert names == ["explore", "test-runner"]
    assert _task(root, tmp_path / "home", "test-runner") == ([], "")  # a mode-subagent agent: none by default


def test_an_explicit_list_narrows_and_a_restricting_tools_list_needs_task(tmp_path: Path) -> None:
    root = _ws(
        tmp_path,
        {
            "a": agent_file("A.", subagents="[explore]"),
            "b": agent_file("B.", tools="Read, Grep"),
            "c": agent_file("C.", tools="Read, Task"),
            "d": agent_file("D.", tools='["Read", "Agent(a, c)"]'),
            "e": agent_file("E.", subagents="[]"),
        },
    )
    home = tmp_path / "home"
    assert _task(root, home, "a")[0] == ["explore"]
    assert _task(root, home, "b")[0] == []
    assert _task(root, home, "c")[0] == ["a", "b", "d", "e", "explore"]
    assert _task(root, home, "d")[0] == ["a", "c"]
    assert _task(root, home, "e")[0] == []
    assert not [d for d in load(root, home).project("c").diagnostics if d.code == "agent.unknown_tool"]


def test_long_descriptions_are_cut_and_a_huge_roster_is_listed_by_name(tmp_path: Path) -> None:
    long = "Use this agent when reviewing. " * 100
    agents = {f"agent-{i:03d}": agent_file(long.strip()) for i in range(40)}
    root = _ws(tmp_path, agents)
    names, description = _task(root, tmp_path / "home", "build")
    assert len(names) == 41
    first = description.split("\n- ")[1]
    assert first.startswith("agent-000: Use this agent") and len(first) <= len("agent-000: ") + TASK_DESCRIPTION_CHARS
    assert first.endswith("…")
    assert TASK_LISTING_CHARS < len(description) < TASK_NAMES_CHARS + 400
    assert "\n- explore" in description  # past the limit: by name only
    cut = [
        d for d in load(root, tmp_path / "home").project("build").diagnostics if d.code == "projection.task_listing_cut"
    ]
    # the cut names are listed up to MAX_LISTED_NAMES, then counted (issue 32: 200 agents made it a traceback)
    assert len(cut) == 1 and "without their description" in cut[0].message and cut[0].message.endswith(" more")


def test_the_main_agent_delegates_to_a_claude_code_agent_in_a_real_run(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Task, arguments: {subagent_type: code-reviewer, prompt: "review x.py", description: review}}]
  - tool_calls: [{name: Write, arguments: {file_path: y.txt, content: "no"}}]
  - text: "LGTM"
  - text: "The reviewer says LGTM."
"""
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read, Task]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    write(root, ".claude/agents/code-reviewer.md", agent_file("Reviews code.", tools="Read, Write, Grep"))
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("review my change")
        assert result.status == "succeeded", result.error
        assert result.final == "The reviewer says LGTM."
        child = runtime_of(ws).store.list_runs(parent_run_id=result.run_id)[0]
        assert child.agent_name == "code-reviewer" and child.status == "succeeded"
        failed = [e for e in ws.events(str(child.run_id)) if e.event_type == "ToolCallFailed"]
        assert "no tool named 'Write'" in str(failed[0].payload["result"])  # the parent has no Write: intersection
    assert not (root / "y.txt").exists()


def test_a_roster_past_the_name_budget_is_counted_and_the_description_stays_valid() -> None:
    from bearagent.domain.specs import AgentSpec
    from bearagent.domain.tools import ToolSpec
    from bearagent.runtime.runtime_tools import agent_listing

    agents = [AgentSpec(name=f"agent-number-{i:04d}", description="Does one thing.") for i in range(2000)]
    text, cut = agent_listing(agents)
    assert len(text) <= TASK_NAMES_CHARS + 100 and text.endswith("more (every subagent_type value is an agent)")
    assert cut[-1] == "agent-number-1999" and "agent-number-0000" not in cut
    ToolSpec(name="Task", description=f"Delegate.\n{text}", input_schema={"type": "object"})  # within its limit
