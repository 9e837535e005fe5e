"""The Python API of durable runs: `Workspace.run(wait_approvals=True)`, `answer_approval` and `resume`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.domain.errors import BearAgentError

SCRIPT = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Done."
"""
AGENTS = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}


def test_a_waiting_run_is_answered_and_resumed_through_the_api(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS, config=CONFIG + "permission_mode: default\n")

    async def go() -> None:
        async with open_ws(root, tmp_path / "home") as ws:
            waiting = await ws.run("write it", wait_approvals=True)
            assert waiting.status == "waiting" and not (root / "out.txt").exists()
            info = ws.run_info(str(waiting.run_id))
            assert info.status == "waiting" and info.pending_approval is not None
            with pytest.raises(BearAgentError, match="not one of the answers"):
                await ws.answer_approval(str(waiting.run_id), info.pending_approval.approval_id, "maybe")
            with pytest.raises(BearAgentError, match="waits for an answer"):
                await ws.resume(str(waiting.run_id))
            done = await ws.answer_approval(str(waiting.run_id)[:8], info.pending_approval.approval_id, "allow_once")
            assert done is not None and done.status == "succeeded" and done.final == "Done."
            assert (root / "out.txt").read_text() == "made\n"
            assert done.usage.model_iterations == 2

    asyncio.run(go())


def test_a_run_replays_through_the_api(tmp_path: Path) -> None:
    script = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "Read."
"""
    root = scripted_workspace(tmp_path / "ws", script, agents=AGENTS)
    (root / "notes.md").write_text("notes\n")

    async def go() -> None:
        async with open_ws(root, tmp_path / "home") as ws:
            done = await ws.run("read")
            assert done.status == "succeeded"
            dry = await ws.replay("last", dry=True)
            assert dry.ok
            again = await ws.replay(str(done.run_id))
            assert again.ok
            (root / "notes.md").write_text("changed\n")
            changed = await ws.replay("last")
            assert not changed.ok

    asyncio.run(go())
