"""A workspace's stdio MCP server once runs may have written in the workspace (issue 28, item 3 for servers).

A stdio server of a trusted workspace (`.mcp.json`, the workspace's `mcp_servers:`) runs workspace code. The pins
(`mcp/code_pins.py`) refuse it when the code it names changed, but cannot follow what it loads from data (a module
named in a JSON file, a script it evals). So when any run may have written in the workspace since its last trust
decision, in this process or an earlier one (`rewind/workspace_writes.py`), the server starts in the sandbox; one
already running unconfined is stopped and started again confined before its next call (it loses its state). When the
sandbox cannot start, it is not run: never unconfined. A server of the user's own config is the user's (`sandbox:
{mcp: true}` confines every stdio server from the start); the opt-out is the user's `sandbox: {hooks_after_writes:
unconfined}`.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.domain.specs import McpServerSpec

if TYPE_CHECKING:
    from bearagent.rewind.workspace_writes import RecordedWrite, WritesRecord
    from bearagent.sandbox.settings import SandboxSettings


def workspace_server(spec: McpServerSpec, root: Path) -> bool:
    """Whether the server is configured by a file inside the workspace (its code is the workspace's to choose)."""
    source = spec.source.strip()
    if not source.startswith("/"):
        return False
    workspace = os.path.realpath(root)
    where = os.path.realpath(source)
    return where == workspace or where.startswith(workspace.rstrip("/") + "/")


def written_before(
    spec: McpServerSpec, root: Path, sandbox: SandboxSettings | None, writes: WritesRecord | None
) -> RecordedWrite | None:
    """The write that makes this server run confined; None: it runs as configured."""
    if writes is None or spec.transport != "stdio" or not workspace_server(spec, root):
        return None
    if sandbox is not None and (sandbox.mcp or sandbox.hooks_after_writes == "unconfined"):
        return None  # confined anyway, or the user's opt-out
    return writes.since_trust(root)


def why_confined(server: str, root: Path, written: RecordedWrite) -> tuple[str, str]:
    """The reason and the fix to name when the sandbox cannot start for such a server."""
    reason = (
        f"MCP server {server!r} was not run: {written.describe()} may have written files it runs or loads, so it runs "
        "in the sandbox until you trust the workspace again"
    )
    fix = (
        "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`), or review what the runs changed and run "
        f"`bearagent trust -w {shlex.quote(os.path.realpath(root))}`, or set `sandbox: {{hooks_after_writes: "
        "unconfined}` in your user config"
    )
    return reason, fix
