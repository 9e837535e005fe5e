"""The run service's single owners (issue 30): a queued run is recorded before it is planned (RunCreated v4
`planned: false`) and planned by whoever starts it (RunStarted v3 carries the plan), so accepting a run starts no MCP
server and builds no provider (docs/store.md); the caller travels with the run (`RunOptions.caller`); a run without a
session is keyed `detached:{run_id}` when it starts and when it is resumed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.config_ws import load
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.app.resources import Resources
from bearagent.app.runtime import open_runtime
from bearagent.domain.errors import BearAgentError
from bearagent.domain.run_events import UNPLANNED_PROMPT_HASH, RunStartedV3
from bearagent.runtime.cursor import run_cursor
from bearagent.runtime.run_steps import steps_of
from bearagent.service.runner import RunOptions, WorkspaceRuntime

SCRIPT = """
turns:
  - text: "done"
"""


def _opened(runtime: WorkspaceRuntime) -> Resources:
    """The resources `app/` opened for `runtime` (their providers are what these tests count)."""
    assert isinstance(runtime.resources, Resources)
    return runtime.resources


def _runtime(tmp_path: Path) -> WorkspaceRuntime:
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=agents)
    return open_runtime(load(root, tmp_path / "home"))


def test_a_queued_run_is_recorded_unplanned_and_planned_when_it_starts(tmp_path: Path) -> None:
    asyncio.run(_recorded_unplanned_then_planned(tmp_path))


async def _recorded_unplanned_then_planned(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    try:
        queued = await runtime.enqueue("say done", RunOptions(caller="alice"))
        created = list(await runtime.store.fetch_events(queued.run_id))
        assert [(e.event_type, e.schema_version) for e in created] == [("RunCreated", 4)]
        assert created[0].payload["planned"] is False
        assert created[0].payload["prompt_hash"] == UNPLANNED_PROMPT_HASH
        assert created[0].payload["model_ref"] is None and created[0].payload["tool_spec_versions"] == {}
        assert _opened(runtime)._providers == {}  # pyright: ignore[reportPrivateUsage]  # nothing built to accept it
        assert queued.session_id is not None
        session = await runtime.store.fetch_session(queued.session_id)
        assert session is not None and session.caller == "alice"  # the run's caller, not the runtime's

        result = await runtime.start_queued(queued.run_id, caller="alice")
        assert result.status == "succeeded", result.error
        events = list(await runtime.store.fetch_events(queued.run_id))
        started = events[1]
        assert (started.event_type, started.schema_version) == ("RunStarted", 3)
        plan = RunStartedV3.model_validate(started.payload).plan
        assert plan.model_ref == "workspace/scripted" and plan.prompt_hash != UNPLANNED_PROMPT_HASH
        assert plan.tool_spec_versions["Read"] == "1"
        cursor = run_cursor(events)  # resume reads the plan from RunStarted v3
        assert cursor.prompt_hash == plan.prompt_hash and cursor.tool_spec_versions == dict(plan.tool_spec_versions)
        steps = steps_of(str(queued.run_id), events)  # so do replay and the run's steps
        assert steps.model_ref == "workspace/scripted" and steps.prompt_hash == cursor.prompt_hash
    finally:
        await runtime.aclose()


def test_a_run_with_an_unknown_model_is_refused_before_anything_is_recorded(tmp_path: Path) -> None:
    asyncio.run(_unknown_model_refused(tmp_path))


async def _unknown_model_refused(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    try:
        with pytest.raises(BearAgentError) as caught:
            await runtime.enqueue("say done", RunOptions(model="no-such-model"))
        assert "no-such-model" in caught.value.info.message
        assert await runtime.store.fetch_runs(limit=10) == []
    finally:
        await runtime.aclose()


WRITE_SCRIPT = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Done."
"""


def test_a_detached_run_stopped_and_resumed_keeps_its_provider_and_transcript_key(tmp_path: Path) -> None:
    asyncio.run(_detached_resumed(tmp_path))


async def _detached_resumed(tmp_path: Path) -> None:
    from bearagent.service.resuming import answer_approval

    agents = {"main": agent_md("Main.", mode="primary", tools="[Read, Write]")}
    config = CONFIG + "permission_mode: default\n"
    root = scripted_workspace(tmp_path / "ws", WRITE_SCRIPT, agents=agents, config=config)
    runtime = open_runtime(load(root, tmp_path / "home"))
    try:  # a run without a session (not a message): its key is `detached:{run_id}` when it starts...
        options = RunOptions(trigger_type="manual_action", trigger_ref="by-hand", wait_approvals=True)
        waiting = await runtime.run("write it", options)
        assert waiting.status == "waiting" and waiting.session_id is None
        keys = {key for key, _ in _opened(runtime)._providers}  # pyright: ignore[reportPrivateUsage]
        assert keys == {f"detached:{waiting.run_id}"}
        run = await runtime.store.fetch_run(waiting.run_id)
        assert run is not None and run.pending_approval is not None
        approval = str(run.pending_approval.approval_id)
        await answer_approval(runtime, waiting.run_id, approval, "allow_once", answered_by="tester")
        resumed = await runtime.resume(waiting.run_id)
        # ...and when it is resumed: the same provider went on to its next turn (no second one at turn 1)
        assert resumed.status == "succeeded" and resumed.final == "Done.", resumed
        keys = {key for key, _ in _opened(runtime)._providers}  # pyright: ignore[reportPrivateUsage]
        assert keys == {f"detached:{waiting.run_id}"}
    finally:
        await runtime.aclose()
