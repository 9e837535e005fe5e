"""Claude Code's `apiKeyHelper`: a shell command whose output is the Anthropic API key, run when an `anthropic` model
entry has no key in its variable, and cached for a while (`CLAUDE_CODE_API_KEY_HELPER_TTL_MS`, default 5 minutes).

The command comes from a workspace settings file, so it is trust surface (`trust/widening.py`): it only ever runs in
a run of a trusted workspace, never at load time, nor for `doctor` or a listing. Its output is a secret: it is never
logged, and a failure names the command, its exit status and the first line of its stderr, never its stdout.

What it runs in the workspace (`./key.sh`, a file it sources, a module it imports: `trust.reach`) is pinned at its
first run in the process (just after the trust check) and compared before each later run: the model may rewrite
those files during a session, and the helper runs with the user's rights, its output sent as the key. After a
change it is not run (issue 28, items 3 and 6); a new process asks for trust again, as the trust item fingerprints
the same files.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.domain.errors import BearAgentError, ErrorInfo

if TYPE_CHECKING:
    from bearagent.trust.reach import CodePins

TTL_VARIABLE = "CLAUDE_CODE_API_KEY_HELPER_TTL_MS"
DEFAULT_TTL_MS = 300_000
HELPER_TIMEOUT_S = 30.0
MAX_KEY_CHARS = 4_096

_cache: dict[tuple[str, str], tuple[str, float]] = {}
_pins: dict[tuple[str, str], CodePins] = {}
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class KeyHelper:
    command: str
    source: str
    """The settings file that names it (for error messages)."""

    def ttl_s(self, env: Mapping[str, str]) -> float:
        raw = env.get(TTL_VARIABLE, "").strip()
        if raw.isdigit():
            return int(raw) / 1000.0
        return DEFAULT_TTL_MS / 1000.0

    def key(self, cwd: Path, env: Mapping[str, str]) -> str:
        """The key: the cached one while it is fresh, else the command's output now."""
        slot = (self.command, str(cwd))
        now = time.monotonic()
        with _lock:
            cached = _cache.get(slot)
            if cached is not None and cached[1] > now:
                return cached[0]
            self._check_code(slot, cwd, env)
            value = self._run(cwd, env)
            _cache[slot] = (value, now + self.ttl_s(env))
            return value

    def _check_code(self, slot: tuple[str, str], cwd: Path, env: Mapping[str, str]) -> None:
        """Pin what the command reaches in the workspace at its first run; refuse a later run after a change."""
        from bearagent.trust.collector import split_command
        from bearagent.trust.reach import CodePins

        words = split_command(self.command)
        pins = _pins.get(slot)
        if pins is None:
            pins = _pins[slot] = CodePins(cwd, dict(env))
            pins.pin(words)
            return
        changed = pins.changed(words)
        if changed is not None:
            raise BearAgentError(
                ErrorInfo.of(
                    "configuration",
                    "api_key_helper_code_changed",
                    f"apiKeyHelper {self.command!r} ({self.source}) was not run: {changed} (which it runs or "
                    "reaches) changed since its first run in this process, perhaps written by the model, and it "
                    "runs with your rights and its output is sent as your key",
                ),
                hint="review the change, then start BearAgent again (the workspace asks for trust again); or point "
                "apiKeyHelper at a command outside the workspace",
            )

    def _fail(self, what: str) -> BearAgentError:
        return BearAgentError(
            ErrorInfo.of(
                "configuration",
                "api_key_helper_failed",
                f"apiKeyHelper {self.command!r} ({self.source}) {what}, so there is no Anthropic API key",
            ),
            hint="run the command yourself to see why; it must print the key on its first line and exit 0",
        )

    def _run(self, cwd: Path, env: Mapping[str, str]) -> str:
        try:
            done = subprocess.run(
                ["/bin/sh", "-c", self.command],
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=HELPER_TIMEOUT_S,
                start_new_session=True,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise self._fail(f"did not finish within {HELPER_TIMEOUT_S:g} s") from None
        except OSError as exc:
            raise self._fail(f"could not start ({exc.strerror})") from None
        if done.returncode != 0:
            first = next((ln.strip() for ln in done.stderr.decode(errors="replace").splitlines() if ln.strip()), "")
            raise self._fail(f"exited with status {done.returncode}" + (f": {first[:300]}" if first else ""))
        lines = [ln.strip() for ln in done.stdout.decode(errors="replace").splitlines() if ln.strip()]
        value = lines[0] if lines else ""
        if not value:
            raise self._fail("printed nothing")
        if len(value) > MAX_KEY_CHARS or not value.isprintable():
            raise self._fail("printed something that is not a key (too long, or not printable)")
        return value


def forget_cached_keys() -> None:
    """Drop every cached key (tests; a 401 could call it)."""
    with _lock:
        _cache.clear()
        _pins.clear()
