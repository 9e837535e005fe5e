"""The terminal follows the run writer's event stream, as `--stream-json` does: real runs, the screen they leave.

The expected text is what the terminal showed when the loop called its observer by hand, kept to the byte: the
stream changes where the terminal learns what happened, not what it shows."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.cli import main
from bearagent.cli.terminal_stream import attach_terminal
from bearagent.domain.ids import RunId

NESTED = """
turns:
  - text: "Delegating."
    tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "read the notes", description: look}}]
  - text: "scout thinking"
    tool_calls:
      - {name: Read, arguments: {file_path: notes.md}}
      - {name: Task, arguments: {subagent_type: deep, prompt: "go deeper", description: deeper}}
  - tool_calls: [{name: Read, arguments: {file_path: nope.md}}]
  - text: "deep: done"
  - text: "scout: the notes say hello"
  - text: "Switching"
    tool_calls: [{name: SwitchAgent, arguments: {agent: builder, reason: "time to build"}}]
  - text: "partial"
    error: {category: rate_limit, message: "slow down", retryable: true, retry_after_s: 0.01}
  - text: "All done."
"""

NESTED_SCREEN = """\
Delegating.
● Task(read the notes)
  ↳ subagent scout started (CHILDID)
    ● Read(notes.md)
      └ 1       hello notes (+2 lines)
    ● Task(go deeper)
      ↳ subagent deep started (CHILDID)
        ● Read(nope.md)
          └ failed: File or directory 'nope.md' does not exist in the workspace. Check the path with Glob.
      ↳ subagent deep succeeded
      └ deep: done
  ↳ subagent scout succeeded
  └ scout: the notes say hello
Switching
● SwitchAgent(builder)
  └ Switching to agent builder.
↪ switched agent: main → builder
partial
! model call failed (rate_limit.scripted); the answer so far (7 chars) is discarded; restarting in 0.0s (attempt 2)
All done.
"""


def test_a_run_with_subagents_a_switch_and_a_retry_looks_as_it_did(tmp_path: Path) -> None:
    agents = {
        "main": agent_md("Main.", mode="primary", tools="[Read, Task]", subagents="[scout]", switch="[builder]"),
        "scout": agent_md("Finds.", mode="subagent", tools="[Read, Task]", subagents="[deep]"),
        "deep": agent_md("Deeper.", mode="subagent", tools="[Read]"),
        "builder": agent_md("Builds.", mode="primary", tools="[Read]"),
    }
    root = scripted_workspace(tmp_path / "ws", NESTED, agents=agents)
    write(root, "notes.md", "hello notes\nline two\nline three\n")
    result = CliRunner().invoke(main, ["run", "-w", str(root), "go"], env=isolated_env(tmp_path), prog_name="bearagent")
    assert result.exit_code == 0, result.output
    assert re.sub(r"started \([0-9a-f]{8}\)", "started (CHILDID)", result.stdout) == NESTED_SCREEN


WRITE = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Done."
"""


def test_a_resumed_run_shows_what_comes_after_the_resume_and_the_call_it_finishes(tmp_path: Path) -> None:
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}
    root = scripted_workspace(tmp_path / "ws", WRITE, agents=agents, config=CONFIG + "permission_mode: default\n")
    out = io.StringIO()
    console = Console(file=out, no_color=True, width=100, soft_wrap=True)

    async def go() -> None:
        async with open_ws(root, tmp_path / "home") as ws:
            waiting = await ws.run("write it", wait_approvals=True)
            assert waiting.status == "waiting"
            info = ws.run_info(str(waiting.run_id))
            assert info.pending_approval is not None
            await ws.answer_approval(str(waiting.run_id), info.pending_approval.approval_id, "allow_once", resume=False)
            run_id = RunId(str(waiting.run_id))
            done = await runtime_of(ws).resume(run_id, attach_terminal(runtime_of(ws), run_id, console))
            assert done.status == "succeeded"

    asyncio.run(go())
    # "Writing." and the Write call's line came before the resume: the call is drawn whole when the resume finishes it
    assert out.getvalue() == "● Write(out.txt)\n  └ Wrote 1 line\n    +made\nDone.\n"
