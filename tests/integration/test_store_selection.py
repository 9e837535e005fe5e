"""Choosing the store (SPEC §17): `store: {backend, dsn: ${VAR}}` in the user config (a literal DSN refused, naming
the file and the key, never the value), `BEARAGENT_DATABASE_URL` alone, the server config's `store:` over the user
config's for every served workspace, and a workspace file never choosing it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.support.config_ws import isolated_env, load, write

from bearagent.app.stores import open_store
from bearagent.cli import main
from bearagent.config.store_settings import DATABASE_URL_ENV
from bearagent.domain.errors import BearAgentError
from bearagent.plugins.manager import PluginHost
from bearagent.server.config import load_server_config
from bearagent.store.postgres import PostgresRunStorage
from bearagent.store.sqlite import SqliteEventStore
from bearagent.workspace import load_workspace

SECRET = "pa55-w0rd-never-shown"
LITERAL = f"postgresql://agent:{SECRET}@db.internal:5432/runs"


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".bearagent").mkdir(parents=True)
    return root


def user_config(tmp_path: Path, text: str) -> Path:
    return write(tmp_path / "home" / "bearagent", "config.yaml", text)


def test_dsn_takes_a_variable_reference(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    user_config(tmp_path, "store: {backend: postgres, dsn: '${TEAM_DB}', schema: team}\n")
    loaded = load(root, tmp_path / "home", env=isolated_env(tmp_path / "home", TEAM_DB="host=/nowhere dbname=x"))
    store = loaded.config.store
    assert (store.backend, store.dsn_env, store.dsn_key, store.pg_schema) == ("postgres", "TEAM_DB", "dsn", "team")
    assert not [d for d in loaded.diagnostics() if (d.field or "").startswith("store")]
    opened = open_store(loaded)
    try:
        assert isinstance(opened, PostgresRunStorage) and opened.path == "postgresql:///nowhere/x#team"
    finally:
        opened.close()


def test_a_missing_dsn_variable_names_the_file_and_key(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    path = user_config(tmp_path, "store: {backend: postgres, dsn: '${TEAM_DB}'}\n")
    with pytest.raises(BearAgentError) as caught:
        open_store(load(root, tmp_path / "home"))
    info = caught.value.info
    assert info.code == "configuration.missing_store_dsn"
    assert "TEAM_DB" in info.message and f"{path}: store.dsn" in info.message
    assert caught.value.hint is not None and "export TEAM_DB=" in caught.value.hint


def test_a_section_without_a_dsn_key_says_when_database_url_is_the_one_set(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    path = user_config(tmp_path, "store: {backend: postgres}\n")  # the default variable, BEARAGENT_PG_DSN
    env = isolated_env(tmp_path / "home", **{DATABASE_URL_ENV: "host=/nowhere dbname=x"})
    loaded = load(root, tmp_path / "home", env=env)
    assert loaded.config.store.source == str(path), "the user config's section wins over the variable alone"
    with pytest.raises(BearAgentError) as caught:
        open_store(loaded)
    assert "BEARAGENT_PG_DSN" in caught.value.info.message
    assert caught.value.hint is not None and caught.value.hint.startswith("write `dsn: ${BEARAGENT_DATABASE_URL}`")


@pytest.mark.parametrize("value", [LITERAL, f"${{TEAM_DB:-{LITERAL}}}", f"host=db password={SECRET}"])
def test_a_literal_dsn_is_refused_naming_the_file_and_key(tmp_path: Path, value: str) -> None:
    root = workspace(tmp_path)
    path = user_config(tmp_path, f"store:\n  backend: postgres\n  dsn: '{value}'\n")
    env = isolated_env(tmp_path / "home", TEAM_DB="host=/nowhere dbname=x", BEARAGENT_PG_DSN="host=/nowhere")
    loaded = load(root, tmp_path / "home", env=env)
    problem = next(d for d in loaded.diagnostics() if d.field == "store.dsn")
    assert problem.severity == "error" and problem.source == str(path) and problem.line == 3
    assert "${VAR}" in problem.message and "default is used" not in problem.message
    assert problem.fix is not None and "${BEARAGENT_DATABASE_URL}" in problem.fix
    with pytest.raises(BearAgentError) as caught:  # not SQLite instead, nor the default variable's database
        open_store(loaded)
    assert caught.value.info.code == "configuration.literal_store_dsn"
    assert f"{path}: store.dsn" in caught.value.info.message
    assert not (root / ".bearagent" / "state.db").exists()
    for text in (problem.message, problem.fix, caught.value.info.message, caught.value.hint or ""):
        assert SECRET not in text

    result = CliRunner().invoke(main, ["runs", "list", "-w", str(root)], env=env, prog_name="bearagent")
    assert result.exit_code == 2 and "store.dsn" in result.output and SECRET not in result.output
    result = CliRunner().invoke(main, ["doctor", "-w", str(root)], env=env, prog_name="bearagent")
    assert result.exit_code == 2 and "store.dsn" in result.output and SECRET not in result.output


def test_dsn_and_dsn_env_naming_different_variables_is_refused(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    user_config(tmp_path, "store: {backend: postgres, dsn: '${ONE}', dsn_env: TWO}\n")
    loaded = load(root, tmp_path / "home", env=isolated_env(tmp_path / "home", ONE="host=/a", TWO="host=/b"))
    assert any(d.field == "store.dsn" and d.severity == "error" for d in loaded.diagnostics())
    with pytest.raises(BearAgentError) as caught:
        open_store(loaded)
    assert caught.value.info.code == "configuration.conflicting_store_dsn"


def test_database_url_alone_selects_postgres(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    env = isolated_env(tmp_path / "home", **{DATABASE_URL_ENV: f"postgresql://agent:{SECRET}@db.internal/runs"})
    loaded = load(root, tmp_path / "home", env=env)
    store = loaded.config.store
    assert (store.backend, store.dsn_env) == ("postgres", DATABASE_URL_ENV)
    assert store.source == f"environment ({DATABASE_URL_ENV})"
    opened = open_store(loaded)
    try:
        assert isinstance(opened, PostgresRunStorage) and SECRET not in opened.path
        assert opened.path.startswith("postgresql://agent@db.internal/runs#bearagent_")
    finally:
        opened.close()
    # an empty variable selects nothing
    assert load(root, tmp_path / "home", env={**env, DATABASE_URL_ENV: ""}).config.store.backend == "sqlite"


def test_the_user_config_outranks_database_url(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    path = user_config(tmp_path, "store: {backend: sqlite}\n")
    env = isolated_env(tmp_path / "home", **{DATABASE_URL_ENV: "host=/nowhere dbname=x"})
    loaded = load(root, tmp_path / "home", env=env)
    assert (loaded.config.store.backend, loaded.config.store.source) == ("sqlite", str(path))
    store = open_store(loaded)
    try:
        assert isinstance(store, SqliteEventStore)
    finally:
        store.close()


def test_a_workspace_file_cannot_choose_the_store_even_with_dsn(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    write(root, ".bearagent/config.yaml", "store: {backend: postgres, dsn: '${TEAM_DB}'}\n")
    loaded = load(root, tmp_path / "home", env=isolated_env(tmp_path / "home", TEAM_DB="host=/nowhere"))
    assert loaded.config.store.backend == "sqlite"
    assert any(d.field == "store" and d.severity == "error" for d in loaded.diagnostics())


SERVER_STORE = """
workspaces:
  - {{id: docs, path: {root}}}
