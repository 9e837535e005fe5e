"""How one Bash command is started: inside the sandbox when it is on and can start, otherwise under the reaper.

Both ways leave no survivor. In the sandbox the PID namespace ends with the shell and `--die-with-parent` ends it
with BearAgent. Unconfined (`sandbox: off`, or a call the user approved because the sandbox could not start), the
shell runs under `_reaper.py`, a child subreaper that kills whatever the command left behind (including `setsid`
daemons) when the shell exits, when it is told to stop, or when BearAgent dies. Outside Linux, only the process
group is killed.

`confined_launch` is the same confinement for the opted-in commands (`sandbox.hooks` for command hooks,
`sandbox.mcp` for stdio MCP servers) with the caller's environment; it raises `SandboxUnavailableError` instead of
falling back, so an opted-in command never runs unconfined.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from bearagent.sandbox.bwrap import BwrapBackend, PreparedCommand
from bearagent.sandbox.cgroups import ProcessLimitUnenforceableError
from bearagent.sandbox.env import build_shell_env
from bearagent.sandbox.probe import SandboxStatus, probe
from bearagent.sandbox.request import SANDBOX_SETTING, SHELL_ENV_SETTING, SandboxRequest, build_request
from bearagent.sandbox.settings import SandboxSettings, ShellEnvPolicy

REAPER = str(Path(__file__).with_name("_reaper.py"))


@dataclass(frozen=True, slots=True)
class ShellLaunch:
    """What to spawn. `graceful_stop`: stop it with SIGTERM to the process itself first (the reaper then kills the
    tree and exits), a SIGKILL only after that; otherwise SIGKILL of the process group is enough."""

    argv: tuple[str, ...]
    env: dict[str, str]
    status: SandboxStatus
    graceful_stop: bool = False
    prepared: PreparedCommand | None = None

    @property
    def sandboxed(self) -> bool:
        return self.prepared is not None

    def notes(self) -> list[str]:
        """What the kernel's ceilings stopped in the call (`cgroups.py`); read before `finish`."""
        return self.prepared.notes() if self.prepared is not None else []

    def finish(self) -> list[str]:
        """The call is over; the notes for its result (a repository it planted, disarmed: `git_plants`)."""
        return self.prepared.finish() if self.prepared is not None else []


def shell_environment(settings: Mapping[str, object]) -> dict[str, str]:
    """The environment the runner resolved for Bash, or (a tool called without a runner) the default policy applied
    to BearAgent's own environment."""
    given = settings.get(SHELL_ENV_SETTING)
    if isinstance(given, Mapping):
        return {str(k): str(v) for k, v in cast(Mapping[object, object], given).items()}
    return build_shell_env(os.environ, ShellEnvPolicy())


PRIVATE_CACHE = "/tmp/.cache"
CACHE_VARS: tuple[str, ...] = ("XDG_CACHE_HOME", "UV_CACHE_DIR", "GOCACHE")
"""Cache locations that must be writable for the tool to run at all (uv and go take a lock in their cache). In the
sandbox the home's caches are read-only, so these point into the private /tmp unless they already point somewhere
writable: `uv run` of a synced project then works offline, and nothing the command caches outlives the call (a
poisoned cache entry cannot reach a later unconfined run)."""


def _private_caches(env: dict[str, str], root: Path, mode: str) -> None:
    writable = [Path("/tmp")] + ([Path(os.path.realpath(root))] if mode == "workspace-write" else [])
    for name in CACHE_VARS:
        value = env.get(name)
        if value is None and name != "XDG_CACHE_HOME":
            continue  # unset: the tool falls back to $XDG_CACHE_HOME/<tool>
        path = Path(os.path.normpath(value)) if value else None
        if path is None or not any(path == w or w in path.parents for w in writable):
            sub = {"XDG_CACHE_HOME": "", "UV_CACHE_DIR": "uv", "GOCACHE": "go-build"}[name]
            env[name] = f"{PRIVATE_CACHE}/{sub}".rstrip("/")


