"""The one way BearAgent runs `git` itself (not the model's Bash): hardened, bounded, never a prompt.

A workspace is untrusted (a cloned or unpacked repository), and so is its `.git/config`: git runs programs that
config names (`core.fsmonitor` on any status, `filter.*.clean` when it compares a file, `core.pager`, `gpg.program`
when a log shows signatures, hooks, `diff.external`, `core.sshCommand`, credential helpers...). So every call here:

- runs `git --no-pager` with `-c` overrides that switch those off (`core.fsmonitor=false`, `core.hooksPath` to an
  empty place, `core.pager=cat`, `log.showSignature=false`, `diff.external=`, `core.untrackedCache=false`) and
  with `protocol.allow=never`: only `network=True` (a clone the user asked for) allows https, http, ssh, git and
  file URLs, never `ext::` (which runs a command);
- first reads the repository's own config keys (`git config --local --includes --name-only --list`, which runs
  nothing) and refuses to go on when one names a program git could run that no override switches off
  (`LOCAL_HAZARDS`: a filter driver, a textconv, a merge driver...), with the key in the reason;
- has an environment without the variables that would point git at another repository (`GIT_DIR`,
  `GIT_WORK_TREE`, `GIT_INDEX_FILE`...), with `GIT_CONFIG_NOSYSTEM=1` (the machine-wide config is not read),
  `GIT_TERMINAL_PROMPT=0` (no credential prompt), `GIT_OPTIONAL_LOCKS=0` (a status writes no index lock) and
  pagers set to `cat`; the user's own global config (`~/.gitconfig`) stays, as git's users expect;
- never sets `safe.directory`: a repository owned by another user is refused by git itself ("dubious
  ownership"), and the result says so (`GitResult.reason`);
- stops at `timeout_s` (the process group is killed) and reads at most `max_bytes` of output (`truncated`).

`git_run` never raises for git's own failures: the result carries the exit code and a one-line reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MAX_BYTES = 1 << 20
MAX_STDERR_BYTES = 4_096

HARDENING: tuple[str, ...] = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    f"core.hooksPath={os.devnull}",
    "-c",
    "core.pager=cat",
    "-c",
    "log.showSignature=false",
    "-c",
    "diff.external=",
    "-c",
    "protocol.allow=never",
)
NETWORK_PROTOCOLS: tuple[str, ...] = ("https", "http", "ssh", "git", "file")
"""What a clone the user asked for may use; `ext` (a command as transport) stays refused."""

DROPPED_ENV: frozenset[str] = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_EXTERNAL_DIFF",
        "GIT_EXEC_PATH",
    }
)
"""Variables that would make git read another repository (one inherited from a git hook BearAgent runs in)."""

LOCAL_HAZARDS = re.compile(
    r"^(filter\..+\.(clean|smudge|process)"
    r"|diff\..+\.(command|textconv)"
    r"|merge\..+\.driver"
    r"|core\.editor"
    r"|gpg(\..+)?\.program"
    r"|uploadpack\.packobjectshook"
    r"|sequence\.editor"
    r"|interactive\.difffilter)$",
    re.IGNORECASE,
)
"""Keys of a repository's own config that name a program a local git command could run and that `HARDENING` does not
switch off. Network-only keys (`core.sshCommand`, credential helpers, ...) are not among them: a local call has
`protocol.allow=never`, and a clone (`network=True`) reads no repository's config before it exists."""


@dataclass(frozen=True, slots=True)
class GitResult:
    returncode: int
    stdout: bytes = b""
    truncated: bool = False
    """The output reached `max_bytes`: `stdout` is cut there (its last record may be partial)."""
    reason: str | None = None
    """Why the call failed, in one line (None when it exited 0)."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.reason is None

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a hardened git call, from `base` (default: this process's)."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in DROPPED_ENV}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_PAGER="cat",
        PAGER="cat",
    )
    return env


def git_command(args: Sequence[str], *, network: bool = False, git: str = "git") -> list[str]:
    """The argument vector of a hardened call of `git args...`."""
    allowed: list[str] = []
    if network:
        for proto in NETWORK_PROTOCOLS:
            allowed += ["-c", f"protocol.{proto}.allow=always"]
    return [git, "--no-pager", *HARDENING, *allowed, *args]


def git_run(
    args: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
    network: bool = False,
    check_local_config: bool = True,
) -> GitResult:
    """Run `git args...` in `cwd`, hardened and bounded (see the module docstring). `check_local_config=False`
    only where no repository is read yet (a clone into a new folder)."""
    git = shutil.which("git")
    if git is None:
        return GitResult(127, reason="git is not installed (not found on PATH)")
    if check_local_config:
        hazard = _local_hazard(git, cwd, timeout_s)
        if hazard is not None:
            return GitResult(
                1,
                reason=f"not run: the repository's own git config sets {hazard!r}, a program git could run",
            )
    return _bounded(git_command(args, network=network, git=git), cwd, timeout_s, max_bytes)


def _local_hazard(git: str, cwd: Path, timeout_s: float) -> str | None:
    listed = _bounded(
        git_command(["config", "--local", "--includes", "--name-only", "--list", "-z"], git=git),
        cwd,
        timeout_s,
        DEFAULT_MAX_BYTES,
    )
    if listed.truncated:
        return "(a local config too large to check)"
    for name in listed.stdout.split(b"\0"):
        key = name.decode("utf-8", "replace").strip()
        if key and LOCAL_HAZARDS.match(key):
            return key[:200]
    return None


def _bounded(argv: list[str], cwd: Path, timeout_s: float, max_bytes: int) -> GitResult:
    timed_out = threading.Event()
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=git_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
                start_new_session=True,  # its whole group is killed on a timeout or a cut
            )
        except OSError as exc:
            return GitResult(126, reason=f"git could not start in {cwd}: {exc.strerror or exc}")

        def kill() -> None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)

        def expire() -> None:
            timed_out.set()
            kill()

        timer = threading.Timer(timeout_s, expire)
        timer.start()
        try:
            assert proc.stdout is not None
            out = proc.stdout.read(max_bytes + 1)
            truncated = len(out) > max_bytes
            if truncated:
                kill()
                out = out[:max_bytes]
            proc.stdout.close()
            code = proc.wait()
        finally:
            timer.cancel()
        errors.seek(0, os.SEEK_END)
        size = errors.tell()
        errors.seek(max(0, size - MAX_STDERR_BYTES))
        stderr = errors.read().decode("utf-8", "replace")
    if timed_out.is_set():
        return GitResult(124, out, truncated, f"git {_verb(argv)} took longer than {timeout_s:g}s and was stopped")
    if truncated:
        return GitResult(0, out, True)
    if code != 0:
        return GitResult(code, out, False, _reason(argv, code, stderr))
    return GitResult(0, out, False)


def _verb(argv: list[str]) -> str:
    for i, arg in enumerate(argv[1:], start=1):
        if not arg.startswith("-") and argv[i - 1] != "-c":
            return arg
    return "?"


def _reason(argv: list[str], code: int, stderr: str) -> str:
    if "dubious ownership" in stderr:
        return (
            "git refuses the repository: it is owned by another user (git's safe.directory check); BearAgent "
            "does not override it"
        )
    if "not a git repository" in stderr:
        return "not a git repository"
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    last = lines[-1][:300] if lines else f"exit {code}"
    return f"git {_verb(argv)} failed: {last}"
