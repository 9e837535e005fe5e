"""The shell sandbox: a port, its Linux backend (bubblewrap), the environment policy, and the probe.

Modules:
- `settings`: the `sandbox:` / `shell_env:` config sections (parse one file, merge, `loosening`);
- `env`: the environment policy for Bash (`build_shell_env`);
- `request`: one call's confinement resolved from settings and environment (hidden paths), and its round trip
  through `ToolContext.settings` (`tool_settings`);
- `probe`: can the sandbox start here (`probe`, cached per process), and the message when it cannot;
- `proxy`: the host-side HTTP proxy for `network: [hosts]` (and `_forward.py`, its relay inside the sandbox);
- `git_paths`: what git reads as configuration or runs inside a writable tree (read-only in the sandbox, refused
  by the file tools); `sockets`: the host's Unix sockets the sandbox covers; `limits` and `_limits.py`: the per-call
  process and memory limits and the supervisor that applies them; `problems`: a bad config field;
- `bwrap`: the bubblewrap backend; `launch`: how the Bash tool starts a command (sandboxed, or under `_reaper.py`,
  which kills every leftover process when the sandbox is off), and `confined_launch` for the opted-in command
  hooks and stdio MCP servers (`sandbox: {hooks: true, mcp: true}`; never unconfined).

Another backend (Landlock, macOS Seatbelt) implements `SandboxBackend` and is chosen in `launch.shell_launch` from
what `probe` found. Nothing here imports the runtime; the runner passes `tool_settings(...)` to the tools and
`probe(...).active` to the tool policy (`shell_sandboxed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bearagent.sandbox.bwrap import PreparedCommand
    from bearagent.sandbox.request import SandboxRequest


class SandboxBackend(Protocol):
    """One way to confine a command. `prepare` returns the argv that runs `argv` confined per `request` in `root`,
    the variables it sets, and a `finish()` to call when the command is over."""

    name: str

    def prepare(self, argv: Sequence[str], request: SandboxRequest, root: Path) -> PreparedCommand: ...


__all__ = ["SandboxBackend"]
