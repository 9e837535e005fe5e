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


# What a raw sqlite3 error means, by the words in its message (the first match wins): (words, specific code, what
# happened: a template of {exc} and {doing}, the fix, retryable).
_SQLITE_FAILURES: tuple[tuple[tuple[str, ...], str, str, str, bool], ...] = (
    (
        ("locked", "busy"),
        "busy",
        "the event store was locked by another writer for too long while {doing}",
        "Retry; if it persists, stop the other bearagent process using this workspace",
        True,
    ),
    (
        ("readonly", "read-only", "unable to open", "permission"),
        "read_only",
        "cannot write the event store while {doing} (the file or its directory is read-only or missing)",
        "Make the directory and the file writable (the store also creates -wal and -shm files next to it), "
        "or point BearAgent at a writable workspace",
        False,
    ),
    (
        ("not a database", "encrypted"),
        "not_a_database",
        "the event store file is not an SQLite database ({exc}) while {doing}",
        "Check the path; if the file is yours, move it aside and BearAgent starts a new, empty store there; "
        "`bearagent db check` checks the file",
        False,
    ),
    (
        ("malformed", "corrupt", "could not decode", "unsupported file format", "no such table", "no such column"),
        "corrupt",
        "the event store file is damaged ({exc}) while {doing}",
        "Move the file aside (BearAgent then starts a new, empty store) or restore it from a backup; "
        "`sqlite3 FILE .recover` may salvage the events; `bearagent db check` checks the file",
        False,
    ),
    (
        ("disk is full", "disk i/o"),
        "io",
        "the disk failed or is full while {doing} ({exc})",
        "Free disk space or check the disk, then retry; nothing partial was committed",
        True,
    ),
)


def translate_sqlite_error(path: Path | str, exc: sqlite3.Error, doing: str) -> StoreError:
    """Turn a raw sqlite3 error into a `StoreError` that says what happened to which file and what to do."""
    text = str(exc).lower()
    said = str(exc)
    said = said if len(said) <= 200 else said[:200] + "…"  # a damaged row's bytes can follow the words
    for words, specific, what, fix, retryable in _SQLITE_FAILURES:
        if any(word in text for word in words):
            return StoreError(path, specific, what.format(exc=said, doing=doing), fix, retryable=retryable)
    return StoreError(
        path, "failed", f"the event store failed while {doing} ({exc})", "Retry; report a bug if it persists"
    )
