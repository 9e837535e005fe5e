"""Claude Code's `statusLine` command: a shell command that draws the interactive session's status line from the JSON
Claude Code gives it on stdin (`session_id`, `transcript_path`, `cwd`, `model`, `workspace`, `version`,
`output_style`, `cost`). Its first line of output replaces BearAgent's own status line.

It comes from a workspace settings file, so it is trust surface: it runs only when the workspace is trusted (checked
when the session starts; an untrusted workspace keeps BearAgent's own line). It is bounded: 5 seconds, its first line,
200 visible characters, no terminal; a command that fails or prints nothing leaves BearAgent's own line.

Like a command hook (issue 28, item 3; `hooks/after_writes.py`), it runs in the sandbox once the session's model
may have written, or any run in the workspace since its last trust decision (`rewind/workspace_writes.py`): a
script it runs, `./statusline.py`, may now be the model's. The user's config may say `sandbox: {hooks_after_writes:
unconfined}`; when the sandbox cannot start it is not run (BearAgent's own line).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bearagent.cli.safe_text import visible
from bearagent.domain._base import JsonValue
from bearagent.rewind.workspace_writes import WritesRecord
from bearagent.rewind.written import first_write
from bearagent.sandbox.settings import SandboxSettings

STATUS_TIMEOUT_S = 5.0
MAX_STATUS_CHARS = 200


@dataclass(frozen=True, slots=True)
class StatusCommand:
    command: str
    root: Path
    env: Mapping[str, str]
    sandbox: SandboxSettings | None = None
    """The merged sandbox settings (None: the defaults)."""
    writes: WritesRecord | None = None
    """The user's durable record of runs' writes: one in this workspace since its trust decision confines it too."""

    def line(self, payload: Mapping[str, JsonValue]) -> str | None:
        """The command's first line for `payload`, made safe to print; None when it failed or printed nothing."""
        from bearagent.sandbox.launch import SandboxUnavailableError, ShellLaunch, confined_launch

        argv, env = ["/bin/sh", "-c", self.command], dict(self.env)
        sandbox = self.sandbox or SandboxSettings()
        launch: ShellLaunch | None = None
        session = payload.get("session_id")
        if sandbox.hooks_after_writes != "unconfined" and self._written(session):
            try:
                launch = confined_launch(argv, sandbox, env, self.root)
            except (SandboxUnavailableError, OSError):
                return None  # never unconfined after the model's writes
            argv, env = list(launch.argv), dict(launch.env)
        try:
            return self._run(argv, env, payload)
        finally:
            if launch is not None:
                launch.finish()

    def _written(self, session: object) -> bool:
        """Whether the model may have written here: this session (this process), or any run since the trust."""
        if first_write(self.root, session or None) is not None:
            return True
        return self.writes is not None and self.writes.since_trust(self.root) is not None

    def _run(self, argv: list[str], env: dict[str, str], payload: Mapping[str, JsonValue]) -> str | None:
        try:
            done = subprocess.run(
                argv,
                cwd=self.root,
                env=env,
                input=json.dumps(payload).encode(),
                capture_output=True,
                timeout=STATUS_TIMEOUT_S,
                start_new_session=True,
                check=False,
            )
        except (subprocess.TimeoutExpired, OSError):
            return None
        if done.returncode != 0:
            return None
        first = next((ln for ln in done.stdout.decode(errors="replace").splitlines() if ln.strip()), "")
        text = visible(first.strip())
        return text[:MAX_STATUS_CHARS] or None


def status_input(
    *,
    session_id: str | None,
    transcript_path: str,
    root: Path,
    model: str,
    output_style: str,
    cost_usd: float,
    duration_ms: int,
    version: str,
) -> dict[str, JsonValue]:
    """Claude Code's status line input (the fields BearAgent has; line counts are 0: it does not count them)."""
    return {
        "hook_event_name": "Status",
        "session_id": session_id or "",
        "transcript_path": transcript_path,
        "cwd": str(root),
        "model": {"id": model, "display_name": model},
        "workspace": {"current_dir": str(root), "project_dir": str(root)},
        "version": version,
        "output_style": {"name": output_style},
        "cost": {
            "total_cost_usd": cost_usd,
            "total_duration_ms": duration_ms,
            "total_api_duration_ms": 0,
            "total_lines_added": 0,
            "total_lines_removed": 0,
        },
    }
