"""Can the sandbox start here? One real try per process and sandbox program, cached.

The probe runs the same confinement a Bash call gets (namespaces, capabilities dropped, fresh /proc and /dev) around
`cat /proc/self/status` and checks that the command has no capabilities left (`CapEff` is 0): bubblewrap run by
root keeps every capability unless it drops them, and a root shell with capabilities can remount its read-only
binds writable. Sysctls alone cannot see AppArmor or a container's seccomp profile, so nothing short of a real start
is trusted.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bearagent.sandbox.settings import SandboxSettings

PROBE_TIMEOUT_S = 10.0
SYSTEM_BWRAP = ("/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap")
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install bubblewrap`, "
    "Arch: `pacman -S bubblewrap`), or opt out with `sandbox: off` in your user config "
    "(~/.config/bearagent/config.yaml, or $BEARAGENT_HOME/config.yaml)"
)


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """What the probe found. `active` means Bash calls run confined; otherwise `reason` says why not and `fix` how
    to get there. `mode` is the configured mode (`off` is never active)."""

    active: bool
    mode: str
    backend: str | None = None
    program: str | None = None
    reason: str = ""
    fix: str = ""

    def describe(self, network: str = "deny") -> str:
        """One line for `doctor` and the run start: `bubblewrap, workspace-write, network deny` or why not."""
        if self.active:
            return f"{self.backend}, {self.mode}, network {network}"
        if self.mode == "off":
            return "off (`sandbox: off`): Bash runs unconfined"
        return f"unavailable ({self.reason}): Bash asks before every command"

    def unconfined_reason(self) -> str | None:
        """Why Bash runs unconfined, as a clause for the permission message of a call that needs approval (None
        when it runs in the sandbox)."""
        if self.active:
            return None
        if self.mode == "off":
            return "the config sets `sandbox: off`"
        return f"the shell sandbox cannot start ({self.reason}; to fix: {self.fix})"

    def warning(self) -> str | None:
        """The one message to show when Bash will not be confined although the config asks for it."""
        if self.active or self.mode == "off":
            return None
        return (
            f"warning: the Bash sandbox cannot start ({self.reason}); every Bash command needs approval "
            f"(non-interactive runs refuse them). To fix: {self.fix}"
        )


def find_bwrap(configured: str | None, env_path: str | None = None) -> str | None:
    """The bubblewrap program: the configured path (user config only), else a system location, else the first
    `bwrap` on PATH that is an absolute directory (never one relative to the current directory)."""
    if configured:
        return configured if os.access(configured, os.X_OK) and Path(configured).is_file() else None
    for candidate in SYSTEM_BWRAP:
        if os.access(candidate, os.X_OK):
            return candidate
    path = env_path if env_path is not None else os.environ.get("PATH", "")
    absolute = os.pathsep.join(p for p in path.split(os.pathsep) if p.startswith("/"))
    return shutil.which("bwrap", path=absolute) if absolute else None


def probe(settings: SandboxSettings) -> SandboxStatus:
    """The sandbox state for these settings (cached per process and program)."""
    if settings.mode == "off":
        return SandboxStatus(active=False, mode="off", reason="sandbox: off in the config")
    if not sys.platform.startswith("linux"):
        return SandboxStatus(
            active=False,
            mode=settings.mode,
            reason=f"no sandbox backend for {sys.platform} yet (BearAgent sandboxes Bash with bubblewrap on Linux)",
            fix="opt out with `sandbox: off` in your user config to run Bash unconfined without asking",
        )
    program = find_bwrap(settings.bwrap_path)
    if program is None:
        where = f"at {settings.bwrap_path}" if settings.bwrap_path else "on this machine"
        return SandboxStatus(
            active=False, mode=settings.mode, reason=f"bubblewrap (bwrap) is not installed {where}", fix=INSTALL_HINT
        )
    found = _probe_program(program)
    return SandboxStatus(
        active=found.active,
        mode=settings.mode,
        backend="bubblewrap" if found.active else None,
        program=program,
        reason=found.reason,
        fix=found.fix,
    )


@functools.lru_cache(maxsize=8)
def _probe_program(program: str) -> SandboxStatus:
    from bearagent.sandbox.bwrap import probe_argv

    try:
        done = subprocess.run(
            [*probe_argv(program), "/bin/cat", "/proc/self/status"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return SandboxStatus(active=False, mode="", reason=f"{program} could not run: {exc}", fix=INSTALL_HINT)
    if done.returncode != 0:
        first = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[0][:300]
        return SandboxStatus(
            active=False,
            mode="",
            reason=f"bubblewrap cannot create its namespaces here ({first})",
            fix=(
                "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu an "
                "AppArmor profile for bwrap), or in a container run it with --security-opt seccomp=unconfined; "
                "or opt out with `sandbox: off` in your user config"
            ),
        )
    caps = [line for line in done.stdout.decode("ascii", "replace").splitlines() if line.startswith("CapEff:")]
    if not caps or int(caps[0].split(":", 1)[1].strip() or "1", 16) != 0:
        return SandboxStatus(
            active=False,
            mode="",
            reason=f"the sandboxed command kept capabilities ({caps[0] if caps else 'no CapEff line'})",
            fix="update bubblewrap (it must support --cap-drop ALL), or opt out with `sandbox: off` in your user config",
        )
    return SandboxStatus(active=True, mode="", backend="bubblewrap", program=program)
