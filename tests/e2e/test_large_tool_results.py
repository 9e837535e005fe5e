"""A tool result over its cap is kept whole beside the run's state, and the log and the model get its head, its
tail and where to read the rest; a planted symlink cannot redirect where it is kept."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent import hookimpl
from bearagent.api import open_workspace
from bearagent.domain._base import JsonMapping
from bearagent.domain.ids import ToolCallId
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.plugins.manager import PluginHost
from bearagent.ports import Tool, ToolContext

LINES = 20_000
BIG = "".join(f"line {n:05d}\n" for n in range(LINES))  # 220,000 characters


class BigTool:
    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            name="Big",
            description="Prints a lot.",
            input_schema={"type": "object", "properties": {}},
            max_output_chars=50_000,
        )

    def prepare(self, arguments: JsonMapping, context: ToolContext) -> JsonMapping:
        return arguments

    async def execute(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return ToolResult(
            tool_call_id=context.tool_call_id or context.ids.new(ToolCallId),
            tool_name="Big",
            status="succeeded",
            content=BIG,
        )


class BigTools:
    @hookimpl
    def register_tools(self, register: Callable[[Tool], None]) -> None:
        register(BigTool())


SCRIPT = """
turns:
  - text: "Printing."
    tool_calls: [{name: Big, arguments: {}}]
  - text: "Done."
"""


def _run(root: Path, home: Path) -> Mapping[str, object]:
    host = PluginHost()
    host.register(BigTools(), "big")
    with open_workspace(root, env=isolated_env(home), plugins=host) as ws:
        result = ws.run_sync("print")
        assert result.status == "succeeded", result.error
        (completed,) = [e for e in ws.events(str(result.run_id)) if e.event_type == "ToolCallCompleted"]
        return cast(Mapping[str, object], json.loads(completed.model_dump_json())["payload"]["result"])


def test_a_large_result_is_kept_whole_and_the_model_gets_head_tail_and_where(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("M.", mode="primary", tools="[Big]")})
    result = _run(root, tmp_path / "home")
    content = str(result["content"])
    assert len(content) <= 30_000, "fits what the model is shown, so the tail and the note are not cut again"
    assert content.startswith("line 00000\n") and content.rstrip().endswith(f"line {LINES - 1:05d}")
    (artifact,) = cast(list[dict[str, object]], result["artifacts"])
    rel = str(artifact["path"])
    assert rel.startswith(".bearagent/tool-results/") and f"saved at {rel}: Read it with offset and limit" in content
    kept = (root / rel).read_bytes()
    assert kept.decode() == BIG and artifact["sha256"] == hashlib.sha256(kept).hexdigest()
    assert result["truncated"] is True


def test_a_planted_symlink_is_refused_and_the_result_is_cut_as_before(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("M.", mode="primary", tools="[Big]")})
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".bearagent" / "tool-results").symlink_to(outside)
    result = _run(root, tmp_path / "home")
    assert list(outside.iterdir()) == [], "nothing written where the symlink points"
    assert "[output truncated:" in str(result["content"]) and result["artifacts"] == []
