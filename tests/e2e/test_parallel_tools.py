"""Read-only calls of one model turn run concurrently, their facts in call order; side-effecting calls run alone,
in order; a parallel call that needs an approval runs alone afterwards, where it can be asked."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent import hookimpl
from bearagent.api import open_workspace
from bearagent.domain._base import JsonMapping
from bearagent.domain.ids import ToolCallId
from bearagent.domain.tools import SideEffect, ToolResult, ToolSpec
from bearagent.plugins.manager import PluginHost
from bearagent.ports import Tool, ToolContext

DELAY_S = 0.6


class SlowTool:
    """A tool that takes DELAY_S and records when it ran."""

    def __init__(self, name: str, side_effect: SideEffect, log: list[tuple[str, float, float]]) -> None:
        self._spec = ToolSpec(
            name=name,
            description=f"{name}: slow on purpose.",
            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            side_effect=side_effect,
        )
        self._log = log

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def prepare(self, arguments: JsonMapping, context: ToolContext) -> JsonMapping:
        return arguments

    async def execute(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        started = time.monotonic()
        await asyncio.sleep(DELAY_S)
        self._log.append((f"{self._spec.name}{arguments['n']}", started, time.monotonic()))
        return ToolResult(
            tool_call_id=context.tool_call_id or context.ids.new(ToolCallId),
            tool_name=self._spec.name,
            status="succeeded",
            content=f"{self._spec.name} {arguments['n']} done",
        )


class SlowTools:
    def __init__(self, log: list[tuple[str, float, float]]) -> None:
        self.log = log

    @hookimpl
    def register_tools(self, register: Callable[[Tool], None]) -> None:
        register(SlowTool("SlowRead", "read_only", self.log))
        register(SlowTool("SlowWrite", "write", self.log))


def _calls(name: str, numbers: range) -> str:
    return ", ".join(f"{{name: {name}, arguments: {{n: {n}}}}}" for n in numbers)


def test_five_parallel_reads_take_about_one_and_record_in_call_order(tmp_path: Path) -> None:
    script = f"""
turns:
  - text: "Reading five things."
    tool_calls: [{_calls("SlowRead", range(1, 6))}]
  - text: "Now two writes."
    tool_calls: [{_calls("SlowWrite", range(1, 3))}]
  - text: "Done."
"""
    root = scripted_workspace(
        tmp_path / "ws",
        script,
        agents={"main": agent_md("Main.", mode="primary", tools="[SlowRead, SlowWrite]")},
    )
    log: list[tuple[str, float, float]] = []
    host = PluginHost()
    host.register(SlowTools(log), "slow")

    async def go() -> tuple[float, list[str], list[str]]:
        async with open_workspace(root, env=isolated_env(tmp_path / "home"), plugins=host) as ws:
            started = time.monotonic()
            result = await ws.run("go", observer=None)
            took = time.monotonic() - started
            assert result.status == "succeeded", result.error
            events = ws.events(str(result.run_id))
            order = [str(e.payload["tool_name"]) for e in events if e.event_type == "ToolCallRequested"]
            done = [
                str(cast(Mapping[str, object], e.payload["result"])["content"])
                for e in events
                if e.event_type == "ToolCallCompleted"
            ]
            return took, order, done

    took, order, done = asyncio.run(go())
    reads = [entry for entry in log if entry[0].startswith("SlowRead")]
    writes = [entry for entry in log if entry[0].startswith("SlowWrite")]
    # the five reads overlapped: all started before the first one ended
    assert max(start for _n, start, _e in reads) < min(end for _n, _s, end in reads)
    # the two writes did not: the second started after the first ended
    assert writes[1][1] >= writes[0][2]
    assert took < DELAY_S * 5, f"five slow reads in parallel plus two writes took {took:.2f}s"
    assert order == ["SlowRead"] * 5 + ["SlowWrite"] * 2
    assert done == [f"SlowRead {n} done" for n in range(1, 6)] + [f"SlowWrite {n} done" for n in range(1, 3)]


def test_a_parallel_call_that_needs_approval_is_asked_alone_afterwards(tmp_path: Path) -> None:
    script = f"""
turns:
  - text: "Reading two things."
    tool_calls: [{_calls("SlowRead", range(1, 3))}]
  - text: "Done."
"""
    config = """
default_agent: main
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml}
permissions:
  ask: [SlowRead]
"""
    root = scripted_workspace(
        tmp_path / "ws", script, agents={"main": agent_md("Main.", mode="primary", tools="[SlowRead]")}, config=config
    )
    log: list[tuple[str, float, float]] = []
    host = PluginHost()
    host.register(SlowTools(log), "slow")

    async def go() -> None:
        async with open_workspace(root, env=isolated_env(tmp_path / "home"), plugins=host) as ws:
            waiting = await ws.run("go", wait_approvals=True)
            assert waiting.status == "waiting" and log == [], "nothing ran: the first call waits for its answer"
            pending = ws.run_info(str(waiting.run_id)).pending_approval
            assert pending is not None and pending.tool_name == "SlowRead"
            # an explicit ask rule asks for every call (deny > ask > allow, as in Claude Code): one at a time
            second = await ws.answer_approval(str(waiting.run_id), pending.approval_id, "allow_once")
            assert second is not None and second.status == "waiting" and len(log) == 1
            again = ws.run_info(str(waiting.run_id)).pending_approval
            assert again is not None and again.approval_id != pending.approval_id
            done = await ws.answer_approval(str(waiting.run_id), again.approval_id, "allow_once")
            assert done is not None and done.status == "succeeded", done
            types = [e.event_type for e in ws.events(str(waiting.run_id))]
            assert types.count("ApprovalRequested") == 2 and types.count("ToolCallCompleted") == 2
            assert sorted(name for name, _s, _e in log) == ["SlowRead1", "SlowRead2"], "each ran once"

    asyncio.run(go())
