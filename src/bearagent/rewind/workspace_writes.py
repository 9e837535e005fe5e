"""The durable record of where runs may have written since the user's last trust decision (issue 28, item 3 across
processes): `<user config dir>/workspace-writes.json`, beside `trust.json`, never in a workspace.

`rewind.written` knows a session's first call that may write, in one process. A later process starts from the trust
check, which fingerprints the code a hook names, but not code that code loads from data (a script that evals a
config file, a formatter's plugin list, a module a tool imports by a name a JSON file gives). So the gate also
records here each directory a call that may write could write (the workspace and the additional directories), and a
command hook, the `statusLine` command or a stdio MCP server of a workspace runs confined when any run since that
workspace's last trust decision may have written in it, in this process or an earlier one (`written_since_trust`).

The rule is the simplest sound one: any write anywhere in the workspace (or in a directory that contains it or lies
inside it: a run in `/repo` writes `/repo/sub`'s scripts), by any earlier run or process, whatever file it was. It is
not cleared by time or by a run ending, only by `bearagent trust` for that workspace (`trusted`): the user's look at
what the workspace now holds, the model's changes included.

Order is a counter, not a clock: each recorded write and each trust decision takes the next number, and a write
counts for a workspace when its number is above the workspace's last decision. A hostile repository can neither
clear nor forge the record: it lives in the user config dir, which the sandbox hides or shows read-only and the file
tools never reach; the record only ever adds confinement, so a forged entry could only confine more. A record that
does not parse confines every workspace (and a trust decision then starts a new record that still confines the
others until each is trusted again); at most `MAX_ENTRIES` directories are kept, the least recently written
forgotten first.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from bearagent.config.workspace import user_config_dir
from bearagent.domain.errors import ErrorInfo

JsonScalar = int | str

RECORD_FILE = "workspace-writes.json"
RECORD_VERSION = 1
MAX_ENTRIES = 4096
_EVERYWHERE = "/"


@dataclass(frozen=True, slots=True)
class RecordedWrite:
    """A write recorded since a workspace's last trust decision: the directory, the call, when."""

    root: str
    first: str
    at: str

    def describe(self) -> str:
        if self.root == _EVERYWHERE and not self.at:
            return self.first
        return f"an earlier run ({self.first}, {self.at}, in {self.root})"


def _overlaps(a: str, b: str) -> bool:
    """Whether one directory is the other or contains it."""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


@dataclass(slots=True)
class _Data:
    seq: int = 0
    writes: dict[str, dict[str, JsonScalar]] = field(default_factory=dict[str, dict[str, JsonScalar]])
    """Directory -> {"seq": n, "first": "the model's Bash call c1 (session s)", "at": ISO time}."""
    trusted: dict[str, int] = field(default_factory=dict[str, int])
    """Workspace -> the number of its last trust decision."""


def _seq(entry: Mapping[str, JsonScalar]) -> int:
    n = entry.get("seq")
    return n if isinstance(n, int) else 0


