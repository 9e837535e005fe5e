"""The status line's background part (issue 33): the MCP servers' state and the running background shells."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from bearagent.cli.session_commands import activity
from bearagent.mcp.slot import McpServerStatus
from bearagent.tools.background import end_session_shells, start_shell

if TYPE_CHECKING:
    from bearagent.mcp.manager import ServerState
    from bearagent.service.runner import WorkspaceRuntime


def _status(name: str, state: ServerState) -> McpServerStatus:
    return McpServerStatus(name, "stdio", state, 1, None, None, 1, 0, "config.yaml", None)


@dataclass
class _Resources:
    states: list[McpServerStatus] | None = None

    def mcp_status(self) -> list[McpServerStatus] | None:
        return self.states


@dataclass
class _Runtime:
    resources: _Resources = field(default_factory=_Resources)


def _activity(states: list[McpServerStatus] | None, session: str | None = None) -> tuple[str, ...]:
    return activity(cast("WorkspaceRuntime", _Runtime(_Resources(states))), session)


def test_mcp_servers_are_shown_once_started_and_failed_ones_are_named() -> None:
    assert _activity(None) == ()  # not started yet
    assert _activity([]) == ()
    assert _activity([_status("a", "ready"), _status("b", "ready")]) == ("mcp 2 ready",)
    assert _activity([_status("a", "ready"), _status("deploy", "failed")]) == ("mcp 1/2 ready, deploy failed",)
    many = [_status("a", "failed"), _status("b", "failed"), _status("c", "failed"), _status("d", "connecting")]
    assert _activity(many) == ("mcp 0/4 ready, a, b +1 failed",)


def test_running_background_shells_of_the_session_only_are_counted(tmp_path: Path) -> None:
    session = "session-activity-test"
    try:
        start_shell("sleep 30", {}, tmp_path, session)
        start_shell("sleep 30", {}, tmp_path, "another-session")
        assert _activity(None, session) == ("1 shell",)
        start_shell("sleep 30", {}, tmp_path, session)
        assert _activity(None, session) == ("2 shells",)
    finally:
        end_session_shells(session)
        end_session_shells("another-session")
    assert _activity(None, session) == ()
