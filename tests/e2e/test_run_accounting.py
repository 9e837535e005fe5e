"""What a run costs includes what it caused: a subagent's model calls, tool calls, tokens and cost are charged to
its parent and every ancestor, so a budget set on the request bounds the whole tree of runs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of

TASK = '{name: Task, arguments: {subagent_type: scout, prompt: "look around", description: look}}'


def test_a_budget_of_three_model_calls_bounds_the_parent_and_its_children(tmp_path: Path) -> None:
    # Unbounded, this would be 6 calls: 3 in the parent, 2 and 1 in two children.
    script = f"""
turns:
  - tool_calls: [{TASK}]
  - tool_calls: [{{name: Read, arguments: {{file_path: notes.md}}}}]
  - text: "scout: notes read"
  - tool_calls: [{TASK}]
  - text: "second scout"
  - text: "parent done"
"""
    agents = {
        "main": agent_md("Main agent.", mode="primary", tools="[Read]", subagents="[scout]"),
        "scout": agent_md("Finds things.", mode="subagent", tools="[Read]"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    (root / "notes.md").write_text("notes\n")
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("explore", budgets={"max_model_iterations": 3})
        store = runtime_of(ws).store
        runs = [*store.list_runs(parent_run_id=result.run_id), store.get_run(result.run_id)]
        own_calls = sum(
            1
            for run in runs
            if run is not None
            for e in ws.events(str(run.run_id))
            if e.event_type == "ModelCallRequested"
        )
        assert own_calls <= 3
        assert result.status == "failed" and result.error is not None and result.error.category == "budget"
        parent = ws.run_info(str(result.run_id))
        assert parent.usage.model_iterations == 3  # one of its own, two charged from the scout
        child = store.list_runs(parent_run_id=result.run_id)[0]
        assert child.usage.model_iterations == 2 and child.usage.tool_calls == 1
        assert parent.usage.tool_calls == 1 + 1  # its Task call and the scout's Read
        finished = [e for e in ws.events(str(result.run_id)) if e.event_type == "ChildRunFinished"]
        assert finished and finished[0].schema_version == 2
        usage = finished[0].payload["usage"]
        assert isinstance(usage, Mapping) and usage["model_iterations"] == 2


def test_a_grandchild_is_charged_to_every_ancestor(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Task, arguments: {subagent_type: mid, prompt: "delegate", description: d}}]
  - tool_calls: [{name: Task, arguments: {subagent_type: leaf, prompt: "work", description: w}}]
  - text: "leaf done"
  - text: "mid done"
  - text: "root done"
"""
    agents = {
        "main": agent_md("Main.", mode="primary", tools="[Read]", subagents="[mid]"),
        "mid": agent_md("Middle.", mode="subagent", tools="[Read]", subagents="[leaf]"),
        "leaf": agent_md("Leaf.", mode="subagent", tools="[Read]"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("go")
        assert result.status == "succeeded", result.error
        store = runtime_of(ws).store
        mid = store.list_runs(parent_run_id=result.run_id)[0]
        leaf = store.list_runs(parent_run_id=mid.run_id)[0]
        assert leaf.usage.model_iterations == 1
        assert mid.usage.model_iterations == 2 + 1
        assert result.usage.model_iterations == 2 + 3


def _trusted_ws(root: Path, home: Path) -> None:
    from tests.support.config_ws import isolated_env, load

    from bearagent.trust import trust, workspace_trust_surface

    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))


def test_an_agent_hook_judge_is_a_child_run_charged_to_its_parent_and_never_recurses(tmp_path: Path) -> None:
    # Before: the judge was a top-level run whose own UserPromptSubmit fired the same hook, 14 levels deep.
    script = """
turns:
  - text: '{"ok": true}'
"""
    config = """
default_agent: main
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml}
hooks:
  UserPromptSubmit:
    - hooks: [{type: agent, prompt: "Is this prompt safe? $ARGUMENTS", agent: explore}]
"""
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=config)
    home = tmp_path / "home"
    _trusted_ws(root, home)
    with open_ws(root, home) as ws:
        result = ws.run_sync("hello")
        assert result.status == "succeeded", result.error
        store = runtime_of(ws).store
        top = [r for r in store.list_runs(limit=100) if r.parent_run_id is None]
        assert [r.run_id for r in top] == [result.run_id]
        judges = store.list_runs(parent_run_id=result.run_id)
        assert len(judges) == 1 and judges[0].trigger_type == "hook" and judges[0].agent_name == "explore"
        assert ws.events(str(judges[0].run_id))[0].payload["trigger_ref"] == "UserPromptSubmit agent hook"
        assert store.list_runs(parent_run_id=judges[0].run_id) == []
        assert result.usage.model_iterations == 1 + 1  # its own call and the judge's


def test_a_prompt_hook_judge_is_a_child_run_in_the_log(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: done
"""
    judge_script = """
turns:
  - text: '{"ok": true}'
"""
    config = """
default_agent: main
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml}
  judge: {provider: scripted, script: judge.yaml}
hooks:
  PreToolUse:
    - matcher: Read
      hooks: [{type: prompt, prompt: "May the agent read this? $ARGUMENTS", model: judge}]
"""
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=config)
    (root / ".bearagent" / "judge.yaml").write_text(judge_script)
    (root / "notes.md").write_text("notes\n")
    home = tmp_path / "home"
    _trusted_ws(root, home)
    with open_ws(root, home) as ws:
        result = ws.run_sync("read the notes")
        assert result.status == "succeeded", result.error
        judges = runtime_of(ws).store.list_runs(parent_run_id=result.run_id)
        assert len(judges) == 1 and judges[0].agent_name == "hook-judge"
        assert ws.events(str(judges[0].run_id))[0].payload["trigger_ref"] == "PreToolUse prompt hook"
        types = [e.event_type for e in ws.events(str(judges[0].run_id))]
        assert "ModelCallCompleted" in types and types[-1] == "RunSucceeded"
        # the judge's plan names its model entry's provider, recorded in its call's ModelCallRequested v4
        requested = [e for e in ws.events(str(judges[0].run_id)) if e.event_type == "ModelCallRequested"]
        assert [(e.schema_version, e.payload["provider"]) for e in requested] == [(4, "scripted")]
        assert result.usage.model_iterations == 2 + 1
