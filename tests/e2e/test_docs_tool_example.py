"""The tool-plugin example of docs/plugins.md, run as written: registered through a `PluginHost`, a scripted run
calls it on a workspace file (the result is the count), on a path out of the workspace (refused, the model reads
why)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from tests.support.config_ws import isolated_env, write
from tests.support.doc_blocks import import_doc_block
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent import open_workspace
from bearagent.domain._base import thaw_json_mapping
from bearagent.plugin import PluginHost

FIRST_LINE = "# src/bearagent_wordcount/__init__.py"

SCRIPT = """
turns:
  - text: "Counting."
    tool_calls: [{name: WordCount, arguments: {path: notes.txt}}]
  - text: "Trying outside."
    tool_calls: [{name: WordCount, arguments: {path: ../secret.txt}}]
  - text: "Done."
"""


@pytest.fixture(scope="module")
def wordcount(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return import_doc_block("docs/plugins.md", FIRST_LINE, tmp_path_factory.mktemp("wordcount"), "bearagent_wordcount")


def test_the_tool_example_runs_in_a_real_run(wordcount: ModuleType, tmp_path: Path) -> None:
    agents = {"main": agent_md("Main.", mode="primary", tools="[WordCount]")}
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=agents)
    write(root, "notes.txt", "one two three\nfour five\n")
    write(tmp_path, "secret.txt", "do not read\n")
    host = PluginHost()
    host.register(wordcount, "wordcount", version="0.1.0")
    with open_workspace(root, env=isolated_env(tmp_path / "home"), plugins=host) as ws:
        result = ws.run_sync("count the words of notes.txt")
        assert result.status == "succeeded", result
        finished = [
            (e.event_type, json.dumps(thaw_json_mapping(e.payload)))
            for e in ws.events(str(result.run_id))
            if e.event_type in ("ToolCallCompleted", "ToolCallFailed")
        ]
    (first, first_payload), (second, second_payload) = finished
    assert first == "ToolCallCompleted" and "notes.txt: 2 lines, 5 words" in first_payload
    assert second == "ToolCallFailed" and "do not read" not in second_payload