class WritesRecord:
    """The record file of one user config dir. Reads are fresh; writes are atomic (temp file + rename, 0600) under
    an exclusive lock, so concurrent processes never lose each other's entries."""

    def __init__(self, user_dir: Path) -> None:
        self.path = user_dir / RECORD_FILE
        self._seen: dict[str, tuple[int, int, int]] = {}
        """Directory -> the file's (inode, mtime, size) when it was last found recorded and current: skips a read."""

    def note(self, roots: Iterable[str | Path], first: str) -> None:
        """Record that a call that may write is about to run in these directories (each as its real path)."""
        wanted = [os.path.realpath(r) for r in roots]
        signature = self._signature()
        if signature is not None and all(self._seen.get(r) == signature for r in wanted):
            return
        with self._locked():
            data = self._load()
            if data is None:
                return  # unreadable: it already confines every workspace; a trust decision starts a new one
            changed = False
            for root in wanted:
                entry = data.writes.get(root)
                if entry is not None and all(
                    n < _seq(entry) for w, n in data.trusted.items() if _overlaps(w, root)
                ):  # already counts for every workspace it touches
                    continue
                data.seq += 1
                at = datetime.now(UTC).isoformat(timespec="seconds")
                data.writes[root] = {"seq": data.seq, "first": first[:500], "at": at}
                changed = True
            if changed:
                self._save(data)
            signature = self._signature()
        if signature is not None:
            for root in wanted:
                self._seen[root] = signature

    def since_trust(self, workspace: str | Path) -> RecordedWrite | None:
        """The first write recorded since the workspace's last trust decision that touches it; None: none."""
        root = os.path.realpath(workspace)
        try:
            data = self._load()
        except OSError as exc:
            return RecordedWrite(_EVERYWHERE, f"the record of runs' writes {self.path} cannot be read ({exc})", "")
        if data is None:
            return RecordedWrite(_EVERYWHERE, f"the record of runs' writes {self.path} does not parse", "")
        last = data.trusted.get(root, 0)
        found = [(_seq(e), path, e) for path, e in data.writes.items() if _overlaps(path, root) and _seq(e) > last]
        if not found:
            return None
        _, path, entry = min(found, key=lambda item: item[0])
        return RecordedWrite(path, str(entry.get("first", "")), str(entry.get("at", "")))

    def trusted(self, workspace: str | Path) -> None:
        """The user's trust decision for the workspace: the writes recorded so far no longer count for it."""
        root = os.path.realpath(workspace)
        with self._locked():
            data = self._load()
            if data is None:  # unreadable: a new record that still confines every other workspace
                data = _Data(seq=1, writes={_EVERYWHERE: {"seq": 1, "first": "an unreadable record", "at": ""}})
            data.seq += 1
            data.trusted[root] = data.seq
            self._save(data)
        self._seen.clear()

    def unwritable(self, tool: str, exc: OSError) -> ErrorInfo:
        """Why a call that may write was refused: its write could not be recorded."""
        return ErrorInfo.of(
            "configuration",
            "writes_record_unwritable",
            f"{tool} was not run: BearAgent records where runs may write in {self.path} before a call that may "
            f"write, and could not ({exc.strerror or exc}). Fix: make {self.path.parent} writable by you (it is "
            "your BearAgent user config directory)",
        )

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    @contextlib.contextmanager
    def _locked(self) -> Generator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _load(self) -> _Data | None:
        """The record (empty when there is none yet); None when it does not parse."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return _Data()
        try:
            raw: object = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        return _parsed(raw)

    def _save(self, data: _Data) -> None:
        writes = data.writes
        if len(writes) > MAX_ENTRIES:  # the least recently written go first
            writes = dict(sorted(writes.items(), key=lambda item: _seq(item[1]))[-MAX_ENTRIES:])
        trusted = data.trusted
        if len(trusted) > MAX_ENTRIES:  # forgetting a decision only confines more
            trusted = dict(sorted(trusted.items(), key=lambda item: item[1])[-MAX_ENTRIES:])
        body = json.dumps(
            {"version": RECORD_VERSION, "seq": data.seq, "writes": writes, "trusted": trusted}, indent=1, sort_keys=True
        )
        fd, tmp = tempfile.mkstemp(prefix=".workspace-writes-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body + "\n")
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _parsed(raw: object) -> _Data | None:
    """The record's parts checked for shape; None when any is wrong (it then confines every workspace)."""
    if not isinstance(raw, dict):
        return None
    body = cast(dict[str, object], raw)
    seq, writes, trusted = body.get("seq"), body.get("writes"), body.get("trusted")
    if not isinstance(seq, int) or not isinstance(writes, dict) or not isinstance(trusted, dict):
        return None
    data = _Data(seq=seq)
    for path, entry in cast(dict[str, object], writes).items():
        if not isinstance(entry, dict):
            return None
        fields = cast(dict[str, object], entry)
        n, first, at = fields.get("seq"), fields.get("first"), fields.get("at")
        if not isinstance(n, int) or not isinstance(first, str) or not isinstance(at, str):
            return None
        data.writes[path] = {"seq": n, "first": first, "at": at}
    for path, n in cast(dict[str, object], trusted).items():
        if not isinstance(n, int):
            return None
        data.trusted[path] = n
    return data


_records: dict[str, WritesRecord] = {}


def writes_record(user_dir: Path) -> WritesRecord:
    """The record of a user config dir, one object per directory in a process (it caches what it found current)."""
    key = os.path.realpath(user_dir)
    found = _records.get(key)
    if found is None:
        found = _records[key] = WritesRecord(Path(key))
    return found


def record_for_env(env: Mapping[str, str]) -> WritesRecord:
    """The record of the user config dir `env` names (`$BEARAGENT_HOME`, ...)."""
    return writes_record(user_config_dir(env))