store:
  backend: postgres
  dsn: ${{SERVER_DB}}
  schema: served
  pool_size: 3
"""


def test_the_server_config_store_outranks_the_user_config(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    user_config(tmp_path, "store: {backend: sqlite}\n")
    write(root, ".bearagent/config.yaml", "store: {backend: sqlite}\n")  # still refused
    server_file = tmp_path / "server.yaml"
    server_file.write_text(SERVER_STORE.format(root=root))
    config = load_server_config(server_file, [])
    assert config.store is not None
    assert (config.store.backend, config.store.dsn_env, config.store.pg_schema, config.store.pool_size) == (
        "postgres",
        "SERVER_DB",
        "served",
        3,
    )
    env = isolated_env(tmp_path / "home", SERVER_DB="host=/nowhere dbname=x")
    loaded = load_workspace(root, env=env, plugins=PluginHost(), store=config.store)
    assert loaded.config.store == config.store and loaded.config.store.source == str(server_file)
    assert any(d.field == "store" for d in loaded.diagnostics())  # the workspace's own section is still refused
    opened = open_store(loaded)
    try:
        assert isinstance(opened, PostgresRunStorage) and opened.path.endswith("#served")
    finally:
        opened.close()
    # without the server's settings the same workspace uses what the user config chose
    assert load(root, tmp_path / "home", env=env).config.store.backend == "sqlite"
    # a server config without `store:` leaves each workspace to its user config and environment
    server_file.write_text(f"workspaces:\n  - {{id: docs, path: {root}}}\n")
    assert load_server_config(server_file, []).store is None


@pytest.mark.parametrize(
    ("section", "field"),
    [
        (f"store: {{backend: postgres, dsn: '{LITERAL}'}}", "store.dsn"),
        ("store: {backend: postgres, dns: '${X}'}", "store.dns"),
        ("store: {backend: mysql}", "store.backend"),
        ("store: postgres", "store"),
    ],
)
def test_a_bad_server_store_stops_the_server(tmp_path: Path, section: str, field: str) -> None:
    root = workspace(tmp_path)
    server_file = tmp_path / "server.yaml"
    server_file.write_text(f"workspaces:\n  - {{id: docs, path: {root}}}\n{section}\n")
    with pytest.raises(BearAgentError) as caught:
        load_server_config(server_file, [])
    message = caught.value.info.message
    assert caught.value.info.code == "configuration.server_config"
    assert message.startswith(f"{server_file}: {field}") and SECRET not in message and caught.value.hint


def test_a_transaction_pooler_and_a_direct_dsn_for_listen_are_chosen_in_the_store_section(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    user_config(
        tmp_path,
        "store: {backend: postgres, dsn: '${TEAM_DB}', pooler: transaction, listen_dsn_env: TEAM_DB_DIRECT}\n",
    )
    env = isolated_env(tmp_path / "home", TEAM_DB="host=/pooler dbname=x", TEAM_DB_DIRECT="host=/direct dbname=x")
    loaded = load(root, tmp_path / "home", env=env)
    assert (loaded.config.store.pooler, loaded.config.store.listen_dsn_env) == ("transaction", "TEAM_DB_DIRECT")
    assert not [d for d in loaded.diagnostics() if (d.field or "").startswith("store")]
    opened = open_store(loaded)
    try:
        assert isinstance(opened, PostgresRunStorage)
        assert opened.location.transaction_pooler and opened.location.listen_dsn == "host=/direct dbname=x"
        assert opened.location.connect_kwargs == {"autocommit": True, "prepare_threshold": None}
    finally:
        opened.close()
    # without a direct DSN, nothing listens behind the pooler; without the pooler, LISTEN uses the store's DSN
    user_config(tmp_path, "store: {backend: postgres, dsn: '${TEAM_DB}', pooler: transaction}\n")
    opened = open_store(load(root, tmp_path / "home", env=env))
    try:
        assert isinstance(opened, PostgresRunStorage) and opened.location.listen_dsn is None
    finally:
        opened.close()
    user_config(tmp_path, "store: {backend: postgres, dsn: '${TEAM_DB}'}\n")
    opened = open_store(load(root, tmp_path / "home", env=env))
    try:
        assert isinstance(opened, PostgresRunStorage) and opened.location.listen_dsn == "host=/pooler dbname=x"
        assert opened.location.connect_kwargs == {"autocommit": True}
    finally:
        opened.close()


@pytest.mark.parametrize(
    ("option", "fix"),
    [
        ("pooler: session", "pooler: transaction"),
        ("listen_dsn_env: 'postgresql://x@db/runs'", "listen_dsn_env: BEARAGENT_PG_DIRECT"),
    ],
)
def test_a_bad_pooler_option_is_a_problem_with_its_fix(tmp_path: Path, option: str, fix: str) -> None:
    root = workspace(tmp_path)
    user_config(tmp_path, f"store: {{backend: postgres, dsn: '${{TEAM_DB}}', {option}}}\n")
    loaded = load(root, tmp_path / "home", env=isolated_env(tmp_path / "home", TEAM_DB="host=/nowhere dbname=x"))
    key = option.split(":", 1)[0]
    problem = next(d for d in loaded.diagnostics() if d.field == f"store.{key}")
    assert problem.fix is not None and fix in problem.fix
    assert loaded.config.store.pooler == "none" and loaded.config.store.listen_dsn_env is None


def test_a_missing_listen_dsn_variable_is_named_with_the_fix(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    path = user_config(
        tmp_path, "store: {backend: postgres, dsn: '${TEAM_DB}', pooler: transaction, listen_dsn_env: NOT_SET}\n"
    )
    env = isolated_env(tmp_path / "home", TEAM_DB="host=/nowhere dbname=x")
    with pytest.raises(BearAgentError) as caught:
        open_store(load(root, tmp_path / "home", env=env))
    assert caught.value.info.code == "configuration.missing_store_dsn"
    assert "store.listen_dsn_env" in caught.value.info.message and str(path) in caught.value.info.message
    assert "NOT_SET" in caught.value.info.message
    assert caught.value.hint is not None and "export NOT_SET=" in caught.value.hint
