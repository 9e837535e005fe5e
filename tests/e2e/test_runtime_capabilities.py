"""Subagents, agent switching, skills, actions and sessions, end to end through the Python API."""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
from pathlib import Path

import pytest
from tests.support.config_ws import write
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.domain.stream import RunStartedEvent, RunSucceededEvent, StreamEventModel, TokenEvent


def test_task_delegates_to_a_subagent_as_a_child_run(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "find the docs", description: look}}]
  - text: "The docs live in docs/."
  - text: "Scout says: the docs live in docs/."
"""
    agents = {
        "main": agent_md("Main agent.", mode="primary", tools="[Read]", subagents="[scout]"),
        "scout": agent_md("Finds things.", mode="subagent", tools="[Read, Glob]"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("where are the docs?")
        assert result.status == "succeeded", result.error
        assert result.final == "Scout says: the docs live in docs/."
        parent = ws.run_info(str(result.run_id))
        children = runtime_of(ws).store.list_runs(parent_run_id=result.run_id)
        assert len(children) == 1
        child = children[0]
        assert child.status == "succeeded"
        assert child.agent_name == "scout"
        assert child.parent_run_id == parent.run_id
        assert child.trigger_type == "subagent"
        # the child's budget is carved out of what the parent had left
        assert child.budget_limits.max_model_iterations <= parent.budget_limits.max_model_iterations - 1
        types = [e.event_type for e in ws.events(str(result.run_id))]
        assert "ChildRunStarted" in types and "ChildRunFinished" in types
        task_result = next(e for e in ws.events(str(result.run_id)) if e.event_type == "ToolCallCompleted")
        assert "The docs live in docs/." in str(task_result.payload["result"])


def test_subagent_never_gets_a_tool_its_parent_lacks(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Task, arguments: {subagent_type: writer, prompt: "write a file"}}]
  - tool_calls: [{name: Write, arguments: {file_path: x.txt, content: "no"}}]
  - text: "could not write"
  - text: done
"""
    agents = {
        "main": agent_md("Main.", mode="primary", tools="[Read]", subagents="[writer]"),
        "writer": agent_md("Writes.", mode="subagent", tools="[Read, Write]"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("go")
        assert result.status == "succeeded"
        child = runtime_of(ws).store.list_runs(parent_run_id=result.run_id)[0]
        failed = [e for e in ws.events(str(child.run_id)) if e.event_type == "ToolCallFailed"]
        assert len(failed) == 1
        assert "no tool named 'Write'" in str(failed[0].payload["result"])
    assert not (root / "x.txt").exists()


def test_switch_hands_the_session_to_another_primary_agent(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: SwitchAgent, arguments: {agent: builder, reason: "time to build"}}]
  - text: "builder here"
  - text: "still builder"
"""
    agents = {
        "main": agent_md("Plans.", mode="primary", tools="[Read]", switch="[builder]"),
        "builder": agent_md("Builds.", body="You are the builder.", mode="primary", tools="[Read, Write]"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    with open_ws(root, tmp_path / "home") as ws:
        first = ws.run_sync("plan then build")
        assert first.status == "succeeded"
        assert first.agent == "builder"
        run = ws.run_info(str(first.run_id))
        assert run.effective_agent_name == "builder"
        assert run.switch_count == 1
        switched = [e for e in ws.events(str(first.run_id)) if e.event_type == "AgentSwitched"]
        assert switched[0].payload["to_agent"] == "builder"
        # the session now belongs to the builder: the next run starts with it
        second = ws.run_sync("and now?", session=str(first.session_id))
        assert second.agent == "builder"
        assert second.final == "still builder"


def test_skill_tool_returns_the_body_and_bundled_file_list(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Skill, arguments: {name: release}}]
  - tool_calls: [{name: Skill, arguments: {name: release, file: checklist.md}}]
  - tool_calls: [{name: Skill, arguments: {name: release, file: ../../config.yaml}}]
  - text: "loaded"
"""
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]", skills="[release]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    write(
        root,
        ".bearagent/skills/release/SKILL.md",
        "---\nname: release\ndescription: How to cut a release.\n---\nBump the version, then tag.\n",
    )
    write(root, ".bearagent/skills/release/checklist.md", "- [ ] tests green\n")
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("release please")
        assert result.status == "succeeded"
        done = next(e for e in ws.events(str(result.run_id)) if e.event_type == "ToolCallCompleted")
        content = str(done.payload["result"])
        assert "Bump the version, then tag." in content
        assert "checklist.md" in content
        assert "tests green" not in content  # the list, not the content
        outcomes = [
            e for e in ws.events(str(result.run_id)) if e.event_type.startswith("ToolCall") and "result" in e.payload
        ]
        assert outcomes[1].event_type == "ToolCallCompleted"
        assert "tests green" in str(outcomes[1].payload["result"])
        assert outcomes[2].event_type == "ToolCallFailed"
        assert "has no bundled file '../../config.yaml'" in str(outcomes[2].payload["result"])


REVIEW_ACTION = (
    "---\ndescription: Review a file\nagent: main\ninputs:\n  type: object\n  properties:\n"
    "    target: {type: string}\n  required: [target]\n---\nReview $target carefully.\n"
)


def test_action_runs_from_the_api_with_its_agent(tmp_path: Path) -> None:
    script = """
turns:
  - text: "reviewed src/app.py"
"""
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    write(root, ".bearagent/actions/review.md", REVIEW_ACTION)
    with open_ws(root, tmp_path / "home") as ws:
        direct = asyncio.run(ws.run_action("review", {"target": "src/app.py"}))
        assert direct.status == "succeeded"
        assert direct.final == "reviewed src/app.py"
        info = ws.run_info(str(direct.run_id))
        assert info.trigger_type == "api_action"
        assert info.goal == "Review src/app.py carefully."
        assert direct.session_id is None
        with pytest.raises(Exception, match="no action named 'nope'"):
            asyncio.run(ws.run_action("nope", {}))


