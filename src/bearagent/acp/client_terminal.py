"""Bash through the editor's terminal (`bearagent acp --client-terminal`): when the user opts in and the client
offers `terminal`, Bash asks the client to run the command (`terminal/create` with `/bin/sh -c`, in the workspace
root), shows it in the call's `tool_call_update` (terminal content), waits for it (`terminal/wait_for_exit`, killed at the call's timeout), reads its output (`terminal/output`,
at most `OUTPUT_BYTE_LIMIT` bytes kept by the client) and releases it. The command runs as the editor runs it, NOT in
BearAgent's sandbox, so the gate treats Bash as unsandboxed (`unsandboxed`): permission mode `default` asks before
each command that no rule allows. A cancelled call kills and releases its terminal. `run_in_background` is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from bearagent.domain._base import JsonMapping, JsonValue
from bearagent.domain.tools import ToolResult
from bearagent.ports import ToolContext
from bearagent.tools.base import int_arg, str_arg, tool_error
from bearagent.tools.bash import DEFAULT_TIMEOUT_MS, MAX_STREAM_CHARS, BashTool

OUTPUT_BYTE_LIMIT = 4 * MAX_STREAM_CHARS
"""What the client is asked to keep of a command's output (it drops the beginning past it)."""
CLIENT_STEP_TIMEOUT_S = 30.0
"""How long one request to the client (create, output, kill, release) may take."""
UNSANDBOXED_REASON = "Bash runs in the editor's terminal (bearagent acp --client-terminal), outside the sandbox"


@dataclass(frozen=True, slots=True)
class Exit:
    output: str
    truncated: bool
    exit_code: int | None
    signal: str | None


class Terminals:
    """The four client requests a command needs, bound to one connection (`agent.py` supplies them)."""

    def __init__(
        self,
        create: Callable[[str, str, list[str], str, int], Awaitable[str]],
        wait: Callable[[str, str], Awaitable[tuple[int | None, str | None]]],
        output: Callable[[str, str], Awaitable[tuple[str, bool]]],
        kill: Callable[[str, str], Awaitable[None]],
        release: Callable[[str, str], Awaitable[None]],
        show: Callable[[str, str, str], None] = lambda _session, _call, _terminal: None,
    ) -> None:
        self.create, self.wait, self.output, self.kill, self.release = create, wait, output, kill, release
        self.show = show
        """(session id, tool call id, terminal id): the call's `tool_call_update` embeds the terminal, so the
        editor shows the command's output live (and keeps showing it after the release)."""


class ClientBash(BashTool):
    """Bash, run by the ACP client (see the module docstring)."""

    unsandboxed = UNSANDBOXED_REASON
    """Read by the planner: the gate treats this Bash as a command outside the sandbox."""

    def __init__(self, terminals: Terminals) -> None:
        super().__init__()
        self._terminals = terminals

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        if arguments.get("run_in_background") is True:
            raise tool_error(
                "validation",
                "background_in_client_terminal",
                "run_in_background is not available while Bash runs in the editor's terminal; run the command in "
                "the foreground with a `timeout`.",
            )
        return super().normalise(arguments, context)

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        if context.session_id is None:
            raise tool_error("tool", "no_session", "Bash through the editor's terminal needs an ACP session.")
        session = str(context.session_id)
        command = str_arg(arguments, "command")
        timeout_ms = int_arg(arguments, "timeout", DEFAULT_TIMEOUT_MS)
        t = self._terminals
        try:
            terminal = await asyncio.wait_for(
                t.create(session, "/bin/sh", ["-c", command], str(context.workspace_root), OUTPUT_BYTE_LIMIT),
                CLIENT_STEP_TIMEOUT_S,
            )
        except Exception as exc:
            raise tool_error(
                "tool", "client_terminal", f"The editor did not start the command: {type(exc).__name__}: {exc}"[:800]
            ) from None
        timed_out = False
        if context.tool_call_id is not None:
            t.show(session, str(context.tool_call_id), terminal)
        try:
            try:
                code, signal = await asyncio.wait_for(t.wait(session, terminal), timeout_ms / 1000)
            except TimeoutError:
                timed_out = True
                code, signal = None, None
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(t.kill(session, terminal), CLIENT_STEP_TIMEOUT_S)
            output, cut = await asyncio.wait_for(t.output(session, terminal), CLIENT_STEP_TIMEOUT_S)
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await asyncio.shield(asyncio.wait_for(t.kill(session, terminal), 5))
            raise
        except Exception as exc:
            raise tool_error(
                "tool", "client_terminal", f"The editor's terminal failed: {type(exc).__name__}: {exc}"[:800]
            ) from None
        finally:
            with contextlib.suppress(BaseException):
                await asyncio.shield(asyncio.wait_for(t.release(session, terminal), 5))
        return self._result(context, Exit(output, cut, code, signal), timeout_ms, timed_out)

    def _result(self, context: ToolContext, done: Exit, timeout_ms: int, timed_out: bool) -> ToolResult:
        text = done.output
        truncated = done.truncated
        if len(text) > 2 * MAX_STREAM_CHARS:
            text, truncated = "…" + text[-2 * MAX_STREAM_CHARS :], True
        parts = [text.rstrip("\n")] if text.strip() else []
        if timed_out:
            parts.append(f"[Command timed out after {timeout_ms} ms; the editor killed it.]")
        elif done.signal:
            parts.append(f"[Killed by signal {done.signal}]")
        elif done.exit_code not in (0, None):
            parts.append(f"[Exit code {done.exit_code}]")
        content = "\n".join(parts) or "(no output)"
        code = done.exit_code if done.exit_code is not None else -1
        data = {"stdout": text, "stderr": "", "exit_code": code, "interrupted": timed_out, "terminal": "client"}
        if timed_out:
            error = tool_error("timeout", "command_timeout", f"Command timed out after {timeout_ms} ms.").info
            return self.failed(context, error, data).model_copy(update={"content": content, "truncated": truncated})
        if code != 0:
            error = tool_error("tool", "nonzero_exit", f"Command exited with code {code}.", exit_code=code).info
            return self.failed(context, error, data).model_copy(update={"content": content, "truncated": truncated})
        return self.ok(context, content, data, truncated=truncated)
