"""A repository that ships an empty `.bearagent/state.db` (issue 28, item 2's sibling and item 16's: a store that is
none of the user's making must not silently become theirs).

Git tracks the file, and it is readable by others (0644 from a checkout): a run that initialised it would write the
user's prompts, tool output and answers into a file the repository's owner gets back with the next `git commit -a`
and push. BearAgent makes a new store whole beside its path (0600) and links it into place, so it never leaves an
empty one: an empty file (0 bytes) or an SQLite database with nothing in it at the store's path is refused, by every
command, with the file and the fix, and never written. Real `bearagent` processes with the scripted model.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.store.errors import StoreError
from bearagent.store.sqlite import SqliteEventStore

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
SCRIPT = yaml.safe_dump(
    {"turns": [{"tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.md"}}]}, {"text": "done"}]}
)


def _empty_sqlite(path: Path) -> None:
    """A valid SQLite file with no schema objects (what `sqlite3 state.db 'create table t(x); drop table t'`
    leaves): not 0 bytes, and still none of BearAgent's."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("DROP TABLE t")
    conn.close()


def _zero_bytes(path: Path) -> None:
    path.write_bytes(b"")


SHIPPED: dict[str, Callable[[Path], None]] = {"zero-bytes": _zero_bytes, "empty-sqlite": _empty_sqlite}


def _clone(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """A checkout that ships `.bearagent/state.db` (committed, as git leaves it: 0644) and a home."""
    ws = scripted_workspace(
        tmp_path / "clone", SCRIPT, agents={"main": agent_md("Main.", mode="primary", tools="[Read]")}
    )
    (ws / "notes.md").write_text("hello\n")
    db = ws / ".bearagent" / "state.db"
    SHIPPED[kind](db)
    db.chmod(0o644)
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "x"]):
        subprocess.run(["git", *command], cwd=ws, check=True, capture_output=True)
    home = tmp_path / "home"
    (home / "bearagent").mkdir(parents=True)
    return ws, home


def _bearagent(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`bearagent ARGS... -w WS` (a prompt, for `run`, after it)."""
    words = [*args[:-1], "-w", str(ws), args[-1]] if args[0] == "run" else [*args, "-w", str(ws)]
    return subprocess.run(
        [BEARAGENT, *words],
        env=isolated_env(home, NO_COLOR="1"),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize("kind", list(SHIPPED))
@pytest.mark.parametrize(
    "command", [("run", "go"), ("runs", "list"), ("db", "migrate"), ("db", "status"), ("db", "check"), ("sessions", "list")]
)
def test_a_shipped_empty_store_is_refused_by_every_command(tmp_path: Path, kind: str, command: tuple[str, ...]) -> None:
    ws, home = _clone(tmp_path, kind)
    db = ws / ".bearagent" / "state.db"
    before = db.read_bytes()
    done = _bearagent(ws, home, *command)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert str(db) in said and "empty" in said and "rm" in said, said
    assert "Traceback" not in said
    assert db.read_bytes() == before, "the shipped file was written"
    assert (
        subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ws, capture_output=True, text=True
        ).stdout
        == ""
    )


@pytest.mark.parametrize("kind", list(SHIPPED))
def test_after_the_fix_a_run_makes_a_store_of_its_own(tmp_path: Path, kind: str) -> None:
    """The fix the message gives: remove the file (and stop tracking it); the next run makes its own, 0600."""
    ws, home = _clone(tmp_path, kind)
    db = ws / ".bearagent" / "state.db"
    subprocess.run(["git", "rm", "-q", "--cached", str(db)], cwd=ws, check=True)
    db.unlink()
    done = _bearagent(ws, home, "run", "go")
    assert done.returncode == 0, done.stdout + done.stderr
    assert db.stat().st_mode & 0o777 == 0o600 and db.stat().st_size > 0


def test_stores_made_at_once_by_many_openers_are_one_whole_store(tmp_path: Path) -> None:
    """The new store is linked into place whole: openers racing to create it never see it empty (which they would
    now refuse), and all end up on the same file."""
    for attempt in range(10):
        path = tmp_path / f"race-{attempt}" / "state.db"
        errors: list[BaseException] = []
        barrier = threading.Barrier(4)

        def open_it(
            path: Path = path, errors: list[BaseException] = errors, barrier: threading.Barrier = barrier
        ) -> None:
            barrier.wait()
            try:
                SqliteEventStore(path).close()
            except (StoreError, OSError) as exc:
                errors.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == [], errors
        assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".")) == []
