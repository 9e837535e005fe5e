"""Stdio MCP servers and the model's writes: what each server runs or reaches in the workspace is pinned when the
connection manager is made (the run's start), and compared before each start or restart and before each call to a running server (`trust.reach.CodePins`,
the same rule as command hooks: docs/security.md, "Hooks and the model's writes").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.domain.specs import McpServerSpec
from bearagent.mcp.errors import McpFailure

if TYPE_CHECKING:
    from bearagent.sandbox.settings import SandboxSettings
    from bearagent.trust.reach import CodePins


def _words(spec: McpServerSpec, root: Path) -> tuple[list[str], Path | None]:
    cwd = Path(spec.cwd) if spec.cwd else None
    if cwd is not None and not cwd.is_absolute():
        cwd = root / cwd
    return [spec.command or "", *spec.args], cwd


def pin_servers(
    specs: Sequence[McpServerSpec], root: Path, env: Mapping[str, str], sandbox: SandboxSettings | None
) -> CodePins | None:
    """What each stdio server reaches now, unless the user's `sandbox.pin_hook_code: false` turns this off."""
    stdio = [spec for spec in specs if spec.transport == "stdio" and spec.command]
    if not stdio or (sandbox is not None and not sandbox.pin_hook_code):
        return None
    from bearagent.trust.reach import CodePins

    pins = CodePins(root, env)
    for spec in stdio:
        pins.pin(*_words(spec, root))
    return pins


def server_code_changed(
    pins: CodePins | None, spec: McpServerSpec, root: Path, *, running: bool = False
) -> McpFailure | None:
    """The failure when a workspace file the server runs or reaches changed since the run started (starting it, or
    calling the `running` one, which may run that file per call or import it late, would run the model's code);
    None when it may start or be called."""
    if pins is None or spec.transport != "stdio":
        return None
    changed = pins.changed(*_words(spec, root))
    if changed is None:
        return None
    return McpFailure(
        "code_changed",
        f"MCP server {spec.name!r} was {'stopped and the call refused' if running else 'not started'}: {changed} "
        "(which it runs or reaches) changed during the run, "
        "perhaps written by the model.",
        "review the change, then start a new run (a workspace server asks for trust again); or set "
        "`sandbox: {pin_hook_code: false}` in your user config",
    )
