"""Bash starts a sandboxed command again when bubblewrap refused to start because a path it was to cover had just
vanished (a host socket another program removed between the mount plan and the start): the command never ran."""

from __future__ import annotations

from pathlib import Path

from bearagent.domain.ids import ToolCallId
from bearagent.domain.tools import ToolResult
from bearagent.tools.bash import _vanished_mount_point  # pyright: ignore[reportPrivateUsage]


def result(stderr: str, exit_code: int) -> ToolResult:
    return ToolResult(
        tool_call_id=ToolCallId.new(),
        tool_name="Bash",
        status="succeeded",  # as Bash reports a command that ran and exited non-zero
        content=stderr,
        data={"stdout": "", "stderr": stderr, "exit_code": exit_code, "interrupted": False},
    )


def test_only_a_mount_point_that_is_gone_counts(tmp_path: Path) -> None:
    gone = tmp_path / "home" / ".gnupg" / "agent.sock"
    message = f"bwrap: Can't mkdir parents for {gone}: Read-only file system\n"
    assert _vanished_mount_point(result(message, 1))
    gone.parent.mkdir(parents=True)
    gone.write_text("")
    assert not _vanished_mount_point(result(message, 1)), "it exists: a real refusal, never retried"
    assert not _vanished_mount_point(result(message, 2)), "another exit code: the command's own"
    assert not _vanished_mount_point(result("bwrap: setting up uid map: Permission denied\n", 1))
    assert not _vanished_mount_point(result(f"echo {message}", 1)), "the command's own output does not start so"