def shell_launch(shell_argv: Sequence[str], settings: Mapping[str, object], root: Path) -> ShellLaunch:
    request = SandboxRequest.from_json(settings.get(SANDBOX_SETTING))
    env = shell_environment(settings)
    status = probe(request.settings())
    if status.active and status.program is not None:
        try:
            prepared = BwrapBackend(status.program).prepare(shell_argv, request, root)
        except ProcessLimitUnenforceableError as exc:
            from bearagent.tools.base import tool_error

            raise tool_error("configuration", "sandbox_limits_unenforceable", str(exc)) from None
        env.update(prepared.env)
        _private_caches(env, root, request.mode)
        return ShellLaunch(argv=prepared.argv, env=env, status=status, prepared=prepared)
    if sys.platform.startswith("linux"):
        argv = (sys.executable, "-I", "-S", REAPER, str(os.getpid()), *shell_argv)
        return ShellLaunch(argv=argv, env=env, status=status, graceful_stop=True)
    return ShellLaunch(argv=tuple(shell_argv), env=env, status=status)


# ---- opted-in commands: command hooks (`sandbox.hooks`) and stdio MCP servers (`sandbox.mcp`) -----------------


class SandboxUnavailableError(Exception):
    """An opted-in command cannot be confined here; it must not run at all. `status` says why."""

    def __init__(self, status: SandboxStatus) -> None:
        super().__init__(status.reason)
        self.status = status


def opt_in_settings(settings: SandboxSettings) -> SandboxSettings:
    """The settings an opted-in hook or MCP server runs under: the merged ones, except that `mode: off` (which turns
    off Bash's sandbox) becomes `workspace-write`: the opt-in asks for confinement, so it never means none."""
    return settings.model_copy(update={"mode": "workspace-write"}) if settings.mode == "off" else settings


def confined_launch(
    argv: Sequence[str],
    settings: SandboxSettings,
    env: Mapping[str, str],
    root: Path,
    *,
    cwd: Path | None = None,
    readable: Sequence[str] = (),
) -> ShellLaunch:
    """Run `argv` in the same confinement as a Bash call in `root` (mode, network, hidden paths from `settings`),
    but with the caller's environment `env` as is plus the sandbox's own variables (TMPDIR, BEARAGENT_SANDBOX, the
    private caches): hooks and MCP servers are trusted code, the opt-in is about files and network. `cwd` is where
    the command starts (default `root`); `readable` are files that stay readable in a hidden home (a user's hook
    script). Raises `SandboxUnavailableError` when the sandbox cannot start: an opted-in command never runs
    unconfined. The caller calls `finish()` once the command is over."""
    settings = opt_in_settings(settings)
    status = probe(settings)
    if not status.active or status.program is None:
        raise SandboxUnavailableError(status)
    request = build_request(settings, env)
    if readable:
        request = dataclasses.replace(request, readable=tuple(dict.fromkeys((*request.readable, *readable))))
    try:
        prepared = BwrapBackend(status.program).prepare(argv, request, root, cwd=cwd)
    except ProcessLimitUnenforceableError as exc:
        raise SandboxUnavailableError(dataclasses.replace(status, active=False, reason=str(exc))) from None
    out = dict(env)
    out.update(prepared.env)
    _private_caches(out, root, request.mode)
    return ShellLaunch(argv=prepared.argv, env=out, status=status, prepared=prepared)


def unavailable_message(what: str, flag: str, status: SandboxStatus) -> str:
    """The failure text for an opted-in `what` that did not run because the sandbox cannot start."""
    return (
        f"{what} was not run: `sandbox.{flag}: true` asks for it to run in the sandbox, and the sandbox cannot "
        f"start ({status.reason}). To fix: install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`), or "
        f"set `sandbox: {{{flag}: false}}` in your user config to run it unconfined"
    )
