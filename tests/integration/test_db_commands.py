"""`bearagent db status` and `bearagent db migrate` on real SQLite files and a real PostgreSQL (the test session's
throwaway cluster): status reads without creating or migrating anything, migrate from every earlier schema version
(idempotent, several processes at once), a store of a newer BearAgent refused on both, runs counted by status,
`doctor`'s store line, and a DSN's password in no output."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql
from tests.support.config_ws import isolated_env, load, write
from tests.support.events import EventFactory

from bearagent.app.stores import open_store
from bearagent.cli import main
from bearagent.domain.ids import Uuid4IdGenerator
from bearagent.store import schema as sqlite_schema
from bearagent.store.postgres import schema as pg_schema
from bearagent.store.postgres.location import Location
from bearagent.store.sqlite import SqliteEventStore

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
SECRET = "Sup3r-s3cret-pw"
PG_STORE = "store: {backend: postgres, dsn: '${TEAM_DB}', schema: team}\n"


def cli(root: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args, "-w", str(root)], env=env, prog_name="bearagent")
    return result.exit_code, result.output


def setup(tmp_path: Path, user_config: str | None = None, **extra: str) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "ws"
    (root / ".bearagent").mkdir(parents=True)
    home = tmp_path / "home"
    (home / "bearagent").mkdir(parents=True)
    if user_config is not None:
        write(home / "bearagent", "config.yaml", user_config)
    return root, isolated_env(home, **extra)


# ---- SQLite -------------------------------------------------------------------------------------------------------


def sqlite_at(path: Path, version: int) -> None:
    """A store file at schema `version`, made with the released migrations (not by the store), holding a queued and
    an interrupted run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        for number in range(1, version + 1):
            for statement in sqlite_schema.MIGRATIONS[number - 1]:
                conn.execute(statement)
        for run_id, status in (("r-queued", "queued"), ("r-interrupted", "interrupted"), ("r-done", "succeeded")):
            conn.execute(
                "INSERT INTO run_projections (run_id, status, created_at, last_sequence, data)"
                " VALUES (?, ?, '2026-12-01T00:00:00+00:00', 1, '{}')",
                (run_id, status),
            )
        conn.execute(f"PRAGMA application_id = {sqlite_schema.APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {version}")


def user_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def test_status_of_a_workspace_without_a_store_creates_nothing(tmp_path: Path) -> None:
    root, env = setup(tmp_path)
    code, out = cli(root, env, "db", "status")
    assert code == 0, out
    assert "backend   sqlite" in out and str(root / ".bearagent" / "state.db") in out
    assert "none (no store yet)" in out and "creates the store" in out
    code, out = cli(root, env, "db", "status", "--json")
    status = json.loads(out)
    assert (status["state"], status["schema_version"], status["needs_migration"]) == ("missing", None, True)
    assert status["supported_version"] == sqlite_schema.SCHEMA_VERSION
    assert not (root / ".bearagent" / "state.db").exists()
    code, out = cli(root, env, "db", "migrate")
    assert (
        code == 0
        and out.strip()
        == f"created {root / '.bearagent' / 'state.db'} at schema version {sqlite_schema.SCHEMA_VERSION}"
    )
    assert user_version(root / ".bearagent" / "state.db") == sqlite_schema.SCHEMA_VERSION


@pytest.mark.parametrize("start", range(1, sqlite_schema.SCHEMA_VERSION))
def test_sqlite_status_and_migrate_from_every_earlier_version(tmp_path: Path, start: int) -> None:
    root, env = setup(tmp_path)
    path = root / ".bearagent" / "state.db"
    sqlite_at(path, start)
    code, out = cli(root, env, "db", "status")
    assert code == 0, out
    assert f"schema    {start} in the database, {sqlite_schema.SCHEMA_VERSION} known to this BearAgent" in out
    assert "run `bearagent db migrate`" in out and "1 queued, 0 running, 0 waiting, 1 interrupted" in out
    status = json.loads(cli(root, env, "db", "status", "--json")[1])
    assert (status["state"], status["schema_version"], status["needs_migration"]) == ("outdated", start, True)
    assert status["runs"] == {"queued": 1, "running": 0, "waiting": 0, "interrupted": 1}
    assert user_version(path) == start, "status migrated the file"

    code, out = cli(root, env, "db", "migrate")
    assert code == 0, out
    assert out.strip() == f"migrated {path} from schema version {start} to {sqlite_schema.SCHEMA_VERSION}"
    assert user_version(path) == sqlite_schema.SCHEMA_VERSION
    code, out = cli(root, env, "db", "migrate")
    assert code == 0 and out.strip() == f"{path} is up to date (schema version {sqlite_schema.SCHEMA_VERSION})"
    status = json.loads(cli(root, env, "db", "status", "--json")[1])
    assert (status["state"], status["needs_migration"], status["runs"]["queued"]) == ("current", False, 1)
    with SqliteEventStore(path) as store:  # the migrated file opens as a store, nothing left to migrate
        assert store.schema_version == sqlite_schema.SCHEMA_VERSION


