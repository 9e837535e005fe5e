"""The other python blocks of docs/plugins.md, run as written (the tool and provider examples have their own tests,
test_docs_tool_example.py and test_docs_provider_example.py): the `bearagent_hello` plugin that ships agent files,
registered in-process as the page shows, and the `PythonHookHandler` example that denies a force push."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from tests.support.config_ws import isolated_env, write
from tests.support.doc_blocks import doc_block, python_blocks
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent import open_workspace
from bearagent.domain._base import thaw_json_mapping
from bearagent.plugin import PluginHost

PAGE = "docs/plugins.md"


def test_every_python_block_of_the_page_is_run_by_a_test() -> None:
    firsts = {b.splitlines()[0] for b in python_blocks(PAGE)}
    run_here = {"# src/bearagent_hello/__init__.py", "from bearagent.plugin import PythonHookHandler, hookimpl"}
    run_elsewhere = {"# src/bearagent_wordcount/__init__.py", "# src/bearagent_wren/__init__.py"}
    in_process = {"import bearagent_hello  # your plugin module (or any object with @hookimpl methods)"}
    assert firsts == run_here | run_elsewhere | in_process, "a new python block in docs/plugins.md needs a test"


def test_the_hello_plugin_ships_an_agent_and_registers_in_process_as_written(tmp_path: Path) -> None:
    package = tmp_path / "site" / "bearagent_hello"
    write(package, "__init__.py", doc_block(PAGE, "# src/bearagent_hello/__init__.py"))
    write(package, "agents/hello.md", agent_md("Says hello.", mode="primary"))
    # the workspace has no agent of its own: its default agent `hello` exists only through the plugin
    config = """
default_agent: hello
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml}
"""
    root = scripted_workspace(tmp_path / "ws", "turns:\n  - text: 'Hello from the plugin agent.'\n", config=config)
    env = {**os.environ, **isolated_env(tmp_path / "home"), "PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run(
        [sys.executable, "-c", doc_block(PAGE, "import bearagent_hello")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"the in-process example failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip() == "Hello from the plugin agent."


@pytest.fixture
def force_push_guard(tmp_path: Path) -> ModuleType:
    path = tmp_path / "no_force_push.py"
    path.write_text(doc_block(PAGE, "from bearagent.plugin import PythonHookHandler, hookimpl"), encoding="utf-8")
    module = ModuleType("no_force_push")
    module.__file__ = str(path)
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


SCRIPT = """
turns:
  - text: "Publishing."
    tool_calls: [{name: Bash, arguments: {command: "git push --force origin main"}}]
  - text: "Refused, as it should be."
"""


def test_the_hook_handler_example_denies_a_force_push(force_push_guard: ModuleType, tmp_path: Path) -> None:
    agents = {"main": agent_md("Main.", mode="primary", tools="[Bash]")}
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=agents)
    host = PluginHost()
    host.register(force_push_guard, "no-force-push", version="0.1.0")
    with open_workspace(root, env=isolated_env(tmp_path / "home"), plugins=host) as ws:
        result = ws.run_sync("publish the branch")
        assert result.status == "succeeded", result
        finished = [
            (e.event_type, json.dumps(thaw_json_mapping(e.payload)))
            for e in ws.events(str(result.run_id))
            if e.event_type in ("ToolCallCompleted", "ToolCallFailed")
        ]
    [(kind, payload)] = finished
    assert kind == "ToolCallFailed" and "force push is not allowed here" in payload, payload