def test_allowed_action_is_a_tool_that_runs_as_a_child_run(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: action__review, arguments: {target: lib.py}}]
  - text: "reviewed lib.py"
  - text: "the review is done"
"""
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]", actions="[review]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    write(root, ".bearagent/actions/review.md", REVIEW_ACTION)
    with open_ws(root, tmp_path / "home") as ws:
        via_tool = ws.run_sync("review lib.py via the action")
        assert via_tool.status == "succeeded"
        assert via_tool.final == "the review is done"
        child = runtime_of(ws).store.list_runs(parent_run_id=via_tool.run_id)[0]
        assert child.goal == "Review lib.py carefully."
        created = ws.events(str(child.run_id))[0]
        assert created.payload["trigger_ref"] == "review"


def test_continue_sends_the_session_history_to_the_model(tmp_path: Path) -> None:
    script = """
turns:
  - text: "first answer"
  - text: "second answer"
"""
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    with open_ws(root, tmp_path / "home") as ws:
        first = ws.run_sync("first question")
        second = ws.run_sync("second question", session="continue")
        assert second.session_id == first.session_id
        assert second.final == "second answer"
        created = ws.events(str(second.run_id))[0]
        assert created.payload["goal"] == "second question"
        # the model call of the second run saw the whole conversation: 1 system + 3 earlier/new messages
        history = runtime_of(ws).sessions.session_history(first.session_id)  # type: ignore[arg-type]
        assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
        assert history[1].text == "first answer"


def test_stream_yields_typed_events(tmp_path: Path) -> None:
    script = """
turns:
  - text: "streamed words arrive"
"""
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)

    async def collect() -> list[StreamEventModel]:
        async with open_ws(root, tmp_path / "home") as ws:
            return [event async for event in ws.stream("hi")]

    events = asyncio.run(collect())
    assert isinstance(events[0], RunStartedEvent)
    assert isinstance(events[-1], RunSucceededEvent)
    tokens = [e.text for e in events if isinstance(e, TokenEvent)]
    assert len(tokens) > 1
    assert "".join(tokens) == "streamed words arrive"


def _run_in_process(root: str, home: str, session: str, prompt: str, out: str) -> None:
    from tests.support.run_ws import open_ws as opener

    with opener(Path(root), Path(home)) as ws:
        result = ws.run_sync(prompt, session=session)
        Path(out).write_text(f"{result.status}\n", encoding="utf-8")


def test_two_processes_on_one_session_run_one_after_the_other(tmp_path: Path) -> None:
    script = """
turns:
  - text: "setup"
  - text: "slow one"
    delay_ms: 1500
  - text: "fast one"
"""
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    home = tmp_path / "home"
    with open_ws(root, home) as ws:
        first = ws.run_sync("setup")
    session = str(first.session_id)
    ctx = multiprocessing.get_context("spawn")
    a = ctx.Process(target=_run_in_process, args=(str(root), str(home), session, "A", str(tmp_path / "a")))
    b = ctx.Process(target=_run_in_process, args=(str(root), str(home), session, "B", str(tmp_path / "b")))
    a.start()
    import time

    time.sleep(1.0)
    b.start()
    a.join(60)
    b.join(60)
    assert (tmp_path / "a").read_text().strip() in ("succeeded", "failed")
    assert (tmp_path / "b").read_text().strip() in ("succeeded", "failed")
    with open_ws(root, home) as ws:
        runs = [r for r in ws.runs(limit=10)]
    # never interleaved: every run of the session started after the previous one ended
    ordered = sorted(runs, key=lambda r: r.created_at)
    for earlier, later in itertools.pairwise(ordered):
        assert earlier.ended_at is not None
        assert later.started_at is not None and later.started_at >= earlier.ended_at


def test_chat_workspace_runs_without_tools_and_keeps_no_local_history(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Write, arguments: {file_path: x.txt, content: "x"}}]
  - text: "I cannot write files here."
"""
    config = """
kind: chat
default_agent: main
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml}
"""
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read, Write]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=config)
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("write x.txt")
        assert result.status == "succeeded"
    assert not (root / "x.txt").exists()
    assert not (root / ".bearagent" / "state.db").exists()
    assert list((tmp_path / "home" / "bearagent" / "chat-state").glob("*/state.db"))


def test_last_names_the_newest_run_a_caller_started_not_its_child(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "look"}}]
  - text: "child answer"
  - text: "parent answer"
"""
    agents = {
        "main": agent_md("Main agent.", mode="primary", tools="[Read]", subagents="[scout]"),
        "scout": agent_md("Finds things.", mode="subagent", tools="[Read]"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("delegate")
        assert ws.run_info("last").run_id == result.run_id


def test_agent_switches_are_bounded_by_policy(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: SwitchAgent, arguments: {agent: builder}}]
  - tool_calls: [{name: SwitchAgent, arguments: {agent: main}}]
  - text: "stayed with the builder"
"""
    agents = {
        "main": agent_md("Plans.", mode="primary", tools="[Read]", switch="[builder]"),
        "builder": agent_md("Builds.", mode="primary", tools="[Read]", switch="[main]", policy="{max_switches: 1}"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("switch twice")
        assert result.status == "succeeded"
        assert result.agent == "builder"
        run = ws.run_info(str(result.run_id))
        assert run.switch_count == 1
        failed = [e for e in ws.events(str(result.run_id)) if e.event_type == "ToolCallFailed"]
        assert "policy.max_switches: 1" in str(failed[0].payload["result"])
