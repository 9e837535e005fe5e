"""`bearagent db prune` and `runs pin|unpin` on real runs of the scripted provider, on SQLite and PostgreSQL: old
finished runs go with their subagents' runs, search rows and spilled tool results; pinned runs and runs that can
still continue stay, and every kept run still passes `replay --dry`; `--dry-run` removes nothing; the user
config's `retention.keep_days` is the default age and a workspace cannot set it; `doctor` warns past
`retention.warn_size`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner, Result
from tests.security.test_shipped_logs_postgres import PG_STORE, user_env
from tests.support import postgres_cluster
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import CONFIG, SCOUT_AGENTS, scripted_workspace

from bearagent.cli import main

SCRIPT = """
turns:
  - text: "Asking the scout."
    tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "read the notes", description: look}}]
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "scout: wombat"
  - text: "The notes mention a wombat."
"""
AGENTS = SCOUT_AGENTS


class Ws:
    def __init__(self, root: Path, home: Path, env: dict[str, str], backend: str) -> None:
        self.root, self.home, self.env, self.backend = root, home, env, backend

    def cli(self, *args: str) -> Result:
        return CliRunner().invoke(main, [*args, "-w", str(self.root)], env=self.env, prog_name="bearagent")

    def ok(self, *args: str) -> Result:
        result = self.cli(*args)
        assert result.exit_code == 0, result.output
        return result

    def run(self, prompt: str) -> str:
        return str(json.loads(self.ok("run", "--json", prompt).stdout)["run_id"])

    def runs(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], json.loads(self.ok("runs", "list", "--json", "--limit", "100").stdout))

    def user_config(self, text: str) -> None:
        base = PG_STORE if self.backend == "postgres" else ""
        write(self.home, "bearagent/config.yaml", base + text)


@pytest.fixture(params=["sqlite", "postgres"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ws]:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    write(root, "notes.md", "a wombat lives here\n")
    home = tmp_path / "home"
    if request.param == "postgres":
        postgres_cluster.require()
        env = user_env(home, postgres_cluster.new_database())
    else:
        env = isolated_env(home)
    yield Ws(root, home, env, request.param)


def test_prune_keeps_pinned_runs_and_the_kept_runs_replay(ws: Ws) -> None:
    old, pinned, other = ws.run("first"), ws.run("second"), ws.run("third")
    assert len(ws.runs()) == 6, "three runs, each with a subagent's run"
    ws.ok("runs", "pin", pinned[:8])
    assert "already" in ws.ok("runs", "pin", pinned).output
    # a spilled tool result of the first run (tools/spill.py names it after the tool call)
    call_ids = [
        e["payload"]["tool_call_id"]
        for line in ws.ok("events", old, "--json").stdout.splitlines()
        if (e := json.loads(line))["event_type"] == "ToolCallRequested"
    ]
    spilled = ws.root / ".bearagent" / "tool-results" / f"{call_ids[0]}.txt"
    write(ws.root, f".bearagent/tool-results/{call_ids[0]}.txt", "x" * 5000)
    assert ws.ok("runs", "search", "wombat", "--json").stdout.count('"run_id"') == 6

    dry = json.loads(ws.ok("db", "prune", "--older-than", "0m", "--dry-run", "--json").stdout)
    assert dry["runs"] == 2 and dry["runs_with_subagents"] == 4 and dry["kept_pinned"] == 1
    assert dry["files"] == 1 and dry["freed_bytes"] > 5000
    assert len(ws.runs()) == 6 and spilled.exists(), "a dry run removes nothing"

    done = ws.ok("db", "prune", "--older-than", "0m")
    assert "removed 2 run(s)" in done.output and "and 2 subagent run(s)" in done.output
    assert "kept 1 pinned run(s)" in done.output
    kept = ws.runs()
    assert {r["run_id"] for r in kept if r["parent_run_id"] is None} == {pinned}
    assert len(kept) == 2, "the pinned run's subagent run stays with it"
    assert not spilled.exists()
    for run in kept:
        ws.ok("replay", run["run_id"], "--dry")
    hits = json.loads(ws.ok("runs", "search", "wombat", "--json").stdout)
    assert {h["run_id"] for h in hits} == {r["run_id"] for r in kept}, "the pruned runs' search rows are gone"
    assert other not in ws.ok("runs", "list").output

    ws.ok("runs", "unpin", pinned)
    assert "removed 1 run(s)" in ws.ok("db", "prune", "--older-than", "0m", "--vacuum").output
    assert ws.runs() == []


def test_runs_that_can_continue_and_young_runs_stay(ws: Ws) -> None:
    ws.run("done")
    write(
        ws.root,
        ".bearagent/script.yaml",
        'turns:\n  - text: "hold"\n    wait_for_file: never\n    wait_timeout_ms: 1\n',
    )
    failed = ws.cli("run", "--json", "this one fails")
    assert failed.exit_code != 0
    result = json.loads(ws.ok("db", "prune", "--older-than", "1d", "--json").stdout)
    assert result["runs"] == 0, "nothing is a day old"
    statuses = sorted(r["status"] for r in ws.runs() if r["parent_run_id"] is None)
    assert statuses == ["failed", "succeeded"]
    assert json.loads(ws.ok("db", "prune", "--older-than", "0m", "--json").stdout)["runs"] == 2


def test_the_default_age_is_the_user_configs_and_a_workspace_cannot_set_it(ws: Ws) -> None:
    ws.run("done")
    refused = ws.cli("db", "prune")
    assert refused.exit_code != 0
    assert "no age given" in refused.output and "retention: {keep_days: 90}" in refused.output
    write(ws.root, ".bearagent/config.yaml", CONFIG + "retention: {keep_days: 1}\n")
    assert ws.cli("db", "prune").exit_code != 0, "a workspace's retention is not used"
    doctor = ws.cli("doctor", "--json")
    assert "retention" in doctor.output and "can only be set in the user config" in doctor.output
    write(ws.root, ".bearagent/config.yaml", CONFIG)
    ws.user_config("retention: {keep_days: 3650}\n")
    assert json.loads(ws.ok("db", "prune", "--dry-run", "--json").stdout)["runs"] == 0
    bad = ws.cli("db", "prune", "--older-than", "soon")
    assert bad.exit_code != 0 and "is not an age" in bad.output and "fix:" in bad.output


def test_doctor_warns_past_the_size_the_user_sets(ws: Ws) -> None:
    ws.run("done")
    ws.user_config("retention: {warn_size: 1KB}\n")
    report = ws.cli("doctor", "--json")
    assert "store.large" in report.output and "db prune --older-than" in report.output
    ws.user_config("retention: {warn_size: 100GB}\n")
    assert "store.large" not in ws.cli("doctor", "--json").output
    ws.user_config("retention: {warn_size: lots}\n")
    assert "must be a size such as 500MB or 2GB" in ws.cli("doctor", "--json").output


def test_a_sqlite_prune_is_one_transaction(ws: Ws, tmp_path: Path) -> None:
    if ws.backend != "sqlite":
        pytest.skip("the SQLite file's own locking")
    ws.run("done")
    db = ws.root / ".bearagent" / "state.db"
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        result = CliRunner().invoke(
            main, ["db", "prune", "--older-than", "0m", "-w", str(ws.root)], env={**ws.env}, prog_name="bearagent"
        )
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    if result.exit_code != 0:  # it waited for the busy timeout and gave up: nothing was removed
        assert "error:" in result.output
        assert len(ws.runs()) == 2
    else:
        assert ws.runs() == []
