"""Seals: what a person answered, made tamper-evident where it is kept in an untrusted place.

A workspace's event log (`.bearagent/state.db`) is a workspace file: a cloned repository can ship one. Two things
in it would otherwise decide permissions: an approval's answer (`ApprovalResolved`, which `runs resume` and a
server's `resume_on_start` act on) and a session's "allow always" rules. Both are sealed with an HMAC-SHA256 key
that lives in the user's BearAgent directory (`seal.key`, 0600, made on first use), so a forged or copied answer
does not verify and is asked again instead of being obeyed.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path

KEY_FILE = "seal.key"
_SEP = "\x1f"


class Sealer:
    """Seals and checks answers with the user's key (read or made on first use)."""

    def __init__(self, user_dir: Path) -> None:
        self._path = user_dir / KEY_FILE
        self._key: bytes | None = None

    def _load(self) -> bytes:
        if self._key is None:
            self._key = _read_or_make(self._path)
        return self._key

    def seal(self, *parts: str) -> str:
        return hmac.new(self._load(), _SEP.join(parts).encode("utf-8"), hashlib.sha256).hexdigest()

    def verify(self, mac: str | None, *parts: str) -> bool:
        return mac is not None and hmac.compare_digest(mac, self.seal(*parts))

    def sealed_rule(self, session_id: str, rule: str) -> str:
        """A session's "allow always" entry as it is stored: `<seal> <rule>`."""
        return f"{self.seal('session-rule', session_id, rule)} {rule}"

    def rules(self, session_id: str, entries: tuple[str, ...]) -> tuple[str, ...]:
        """The rules of stored entries whose seal verifies (others were not answered by this user: dropped)."""
        out: list[str] = []
        for entry in entries:
            mac, _, rule = entry.partition(" ")
            if rule and self.verify(mac, "session-rule", session_id, rule):
                out.append(rule)
        return tuple(out)


def _read_or_make(path: Path) -> bytes:
    with contextlib.suppress(FileNotFoundError):
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # another process is making it: use theirs once written
        for _ in range(100):
            key = path.read_bytes()
            if len(key) >= 32:
                return key
            time.sleep(0.01)
        raise
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key