def test_a_newer_sqlite_store_is_refused_and_left_alone(tmp_path: Path) -> None:
    root, env = setup(tmp_path)
    path = root / ".bearagent" / "state.db"
    SqliteEventStore(path).close()
    newer = sqlite_schema.SCHEMA_VERSION + 1
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {newer}")
    code, out = cli(root, env, "db", "status")
    assert code == 2
    assert f"error: the store has schema version {newer}, newer than this BearAgent supports" in out
    assert "fix: Upgrade BearAgent" in out
    code, out = cli(root, env, "db", "status", "--json")
    assert code == 2 and json.loads(out[: out.rindex("}") + 1])["state"] == "newer"
    code, out = cli(root, env, "db", "migrate")
    assert code == 2 and "newer than this BearAgent supports" in out and "Upgrade BearAgent" in out
    assert user_version(path) == newer
    code, out = cli(root, env, "doctor")
    assert code == 2 and "newer than this BearAgent" in out


def test_a_foreign_sqlite_file_is_refused_by_status_and_migrate(tmp_path: Path) -> None:
    root, env = setup(tmp_path)
    path = root / ".bearagent" / "state.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE theirs (x)")
    for command in ("status", "migrate"):
        code, out = cli(root, env, "db", command)
        assert code == 2 and "not a BearAgent event store" in out, out
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("theirs",)]


def test_status_counts_runs_by_status(tmp_path: Path) -> None:
    root, env = setup(tmp_path)
    store = open_store(load(root, tmp_path / "home", env=env))
    try:
        for started, finished in ((False, False), (True, False), (True, False), (True, True)):
            f = EventFactory(ids=Uuid4IdGenerator())
            events = [f.run_created()]
            if started:
                events.append(f.run_started())
            if finished:
                events.append(f.run_succeeded())
            store.append_many(events)
    finally:
        store.close()
    status = json.loads(cli(root, env, "db", "status", "--json")[1])
    assert status["runs"] == {"queued": 1, "running": 2, "waiting": 0, "interrupted": 0}
    _, out = cli(root, env, "doctor", "--json")
    assert json.loads(out)["store"]["runs"] == status["runs"]
    _, out = cli(root, env, "doctor")
    assert (
        f"store         sqlite {root / '.bearagent' / 'state.db'} (default) · schema {sqlite_schema.SCHEMA_VERSION} (current) · 1 queued, 0 interrupted runs"
        in out
    )


def test_sqlite_migrate_in_several_processes_at_once(tmp_path: Path) -> None:
    root, env = setup(tmp_path)
    path = root / ".bearagent" / "state.db"
    sqlite_at(path, 1)
    outputs = migrate_at_once(root, env, 4)
    assert sorted(o.startswith("migrated") for o in outputs) == [False, False, False, True], outputs
    assert all(
        o.endswith(f"is up to date (schema version {sqlite_schema.SCHEMA_VERSION})")
        for o in outputs
        if not o.startswith("migrated")
    )
    assert user_version(path) == sqlite_schema.SCHEMA_VERSION


