"""Errors of the event store adapters: what went wrong with which file, and what to do about it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bearagent.domain.errors import BearAgentError, ErrorInfo


class StoreError(BearAgentError):
    """A storage failure (category `storage`); the message names the file and the fix."""

    def __init__(self, path: Path | str, specific: str, what: str, fix: str, *, retryable: bool = False) -> None:
        message = f"{what}: {path}. {fix}"
        super().__init__(ErrorInfo.of("storage", specific, message, retryable=retryable, path=str(path)), hint=fix)
        self.path = str(path)


def translate_sqlite_error(path: Path | str, exc: sqlite3.Error, doing: str) -> StoreError:
    """Turn a raw sqlite3 error into a `StoreError` that says what happened to which file and what to do."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return StoreError(
            path,
            "busy",
            f"the event store was locked by another writer for too long while {doing}",
            "Retry; if it persists, stop the other bearagent process using this workspace",
            retryable=True,
        )
    if "readonly" in text or "read-only" in text or "unable to open" in text or "permission" in text:
        return StoreError(
            path,
            "read_only",
            f"cannot write the event store while {doing} (the file or its directory is read-only or missing)",
            "Make the directory and the file writable (the store also creates -wal and -shm files next to it), "
            "or point BearAgent at a writable workspace",
        )
    if "not a database" in text or "encrypted" in text:
        return StoreError(
            path,
            "not_a_database",
            f"the event store file is not an SQLite database ({exc}) while {doing}",
            "Check the path; if the file is yours, move it aside and BearAgent starts a new, empty store there",
        )
    if "malformed" in text or "corrupt" in text:
        return StoreError(
            path,
            "corrupt",
            f"the event store file is damaged ({exc}) while {doing}",
            "Move the file aside (BearAgent then starts a new, empty store) or restore it from a backup; "
            "`sqlite3 FILE .recover` may salvage the events",
        )
    if "disk is full" in text or "disk i/o" in text:
        return StoreError(
            path,
            "io",
            f"the disk failed or is full while {doing} ({exc})",
            "Free disk space or check the disk, then retry; nothing partial was committed",
            retryable=True,
        )
    return StoreError(
        path, "failed", f"the event store failed while {doing} ({exc})", "Retry; report a bug if it persists"
    )
