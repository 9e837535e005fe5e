"""Claude Code's `fallbackModel` setting: a run whose model answers "overloaded" switches at once to the fallback
model entry (two scripted model entries, each a real script file) and finishes there; the log records the failed
call on the main model and the next call on the fallback; a fallback naming no entry is a load warning."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.support.config_ws import load, write
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.domain._base import JsonValue, thaw_json_mapping

CONFIG = """
default_agent: main
default_model: main
models:
  main: {provider: scripted, script: main.yaml}
  backup: {provider: scripted, script: backup.yaml}
"""
MAIN = """
turns:
  - error: {category: overloaded, message: "the model is overloaded", retryable: true}
  - text: "answered by the main model"
"""
BACKUP = """
turns:
  - text: "answered by the backup model"
"""


def _workspace(tmp_path: Path, fallback: str) -> tuple[Path, Path]:
    root = scripted_workspace(
        tmp_path / "ws", "turns: []\n", agents={"main": agent_md("Main.", mode="primary")}, config=CONFIG
    )
    write(root, ".bearagent/main.yaml", MAIN)
    write(root, ".bearagent/backup.yaml", BACKUP)
    write(root, ".claude/settings.json", json.dumps({"fallbackModel": fallback}))
    return root, tmp_path / "home"


def test_an_overloaded_model_switches_the_run_to_the_fallback_model(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path, "backup")

    async def go() -> tuple[str, list[dict[str, JsonValue]]]:
        async with open_ws(root, home) as ws:
            result = await ws.run("hello")
            assert result.status == "succeeded", result.error
            events = [{"type": e.event_type, **thaw_json_mapping(e.payload)} for e in ws.events(str(result.run_id))]
            return result.final or "", events

    text, events = asyncio.run(go())
    assert text == "answered by the backup model"
    started = [e["model_ref"] for e in events if e["type"] == "ModelCallRequested"]
    assert started == [
        "workspace/main",
        "workspace/backup",
    ]  # no retry on the overloaded model: the next call is the fallback's
    failed = [e for e in events if e["type"] == "ModelCallFailed"]
    assert len(failed) == 1 and "overloaded" in json.dumps(failed[0])


def test_a_fallback_model_that_names_no_entry_is_a_load_warning(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path, "nonexistent")
    loaded = load(root, home)
    assert loaded.fallback_model is None
    [diag] = [d for d in loaded.diagnostics(include_tools=False) if d.field == "fallbackModel"]
    assert diag.severity == "warning" and "'nonexistent'" in diag.message and "main" in (diag.fix or "")


def test_an_agents_own_fallback_model_outranks_the_settings(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path, "main")  # the settings' fallback is the main model itself: no fallback
    write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary", fallbackModel="backup"))
    assert load(root, home).agents.get("main").fallback_model == "backup"  # pyright: ignore[reportOptionalMemberAccess]

    async def go() -> str:
        async with open_ws(root, home) as ws:
            result = await ws.run("hello")
            assert result.status == "succeeded", result.error
            return result.final or ""

    assert asyncio.run(go()) == "answered by the backup model"