def migrate_at_once(root: Path, env: dict[str, str], n: int) -> list[str]:
    procs = [
        subprocess.Popen(
            [BEARAGENT, "db", "migrate", "-w", str(root)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    outputs: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert SECRET not in out + err
        outputs.append(out.strip())
    return outputs


# ---- PostgreSQL ---------------------------------------------------------------------------------------------------


def versions(dsn: str, schema: str = "team") -> list[int]:
    with psycopg.connect(dsn) as conn:
        query = sql.SQL("SELECT version FROM {}.bearagent_schema ORDER BY version").format(sql.Identifier(schema))
        return [int(row[0]) for row in conn.execute(query).fetchall()]


def pg_at(dsn: str, version: int) -> None:
    """The `team` schema at `version`, made by the store's migrations stopped there, with a queued and an
    interrupted run."""
    import asyncio

    async def prepare() -> None:
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        async with conn:
            await pg_schema.migrate(conn, Location.of(dsn, "team"), upto=version)

    asyncio.run(prepare())
    with psycopg.connect(dsn, autocommit=True) as conn:
        for run_id, status in (("r-queued", "queued"), ("r-interrupted", "interrupted"), ("r-done", "failed")):
            conn.execute(
                "INSERT INTO team.run_projections (run_id, status, created_at, last_sequence, data)"
                " VALUES (%s, %s, now(), 1, '{}')",
                (run_id, status),
            )


@pytest.mark.parametrize("start", range(pg_schema.SCHEMA_VERSION))
def test_postgres_status_and_migrate_from_every_earlier_version(tmp_path: Path, postgres_dsn: str, start: int) -> None:
    dsn = f"{postgres_dsn} password={SECRET}"
    root, env = setup(tmp_path, PG_STORE, TEAM_DB=dsn)
    if start:
        pg_at(postgres_dsn, start)
    code, out = cli(root, env, "db", "status")
    assert code == 0, out
    assert "backend   postgres" in out and "#team" in out and "store: {backend" not in out
    status = json.loads(cli(root, env, "db", "status", "--json")[1])
    assert status["store"].startswith("postgresql://bearagent_test@") and status["store"].endswith("#team")
    if start:
        assert (status["state"], status["schema_version"]) == ("outdated", start)
        assert status["runs"] == {"queued": 1, "running": 0, "waiting": 0, "interrupted": 1}
        assert versions(postgres_dsn) == list(range(1, start + 1)), "status migrated the schema"
    else:
        assert (status["state"], status["schema_version"], status["runs"]["queued"]) == ("missing", None, 0)
        with psycopg.connect(postgres_dsn) as conn:  # status created nothing
            assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'team'").fetchone() is None

    code, migrated = cli(root, env, "db", "migrate")
    assert code == 0, migrated
    display = status["store"]
    target = pg_schema.SCHEMA_VERSION
    expected = (
        f"migrated {display} from schema version {start} to {target}"
        if start
        else f"created {display} at schema version {target}"
    )
    assert migrated.strip() == expected
    assert versions(postgres_dsn) == list(range(1, target + 1))
    code, again = cli(root, env, "db", "migrate")
    assert code == 0 and again.strip() == f"{display} is up to date (schema version {target})"
    status = json.loads(cli(root, env, "db", "status", "--json")[1])
    assert (status["state"], status["needs_migration"]) == ("current", False)
    code, doctor = cli(root, env, "doctor", "--json")
    assert json.loads(doctor)["store"]["state"] == "current"
    for text in (out, migrated, again, doctor, json.dumps(status)):
        assert SECRET not in text


def test_a_newer_postgres_store_is_refused_and_left_alone(tmp_path: Path, postgres_dsn: str) -> None:
    root, env = setup(tmp_path, PG_STORE, TEAM_DB=postgres_dsn)
    assert cli(root, env, "db", "migrate")[0] == 0
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO team.bearagent_schema (version) VALUES (999)")
    code, out = cli(root, env, "db", "status")
    assert code == 2 and "schema version 999, newer than this BearAgent supports" in out and "Upgrade BearAgent" in out
    code, out = cli(root, env, "db", "migrate")
    assert code == 2 and "newer than this BearAgent supports" in out
    assert versions(postgres_dsn) == [*range(1, pg_schema.SCHEMA_VERSION + 1), 999]


def test_postgres_migrate_in_several_processes_at_once(tmp_path: Path, postgres_dsn: str) -> None:
    root, env = setup(tmp_path, PG_STORE, TEAM_DB=f"{postgres_dsn} password={SECRET}")
    env = {**os.environ, **env}
    outputs = migrate_at_once(root, env, 4)
    assert sorted(o.startswith("created") for o in outputs) == [False, False, False, True], outputs
    assert versions(postgres_dsn) == list(range(1, pg_schema.SCHEMA_VERSION + 1))


def test_db_commands_on_postgres_errors(tmp_path: Path) -> None:
    # the variable `dsn:` names is not set
    root, env = setup(tmp_path, PG_STORE)
    for args in (("db", "status"), ("db", "migrate")):
        code, out = cli(root, env, *args)
        assert code == 2 and "TEAM_DB" in out and "store.dsn" in out and "fix: export TEAM_DB=" in out, out
    code, out = cli(root, env, "doctor", "--json")
    assert json.loads(out)["store"]["error"] == "configuration.missing_store_dsn"
    # an unreachable server: the error names the store without the password
    dsn = f"postgresql://agent:{SECRET}@127.0.0.1:1/runs?connect_timeout=2&sslmode=disable"
    env["TEAM_DB"] = dsn
    for args in (("db", "status"), ("db", "migrate"), ("doctor",)):
        code, out = cli(root, env, *args)
        assert code == 2 and "postgresql://agent@127.0.0.1:1/runs#team" in out and SECRET not in out, out
        assert "unreachable" in out or "cannot reach" in out


# ---- --config: the stores of a server's workspaces -----------------------------------------------------------------


def server_config(tmp_path: Path, roots: list[Path], store: str = "") -> Path:
    path = tmp_path / "server.yaml"
    lines = ["workspaces:", *(f"  - {{id: {r.name}, path: {r}}}" for r in roots)]
    path.write_text("\n".join(lines) + "\n" + store)
    return path


def test_config_covers_every_store_of_a_server(tmp_path: Path, postgres_dsn: str) -> None:
    _, env = setup(tmp_path, "store: {backend: sqlite}\n", SERVER_DB=f"{postgres_dsn} password={SECRET}")
    roots = [tmp_path / name for name in ("docs", "api")]
    for root in roots:
        (root / ".bearagent").mkdir(parents=True)
    shared = server_config(tmp_path, roots, "store: {backend: postgres, dsn: '${SERVER_DB}', schema: shared}\n")

    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(main, list(args), env=env, prog_name="bearagent")
        return result.exit_code, result.output

    code, out = run("db", "status", "--config", str(shared))
    assert code == 0, out
    assert out.startswith("workspaces docs, api\nbackend   postgres\n") and "#shared" in out
    assert f"chosen by {shared}" in out, "the server config's store: outranks the user config's sqlite"
    listed = json.loads(run("db", "status", "--config", str(shared), "--json")[1])
    assert [(s["workspaces"], s["state"]) for s in listed] == [(["docs", "api"], "missing")]
    code, out = run("db", "migrate", "--config", str(shared))
    assert code == 0 and out.count("created ") == 1 and "#shared at schema version" in out, out
    assert versions(postgres_dsn, "shared") == list(range(1, pg_schema.SCHEMA_VERSION + 1))

    per_workspace = server_config(tmp_path, roots, "store: {backend: postgres, dsn: '${SERVER_DB}'}\n")
    code, out = run("db", "migrate", "--config", str(per_workspace))
    assert code == 0 and out.count("created ") == 2, out  # a schema per workspace: two stores
    # without a store: in the server config, each workspace's user config decides (sqlite here)
    code, out = run("db", "migrate", "--config", str(server_config(tmp_path, roots)))
    assert code == 0 and out.count("created ") == 2 and all((r / ".bearagent" / "state.db").exists() for r in roots)
    for text in (out, json.dumps(listed)):
        assert SECRET not in text


def test_config_with_a_literal_dsn_or_an_unreachable_store_fails(tmp_path: Path, postgres_dsn: str) -> None:
    root, env = setup(tmp_path)
    literal = server_config(tmp_path, [root], f"store: {{backend: postgres, dsn: 'postgresql://a:{SECRET}@h/db'}}\n")
    result = CliRunner().invoke(main, ["db", "status", "--config", str(literal)], env=env, prog_name="bearagent")
    assert result.exit_code == 2 and f"{literal}: store.dsn" in result.output and SECRET not in result.output
    other = tmp_path / "other"
    (other / ".bearagent").mkdir(parents=True)
    env["GOOD_DB"] = postgres_dsn
    env["BAD_DB"] = f"postgresql://agent:{SECRET}@127.0.0.1:1/runs?connect_timeout=2&sslmode=disable"
    # the same two workspaces, served once from a reachable and once from an unreachable database
    for variable, expected in (("GOOD_DB", 0), ("BAD_DB", 2)):
        config = server_config(tmp_path, [root, other], f"store: {{backend: postgres, dsn: '${{{variable}}}'}}\n")
        result = CliRunner().invoke(main, ["db", "migrate", "--config", str(config)], env=env, prog_name="bearagent")
        assert result.exit_code == expected, result.output
        assert SECRET not in result.output
    assert "2 of 2 stores could not be migrated" in result.output and "cannot reach" in result.output
