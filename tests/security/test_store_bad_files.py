"""Bad store files and places: each is a `StoreError` (category `storage`) naming the path and what to do."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.events import seed_001_steps

from bearagent.store.errors import StoreError
from bearagent.store.schema import APPLICATION_ID
from bearagent.store.sqlite import SqliteEventStore

REPO = Path(__file__).resolve().parents[2]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def open_error(path: Path) -> StoreError:
    with pytest.raises(StoreError) as caught:
        SqliteEventStore(path)
    error = caught.value
    assert error.info.category == "storage"
    assert str(path) in str(error)
    assert error.info.details["path"] == str(path)
    return error


def filled_store(path: Path) -> None:
    with SqliteEventStore(path) as store:
        for step in seed_001_steps():
            store.append(step.event)


def test_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_text("# notes\nthis is a markdown file, not a database\n" * 50)
    before = digest(path)
    error = open_error(path)
    assert error.info.code == "storage.not_a_database"
    assert "is not an SQLite database" in str(error)
    assert "Check the path" in str(error) and "move it aside" in str(error)
    assert digest(path) == before


@pytest.mark.parametrize("application_id", [0, 0x12345678])
def test_a_foreign_sqlite_file_is_refused_and_left_untouched(tmp_path: Path, application_id: int) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA application_id = {application_id}")
        conn.execute("CREATE TABLE contacts (name TEXT)")
        conn.execute("INSERT INTO contacts VALUES ('ada')")
    before = digest(path)
    error = open_error(path)
    assert error.info.code == "storage.foreign_file"
    assert "is not a BearAgent event store" in str(error)
    assert "Move it aside or point BearAgent at another file" in str(error)
    assert digest(path) == before
    assert not Path(f"{path}-wal").exists()


def test_a_damaged_header_or_schema(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    filled_store(path)
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\x5a" * (4096 - 100)  # the schema page, after the 100-byte header
    path.write_bytes(bytes(data))
    error = open_error(path)
    assert error.info.code == "storage.corrupt"
    assert "is damaged" in str(error)
    assert "restore it from a backup" in str(error) and ".recover" in str(error)


def test_damaged_data_pages_are_reported_when_read(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    filled_store(path)
    with SqliteEventStore(path) as store:
        store.check_integrity()  # a sound file passes
    data = bytearray(path.read_bytes())
    page = 4096
    for start in range(page, len(data), page):  # every page but the first: b-tree headers become garbage
        data[start : start + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as caught:
        store = SqliteEventStore(path)
        store.check_integrity()
        store.read_events(seed_001_steps()[0].event.run_id)
    error = caught.value
    assert error.info.code == "storage.corrupt"
    assert str(path) in str(error)
    assert "restore it from a backup" in str(error)


def test_a_store_from_a_newer_bearagent(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    filled_store(path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 42")
    error = open_error(path)
    assert error.info.code == "storage.newer_schema"
    assert "schema version 42, newer than this BearAgent supports" in str(error)
    assert "Upgrade BearAgent" in str(error)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 42
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


def test_a_directory_where_the_file_should_be(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.mkdir()
    error = open_error(path)
    assert error.info.code == "storage.not_a_file"
    assert "is a directory" in str(error) and "Point it at a file" in str(error)


def test_a_parent_that_cannot_be_a_directory(tmp_path: Path) -> None:
    blocker = tmp_path / ".bearagent"
    blocker.write_text("a file where the directory should be")
    error = open_error(blocker / "state.db")
    assert error.info.code == "storage.read_only"
    assert "cannot create the directory of the event store" in str(error)


_PROBE = """
import json, os, sys, tempfile
from bearagent.store.errors import StoreError
from bearagent.store.sqlite import SqliteEventStore
# Before dropping root: one refused open, so that what the error path loads on first use (models are built
# lazily, and pydantic imports its plugin loader then) is loaded while the checkout is still readable. A checkout
# in a directory `nobody` cannot enter (mktemp's 0700 under /tmp) would otherwise fail with ModuleNotFoundError.
with tempfile.TemporaryDirectory() as warm:
    with open(os.path.join(warm, "x.db"), "w") as f:
        f.write("not a database" * 100)
    try:
        SqliteEventStore(os.path.join(warm, "x.db")).close()
    except StoreError:
        pass
if os.geteuid() == 0:  # drop root (which may write anywhere) once everything is imported
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
try:
    SqliteEventStore(sys.argv[1]).close()
    print(json.dumps({"opened": True}))
except StoreError as exc:
    print(json.dumps({"code": exc.info.code, "message": str(exc)}))
"""


def open_as_unprivileged(path: Path) -> dict[str, object]:
    """Open the store in a process that cannot write `path`'s directory (as `nobody` when we are root)."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'src'}"}
    result: subprocess.CompletedProcess[str] = subprocess.run(
        [sys.executable, "-c", _PROBE, str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def read_only_dir() -> Iterator[Path]:
    """A directory the unprivileged probe can enter but not write (outside pytest's root-only tmp tree)."""
    parent = Path(tempfile.mkdtemp(prefix="bearagent-ro-"))
    parent.chmod(0o755)
    directory = parent / "ro"
    directory.mkdir()
    yield directory
    directory.chmod(0o755)
    for child in directory.iterdir():
        child.chmod(0o644)
    shutil.rmtree(parent)


def test_an_unreachable_location(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    outcome = open_as_unprivileged(hidden / "state.db") if os.geteuid() == 0 else None
    if outcome is None:  # not root: make the directory unreachable for ourselves
        hidden.chmod(0o000)
        try:
            with pytest.raises(StoreError) as caught:
                SqliteEventStore(hidden / "state.db")
            outcome = {"code": caught.value.info.code, "message": str(caught.value)}
        finally:
            hidden.chmod(0o700)
    assert outcome.get("code") == "storage.read_only", outcome
    assert str(hidden / "state.db") in str(outcome["message"])
    assert "Make its directory accessible" in str(outcome["message"])


def test_a_new_store_in_a_read_only_directory(read_only_dir: Path) -> None:
    read_only_dir.chmod(0o555)
    path = read_only_dir / "state.db"
    outcome = open_as_unprivileged(path)
    assert outcome.get("code") == "storage.read_only", outcome
    message = str(outcome["message"])
    assert str(path) in message
    assert "Make the directory and the file writable" in message


def test_an_existing_store_that_cannot_be_written(read_only_dir: Path) -> None:
    path = read_only_dir / "state.db"
    filled_store(path)
    path.chmod(0o444)
    read_only_dir.chmod(0o555)
    outcome = open_as_unprivileged(path)
    assert outcome.get("code") == "storage.read_only", outcome
    assert str(path) in str(outcome["message"])
    assert "or point BearAgent at a writable workspace" in str(outcome["message"])
