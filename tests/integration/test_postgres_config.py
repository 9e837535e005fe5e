"""Choosing the store: `store:` in the user's config.yaml (never a workspace's), the DSN from the environment
variable it names, a schema per workspace by default, and the CLI's read commands on a PostgreSQL store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.support import postgres_cluster
from tests.support.config_ws import codes, isolated_env, load, write
from tests.support.events import EventFactory
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.api import open_workspace, runtime_of
from bearagent.app.stores import open_store, postgres_schema
from bearagent.cli import main
from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import Uuid4IdGenerator
from bearagent.domain.run_events import RunCreatedV2
from bearagent.plugins.manager import PluginHost
from bearagent.ports import WorkspaceStore
from bearagent.store.postgres import PostgresRunStorage
from bearagent.store.sqlite import SqliteEventStore

USER_STORE = """
store:
  backend: postgres
  dsn_env: TEAM_PG
  pool_size: 2
"""


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".bearagent").mkdir(parents=True)
    return root


def test_the_user_config_chooses_the_store(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    write(tmp_path / "home" / "bearagent", "config.yaml", USER_STORE + "  schema: team_docs\n")
    loaded = load(root, tmp_path / "home")
    store = loaded.config.store
    assert (store.backend, store.dsn_env, store.pg_schema, store.pool_size) == ("postgres", "TEAM_PG", "team_docs", 2)
    assert store.source is not None and store.source.endswith("config.yaml")
    assert postgres_schema(loaded, store) == "team_docs"
    assert postgres_schema(loaded, store.model_copy(update={"pg_schema": None})).startswith("bearagent_")


def test_a_workspace_file_cannot_choose_the_store(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    write(root, ".bearagent/config.yaml", USER_STORE)
    loaded = load(root, tmp_path / "home")
    assert loaded.config.store.backend == "sqlite"
    problem = next(d for d in loaded.diagnostics() if d.field == "store")
    assert problem.severity == "error" and "user config" in problem.message
    assert isinstance(open_store(loaded), SqliteEventStore)


def test_bad_store_values_fall_back_with_errors(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    write(
        tmp_path / "home" / "bearagent",
        "config.yaml",
        "store: {backend: mysql, dsn_env: 'postgresql://u:pw@h/db', schema: Bad-Name, pool_size: 0, dns_env: X}\n",
    )
    loaded = load(root, tmp_path / "home")
    assert loaded.config.store.backend == "sqlite"
    fields = {d.field for d in loaded.diagnostics() if d.field and d.field.startswith("store.")}
    assert fields == {"store.backend", "store.dsn_env", "store.schema", "store.pool_size", "store.dns_env"}
    assert "config.unknown_key" in codes(loaded.diagnostics())


def test_a_missing_dsn_variable_is_a_clear_error(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    write(tmp_path / "home" / "bearagent", "config.yaml", USER_STORE)
    with pytest.raises(BearAgentError) as caught:
        open_store(load(root, tmp_path / "home"))
    assert caught.value.info.code == "configuration.missing_store_dsn" and "TEAM_PG" in caught.value.info.message


def test_the_read_commands_read_a_postgres_store(tmp_path: Path, postgres_dsn: str) -> None:
    root = workspace(tmp_path)
    home = tmp_path / "home"
    write(home / "bearagent", "config.yaml", USER_STORE)
    env = isolated_env(home, TEAM_PG=postgres_dsn)
    loaded = load(root, home, env=env)

    def cli(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(main, [*args, "-w", str(root)], env=env, prog_name="bearagent")
        return result.exit_code, result.output

    code, out = cli("runs", "list")
    assert code != 0 and "no runs have been stored" in out  # nothing has run: no schema is created by a read

    store = open_store(loaded)
    assert isinstance(store, PostgresRunStorage) and postgres_schema(loaded, loaded.config.store) in store.path
    typed: WorkspaceStore = store
    f = EventFactory(ids=Uuid4IdGenerator())
    goal = {"goal": "summarise the notes", "agent_name": "build", "prompt_hash": "0" * 64}
    typed.append_many(
        [f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **goal})), f.run_started()]
    )
    store.close()

    code, out = cli("runs", "list", "--json")
    assert code == 0, out
    listed = json.loads(out)
    assert [r["run_id"] for r in listed] == [str(f.run_id)]
    code, out = cli("events", str(f.run_id)[:8], "--json")
    assert code == 0, out
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    # the read command recovered the run first: it was running with no owner recorded and no heartbeat
    assert [(e["sequence"], e["event_type"]) for e in events][2:] == [(3, "RunInterrupted")]


SCRIPT = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "Read it."
  - text: "Second answer."
"""


def test_runs_execute_on_a_postgres_store_in_a_session(tmp_path: Path, postgres_dsn: str) -> None:
    root = scripted_workspace(
        tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary", tools="[Read]")}
    )
    write(root, "notes.md", "notes\n")
    home = tmp_path / "home"
    write(home / "bearagent", "config.yaml", USER_STORE)
    env = isolated_env(home, TEAM_PG=postgres_dsn)
    with open_workspace(root, env=env, plugins=PluginHost()) as ws:
        assert isinstance(runtime_of(ws).store, PostgresRunStorage)
        first = ws.run_sync("read the notes")
        assert first.status == "succeeded" and first.final == "Read it."
        second = ws.run_sync("and now?", session=str(first.session_id))
        assert second.status == "succeeded" and second.final == "Second answer."
        types = [e.event_type for e in ws.events(str(first.run_id))]
    assert types[0] == "RunCreated" and types[-1] == "RunSucceeded" and "ToolCallCompleted" in types
    assert not (root / ".bearagent" / "state.db").exists(), "nothing was written to the workspace's SQLite"


def test_a_read_command_leaves_no_connection_or_store_thread_behind(tmp_path: Path, postgres_dsn: str) -> None:
    """Each read command opens the store and must close it when it ends, whichever way it ends: on PostgreSQL an
    unclosed store keeps its pooled connections and its loop thread until the process exits (in a long-lived
    process that calls the CLI, such as a test worker or an embedding app, for ever), and at exit its pending tasks
    are destroyed with "Task was destroyed but it is pending!" on stderr."""
    import threading

    root = workspace(tmp_path)
    home = tmp_path / "home"
    write(home / "bearagent", "config.yaml", USER_STORE)
    env = isolated_env(home, TEAM_PG=postgres_dsn)
    loaded = load(root, home, env=env)
    f = EventFactory(ids=Uuid4IdGenerator())
    goal = {"goal": "summarise the notes", "agent_name": "build", "prompt_hash": "0" * 64}
    store = open_store(loaded)
    try:
        store.append_many(
            [f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **goal})), f.run_started()]
        )
    finally:
        store.close()
    assert postgres_cluster.connections_left_open(postgres_dsn) == 0

    run = str(f.run_id)[:8]
    commands = [
        ["runs", "list"],
        ["runs", "list", "--json"],
        ["runs", "show", run],
        ["events", run],
        ["inspect", run],
        ["approvals", "list"],
        ["sessions", "list"],
        ["runs", "show", "ffffffff"],  # an unknown run: the command fails, and still closes the store
    ]
    for args in commands:
        before = {t.ident for t in threading.enumerate()}
        result = CliRunner().invoke(main, [*args, "-w", str(root)], env=env, prog_name="bearagent")
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.output)
        left = [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()]
        assert not [name for name in left if name.startswith("bearagent-")], (args, left)
        assert postgres_cluster.connections_left_open(postgres_dsn) == 0, (args, result.output)
