"""`bearagent runs search TEXT` on real runs of the scripted provider, on SQLite and on PostgreSQL: a word from an
old run's tool result is found, every word must match, filters narrow, the index catches up with runs made after
an earlier search, and what the log holds (control sequences) never reaches the terminal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner, Result
from tests.security.test_shipped_logs_postgres import user_env
from tests.support import postgres_cluster
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.cli import main

READ_NOTES = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "Done reading."
"""
CAPITAL = """
turns:
  - text: "Paris is the capital."
"""
AGENTS = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}


class Ws:
    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env

    def cli(self, *args: str) -> Result:
        return CliRunner().invoke(main, list(args), env=self.env, prog_name="bearagent")

    def run(self, script: str, prompt: str) -> str:
        write(self.root, ".bearagent/script.yaml", script)
        result = self.cli("run", "-w", str(self.root), "--json", prompt)
        assert result.exit_code == 0, result.output
        return str(json.loads(result.stdout)["run_id"])

    def search(self, *args: str) -> list[dict[str, Any]]:
        result = self.cli("runs", "search", *args, "-w", str(self.root), "--json")
        assert result.exit_code == 0, result.output
        return cast(list[dict[str, Any]], json.loads(result.stdout))


@pytest.fixture(params=["sqlite", "postgres"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ws]:
    root = scripted_workspace(tmp_path / "ws", READ_NOTES, agents=AGENTS)
    write(root, "notes.md", "The zanzibar quokka met \x1b[31mtheÂ red\x1b[0m fox.\n")
    if request.param == "postgres":
        postgres_cluster.require()
        env = user_env(tmp_path / "home", postgres_cluster.new_database())
    else:
        env = isolated_env(tmp_path / "home")
    yield Ws(root, env)


def test_a_word_of_an_old_tool_result_finds_its_run(ws: Ws) -> None:
    old = ws.run(READ_NOTES, "summarise the notes")
    new = ws.run(CAPITAL, "what is the capital of France?")

    (hit,) = ws.search("zanzibar")
    assert hit["run_id"] == old
    assert hit["event_type"] == "ToolCallCompleted"
    assert "[zanzibar]" in hit["snippet"]
    assert hit["goal"] == "summarise the notes"
    assert hit["status"] == "succeeded"
    assert hit["agent"] == "main"

    assert [h["run_id"] for h in ws.search("QUOKKA Zanzibar")] == [old], "case-insensitive, every word"
    assert ws.search("zanzibar paris") == [], "the words must meet in one event"
    assert [h["run_id"] for h in ws.search("capital")] == [new]
    assert [h["run_id"] for h in ws.search("reading")] == [old], "the model's answers are searched"
    assert [h["run_id"] for h in ws.search("the")] == [new, old], "newest first"
    assert [h["run_id"] for h in ws.search("the", "--limit", "1")] == [new]


def test_filters_narrow_the_search(ws: Ws) -> None:
    ws.run(READ_NOTES, "summarise the notes")
    assert ws.search("zanzibar", "--status", "failed") == []
    assert len(ws.search("zanzibar", "--status", "succeeded")) == 1
    assert ws.search("zanzibar", "--agent", "other") == []
    assert len(ws.search("zanzibar", "--agent", "main")) == 1
    assert len(ws.search("zanzibar", "--since", "1h")) == 1
    assert ws.search("zanzibar", "--since", "2999-01-01") == []


def test_runs_made_after_a_search_are_found_by_the_next(ws: Ws) -> None:
    ws.run(READ_NOTES, "summarise the notes")
    assert ws.search("capital") == []
    later = ws.run(CAPITAL, "the capital, please")
    assert [h["run_id"] for h in ws.search("capital")] == [later]


def test_the_text_output_shows_control_sequences_inert(ws: Ws) -> None:
    run_id = ws.run(READ_NOTES, "summarise the notes")
    result = ws.cli("runs", "search", "red fox", "-w", str(ws.root))
    assert result.exit_code == 0, result.output
    assert run_id[:8] in result.output
    assert "[red]" in result.output and "[fox]" in result.output
    assert "\x1b" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["!!! ???"], "has no word to look for"),
        (["w" * 600], "at most 500 are searched"),
        (["zanzibar", "--since", "yesterday"], "is neither an age nor a date"),
        ([" ".join(f"w{n}" for n in range(20))], "at most 16 are searched together"),
    ],
)
def test_bad_searches_are_refused_with_the_fix(ws: Ws, args: list[str], message: str) -> None:
    result = ws.cli("runs", "search", *args, "-w", str(ws.root))
    assert result.exit_code != 0
    assert message in result.output
    assert "fix:" in result.output
