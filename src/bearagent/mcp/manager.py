"""`McpConnectionManager`: every configured MCP server of a session, connected in parallel and kept usable.

- `start_all()` connects every server concurrently, each bounded by its `startup_timeout_s`. A server that fails is
  `failed` with one unwrapped message (`status()`, `unavailable_summary()`); the session goes on without its tools.
- `tools()` is the current list of `McpTool`s (ready servers only); call it before each model call, so a server
  that comes up later (`retry_failed()` or the background retry) adds its tools.
- A call on a server that died returns a failed `ToolResult` (category `mcp`); the next call reconnects (restarting
  a stdio server), with bounded attempts and exponential backoff.
- `aclose()` closes every session; the SDK closes a stdio server's stdin, then SIGTERMs and SIGKILLs its process
  group (every wait bounded). A server whose owner is SIGKILLed sees its stdin close and exits on its own.
- With `sandbox.mcp: true` a stdio server's command runs in the Bash sandbox (`bearagent.sandbox.launch.
  confined_launch`, same environment); when the sandbox cannot start, the server is `failed` with that reason
  (not retried) and never runs unconfined.
- A workspace's stdio server runs confined the same way once any run may have written in the workspace since its
  last trust decision (`writes`, `mcp/after_writes.py`): it starts confined, and one running unconfined is started
  again confined before its next call.

The `mcp` SDK is imported on first connect, not at import time.

Why it is over 400 lines: connecting, retrying, reconnecting on a call and closing are one state machine per
server; its transitions are easier to check side by side than across modules.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.domain._base import JsonMapping
from bearagent.domain.diagnostics import name_list
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.specs import McpServerSpec
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.domain.trace_context import of_call
from bearagent.mcp.after_writes import why_confined, written_before
from bearagent.mcp.calls import CallFailure, call_remote, failed_result
from bearagent.mcp.code_pins import pin_servers, server_code_changed
from bearagent.mcp.errors import McpConnectError, McpFailure, describe_failure
from bearagent.mcp.launch import Launch, confine, resolve_launch, where_of
from bearagent.mcp.slot import (
    DEFAULT_BACKOFF_S,
    DEFAULT_MAX_BACKOFF_S,
    DEFAULT_MAX_CONNECT_ATTEMPTS,
    DEFAULT_MAX_RESTARTS,
    DEFAULT_PING_INTERVAL_S,
    DEFAULT_PING_TIMEOUT_S,
    McpServerStatus,
    ReconnectPolicy,
    ServerSlot,
    ServerState,
)
from bearagent.mcp.tool import McpTool, build_tools
from bearagent.ports import Tool, ToolContext

if TYPE_CHECKING:
    from bearagent.domain.trace_context import TraceContext
    from bearagent.mcp._sdk import Connection
    from bearagent.rewind.workspace_writes import RecordedWrite, WritesRecord
    from bearagent.sandbox.settings import SandboxSettings


class McpConnectionManager:
    """See the module docstring. `env` is the environment `${VAR}` expands against and the inherited variables come
    from (normally `os.environ`); `workspace_root` is the default `cwd` of stdio servers and where artifacts go.

    `in_process` maps a server name to an SDK server object (`MCPServer` / low-level `Server`) connected in the same
    process (tests, benchmarks, plugins); a spec of that name is optional (defaults are used).

    `sandbox` is the merged sandbox settings: with `mcp: true` every stdio server runs confined (None = off).
    """

    def __init__(
        self,
        specs: Sequence[McpServerSpec],
        env: Mapping[str, str],
        workspace_root: Path,
        *,
        in_process: Mapping[str, object] | None = None,
        max_connect_attempts: int = DEFAULT_MAX_CONNECT_ATTEMPTS,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
        sandbox: SandboxSettings | None = None,
        trace_context: TraceContext | None = None,
        writes: WritesRecord | None = None,
    ) -> None:
        """`trace_context` gives the W3C trace context each call sends in `params._meta` (the plugins' answer)."""
        self._env = dict(env)
        self._trace = trace_context
        self._sandbox = sandbox
        self._writes = writes
        self._confined: set[str] = set()
        """The servers whose current connection runs in the sandbox."""
        self._root = workspace_root
        self._policy = ReconnectPolicy(max_connect_attempts, max_restarts, backoff_s, max_backoff_s)
        self._slots: dict[str, ServerSlot] = {}
        for spec in specs:
            if spec.name in self._slots:
                raise BearAgentError(
                    ErrorInfo.of(
                        "configuration",
                        "duplicate_mcp_server",
                        f"MCP server {spec.name!r} is defined twice ({self._slots[spec.name].spec.source or '?'} and "
                        f"{spec.source or '?'})",
                    ),
                    hint="rename one of the entries; the registry should have resolved shadowing before this point",
                )
            self._slots[spec.name] = ServerSlot(spec, (in_process or {}).get(spec.name), self._policy)
        for name, server in (in_process or {}).items():
            if name not in self._slots:
                spec = McpServerSpec(name=name, transport="stdio", command="(in-process)", source="in-process")
                self._slots[name] = ServerSlot(spec, server, self._policy)
        self._pins = pin_servers(
            [s.spec for s in self._slots.values() if s.in_process is None], workspace_root, self._env, sandbox
        )
        self._closed = False
        self._retry_task: asyncio.Task[None] | None = None
        self._ping_task: asyncio.Task[None] | None = None
        self._retry_interval = 0.0
        self._background: set[asyncio.Task[None]] = set()

    # ----- lifecycle -----

    async def __aenter__(self) -> McpConnectionManager:
        await self.start_all()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start_all(
        self,
        *,
        background_retry: bool = True,
        retry_interval_s: float = 5.0,
        ping_interval_s: float | None = DEFAULT_PING_INTERVAL_S,
    ) -> None:
        """Connect every pending server concurrently; returns when each is `ready` or `failed`. With
        `background_retry`, failed servers are retried every `retry_interval_s` (bounded attempts) so a server that
        comes up later adds its tools without anyone asking, and ready servers get a health ping every
        `ping_interval_s` (None: no pings)."""
        pending = [slot for slot in self._slots.values() if slot.state == "pending"]
        await asyncio.gather(*(self._connect_guarded(slot) for slot in pending))
        if background_retry:
            self.start_background_retry(retry_interval_s)
            if ping_interval_s is not None:
                self.start_health_pings(ping_interval_s)

    async def ping_all(self, timeout_s: float = DEFAULT_PING_TIMEOUT_S) -> None:
        """Ping every ready server concurrently (`McpServerStatus.ping_ms`). A server that does not answer within
        `timeout_s`, or whose connection fails, is marked dead with that reason: its tools leave the next model
        call's list and the next call (or the background retry) reconnects."""
        ready = [s for s in self._slots.values() if s.state == "ready" and s.conn is not None]
        await asyncio.gather(*(self._ping(slot, timeout_s) for slot in ready))

    async def _ping(self, slot: ServerSlot, timeout_s: float) -> None:
        conn = slot.conn
        if conn is None:
            return
        try:
            slot.last_ping_ms = await conn.ping(timeout_s)
        except Exception as exc:
            if slot.conn is not conn or self._closed:
                return
            slot.last_ping_ms = None
            reason = f"no answer within {timeout_s:g}s" if isinstance(exc, TimeoutError) else _short(exc)
            self._mark_dead(
                slot,
                conn,
                McpFailure(
                    "ping_failed",
                    f"MCP server {slot.spec.name!r} ({where_of(slot.spec)}) did not answer a health ping ({reason}).",
                    "check that the server is still running; the next call reconnects.",
                ),
            )
            if slot.may_retry():
                self.start_background_retry(self._retry_interval or 5.0)

    def start_health_pings(self, interval_s: float = DEFAULT_PING_INTERVAL_S) -> None:
        """Ping the ready servers every `interval_s` until `aclose` (so a server that went away is noticed and
        shown failed before the model calls it)."""
        running = self._ping_task
        if running is not None and not running.done():
            return

        async def loop() -> None:
            while not self._closed:
                await asyncio.sleep(interval_s)
                await self.ping_all()

        self._ping_task = asyncio.create_task(loop(), name="mcp-ping")

    async def retry_failed(self) -> list[str]:
        """Try once more (concurrently) every `failed` server that has attempts left and whose backoff elapsed;
        returns the names that are now ready."""
        now = time.monotonic()
        due = [
            slot
            for slot in self._slots.values()
            if slot.state == "failed" and slot.may_retry() and slot.next_attempt_at <= now
        ]
        await asyncio.gather(*(self._connect_guarded(slot) for slot in due))
        return [slot.spec.name for slot in due if slot.state == "ready"]

    def start_background_retry(self, interval_s: float = 5.0) -> None:
        """Retry failed servers every `interval_s` until all are ready or out of attempts (stopped by `aclose`)."""
        running = self._retry_task
        if running is not None and not running.done():
            if self._retry_interval == interval_s:
                return
            running.cancel()
        self._retry_interval = interval_s

        async def loop() -> None:
            while not self._closed:
                if not any(s.state == "failed" and s.may_retry() for s in self._slots.values()):
                    return  # a later crash is handled by the next call, not by this loop
                await asyncio.sleep(interval_s)
                await self.retry_failed()

        self._retry_task = asyncio.create_task(loop(), name="mcp-retry")

    async def aclose(self) -> None:
        """Close every session and stop every stdio server process (bounded waits). Idempotent."""
        self._closed = True
        tasks = [t for t in (self._retry_task, self._ping_task, *self._background) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)
        conns = [slot.conn for slot in self._slots.values() if slot.conn is not None]
        for slot in self._slots.values():
            slot.state = "closed"
            slot.tools = ()
        await asyncio.gather(*(conn.close() for conn in conns), return_exceptions=True)
        for slot in self._slots.values():
            slot.conn = None

    # ----- queries -----

    @property
    def server_names(self) -> list[str]:
        return list(self._slots)

    def tools(self) -> list[Tool]:
        """The tools of every ready server, in configuration order."""
        out: list[Tool] = []
        for slot in self._slots.values():
            if slot.state == "ready":
                out.extend(slot.tools)
        return out

    def projection_inputs(self) -> list[tuple[str, ToolSpec]]:
        """`(server, spec)` pairs for `runtime.projection.project_invocation(mcp_tools=...)`, which expects each
        spec named by the server's exact tool name (it builds and sanitises `mcp__<server>__<tool>` itself).
        Map a projected entry back to its executor with `find_tool(server, name)`."""
        out: list[tuple[str, ToolSpec]] = []
        for slot in self._slots.values():
            if slot.state == "ready":
                out.extend((t.server, t.spec.model_copy(update={"name": t.remote_name})) for t in slot.tools)
        return out

    def find_tool(self, server: str, remote_name: str) -> McpTool | None:
        """The current tool `remote_name` (exact server-side name) of a ready server, or None."""
        slot = self._slots.get(server)
        if slot is None or slot.state != "ready":
            return None
        return next((t for t in slot.tools if t.remote_name == remote_name), None)

    def server_tools(self, server: str) -> list[McpTool]:
        return list(self._slot(server).tools)

    def status(self) -> list[McpServerStatus]:
        return [slot.status() for slot in self._slots.values()]

    def server_status(self, server: str) -> McpServerStatus:
        return self._slot(server).status()

    def unavailable_summary(self) -> str:
        """Text for the model (and the user): which servers are unavailable and why. Empty when all are ready."""
        lines: list[str] = []
        for slot in self._slots.values():
            if slot.state in ("ready", "pending", "closed"):
                continue
            reason = slot.failure.message if slot.failure else "still connecting"
            retry = " It will be retried." if slot.state == "failed" and slot.may_retry() else ""
            lines.append(f"- {slot.spec.name}: {reason}{retry}")
        if not lines:
            return ""
        head = "These MCP servers are unavailable, so their tools (mcp__<server>__*) are absent:"
        return "\n".join([head, *lines])

    # ----- calls (used by McpTool) -----

    async def call_tool(
        self, tool: McpTool, arguments: JsonMapping, context: ToolContext, *, exact_name: str
    ) -> ToolResult:
        slot = self._slot(tool.server)
        started = time.monotonic()

        def failed(failure: CallFailure) -> ToolResult:
            secrets = slot.conn.launch.secrets if slot.conn is not None else ()
            return failed_result(tool, context, failure, int((time.monotonic() - started) * 1000), secrets)

        try:
            conn = await self._ensure_connected(slot)
        except McpConnectError as exc:
            return failed(CallFailure("server_unavailable", exc.failure.text(), retryable=True))

        def died(failure: McpFailure) -> str:
            self._mark_dead(slot, conn, failure)
            if slot.may_retry():
                return "The next call restarts it."
            return f"It will not be restarted again in this session ({slot.restarts} restart(s) so far)."

        if slot.in_process is None and slot.spec.name not in self._confined and self._written(slot) is not None:
            restarted = await self._restart_confined(slot, conn)
            if isinstance(restarted, McpFailure):
                return failed(CallFailure("server_unavailable", restarted.text()))
            conn = restarted
        changed = (
            server_code_changed(self._pins, slot.spec, self._root, running=True) if slot.in_process is None else None
        )
        if changed is not None:
            # the running server would run the model's code on this call (a script it runs per call, a lazy
            # import): it is stopped, not restarted in this run, and the call refused
            self._mark_dead(slot, conn, changed)
            slot.give_up()
            return failed(CallFailure("code_changed", changed.text()))
        declined_before = conn.declined_inputs
        from bearagent.mcp.elicitation import ElicitationAnswer, ElicitationQuestion, current_elicitor

        elicitor, before = current_elicitor.get(), conn.elicitor
        if elicitor is not None:  # the server's questions during this call go to the run's elicitor
            import asyncio
            import contextvars

            call_context = contextvars.copy_context()  # the SDK calls back in the connection's task: answer in
            # the call's context (its run, `current_run`), where the answer's facts are recorded

            async def answer(question: ElicitationQuestion) -> ElicitationAnswer:
                return await elicitor(question, context)

            def elicit(question: ElicitationQuestion) -> asyncio.Task[ElicitationAnswer]:
                return asyncio.get_running_loop().create_task(answer(question), context=call_context)

            conn.elicitor = elicit
        try:
            outcome = await call_remote(
                conn,
                slot.spec,
                exact_name,
                arguments,
                on_death=died,
                context=lambda: slot.context(conn.launch),
                meta=of_call(self._trace, context.run_id, context.tool_call_id) or None,
            )
        finally:
            conn.elicitor = before
        if isinstance(outcome, CallFailure):
            return _with_declined_note(failed(outcome), conn, declined_before, slot.spec.name)
        from bearagent.mcp._results import to_tool_result

        duration_ms = int((time.monotonic() - started) * 1000)
        result = to_tool_result(
            outcome, spec=tool.spec, context=context, server=slot.spec.name, duration_ms=duration_ms
        )
        return _with_declined_note(result, conn, declined_before, slot.spec.name)

    # ----- internals -----

    def _slot(self, server: str) -> ServerSlot:
        slot = self._slots.get(server)
        if slot is None:
            raise BearAgentError(
                ErrorInfo.of("not_found", "mcp_server", f"no MCP server named {server!r}"),
                hint=f"configured servers: {name_list(self._slots) or '(none)'}; see `bearagent mcp list`",
            )
        return slot

    async def _connect_guarded(self, slot: ServerSlot) -> None:
        async with slot.lock:
            if slot.state == "ready" or self._closed:
                return
            await self._connect(slot)

    async def _connect(self, slot: ServerSlot) -> None:
        """One connect attempt (the caller holds `slot.lock`). Sets `ready` or `failed`."""
        from bearagent.mcp import _sdk

        slot.state = "connecting"
        slot.attempts += 1
        spec = slot.spec
        try:
            launch = (
                Launch(transport="in-process")
                if slot.in_process is not None
                else resolve_launch(spec, self._env, self._root)
            )
        except BearAgentError as exc:
            slot.record_failure(describe_failure(exc, slot.context(None)))
            return
        ctx = slot.context(launch)  # messages show the server's own command, not the sandbox around it
        changed = server_code_changed(self._pins, spec, self._root) if slot.in_process is None else None
        if changed is not None:
            slot.record_failure(changed)
            slot.give_up()
            return
        written = self._written(slot) if slot.in_process is None else None
        confining = (
            launch.transport == "stdio"
            and slot.in_process is None
            and ((self._sandbox is not None and self._sandbox.mcp) or written is not None)
        )
        if confining:
            why = why_confined(spec.name, self._root, written) if written is not None else None
            confined = self._confine(slot, launch, why)
            if confined is None:
                return
            launch = confined
        conn = _sdk.Connection(
            name=spec.name,
            launch=launch,
            ctx=ctx,
            startup_timeout_s=spec.startup_timeout_s,
            call_timeout_s=spec.call_timeout_s,
            in_process=slot.in_process,
            on_tools_changed=lambda: self._schedule_refresh(slot),
        )
        try:
            await conn.open()
        except McpConnectError as exc:
            await conn.close()
            slot.record_failure(exc.failure)
            return
        if self._closed:
            await conn.close()
            slot.state = "closed"
            return
        slot.conn = conn
        (self._confined.add if confining else self._confined.discard)(spec.name)
        slot.tools = build_tools(self, spec, conn.tools, conn.server_version)
        slot.state = "ready"
        slot.failure = None
        slot.failed_in_row = 0
        slot.had_connection = True

    def _written(self, slot: ServerSlot) -> RecordedWrite | None:
        """The run's write that makes this (workspace, stdio) server run confined; None: it runs as configured."""
        return written_before(slot.spec, self._root, self._sandbox, self._writes)

    async def _restart_confined(self, slot: ServerSlot, conn: Connection) -> Connection | McpFailure:
        """Stop the unconfined server (a run may have written what it loads) and start it again in the sandbox."""
        async with slot.lock:
            if slot.conn is conn:
                slot.conn, slot.state, slot.tools = None, "failed", ()
                await conn.close()
            if slot.state != "ready" or slot.conn is None:
                await self._connect(slot)
            if slot.state != "ready" or slot.conn is None:
                return slot.failure or McpFailure("sandbox_unavailable", "it did not start confined.", "see above")
            return slot.conn

    def _confine(self, slot: ServerSlot, launch: Launch, why: tuple[str, str] | None) -> Launch | None:
        """The launch wrapped in the sandbox, or None after recording why the server cannot start (not retried:
        the sandbox will not start on the next attempt either)."""
        from bearagent.sandbox.settings import SandboxSettings

        confined = confine(launch, self._sandbox or SandboxSettings(), self._root, slot.spec.name, why)
        if isinstance(confined, McpFailure):
            slot.record_failure(confined)
            slot.give_up()
            return None
        return confined

    def _mark_dead(self, slot: ServerSlot, conn: Connection, failure: McpFailure) -> None:
        if slot.mark_dead(conn, failure):
            self._spawn(conn.close())

    async def _ensure_connected(self, slot: ServerSlot) -> Connection:
        conn = slot.conn
        if slot.state == "ready" and conn is not None and not conn.dead.is_set():
            return conn
        async with slot.lock:
            conn = slot.conn
            if conn is not None and conn.dead.is_set():
                self._mark_dead(slot, conn, conn.failure_now())
            if slot.state == "ready" and slot.conn is not None:
                return slot.conn
            if self._closed:
                raise McpConnectError(
                    McpFailure("closed", f"MCP server {slot.spec.name!r} is closed.", "start a new session.")
                )
            if not slot.may_retry():
                last = slot.failure.message if slot.failure else "it failed"
                raise McpConnectError(
                    McpFailure(
                        "gave_up",
                        f"MCP server {slot.spec.name!r} is unavailable: {last} (gave up after {slot.attempts} "
                        f"connect attempt(s) and {slot.restarts} restart(s)).",
                        (slot.failure.hint if slot.failure else f"check {where_of(slot.spec)}")
                        + " Then start a new session (check with `bearagent mcp list`).",
                    )
                )
            wait = slot.next_attempt_at - time.monotonic()
            if wait > 0:
                await asyncio.sleep(min(wait, self._policy.max_backoff_s))
            if slot.had_connection:
                slot.restarts += 1
            await self._connect(slot)
            if slot.state != "ready" or slot.conn is None:
                assert slot.failure is not None
                raise McpConnectError(slot.failure)
            return slot.conn

    def _schedule_refresh(self, slot: ServerSlot) -> None:
        async def refresh() -> None:
            conn = slot.conn
            if conn is None:
                return
            try:
                await conn.refresh_tools()
            except Exception:
                return  # keep the previous list; a dead connection is handled by the next call
            if slot.conn is conn:
                slot.tools = build_tools(self, slot.spec, conn.tools, conn.server_version)

        self._spawn(refresh())

    def _spawn(self, coro: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _short(exc: BaseException) -> str:
    from bearagent.mcp.errors import leaves

    leaf = next(iter(leaves(exc)), exc)
    return f"{type(leaf).__name__}: {str(leaf)[:200]}" if str(leaf) else type(leaf).__name__


def _with_declined_note(result: ToolResult, conn: Connection, before: int, server: str) -> ToolResult:
    """Say in the result which requests for input (MCP elicitation) the server made during the call and that
    BearAgent declined them, so the model can ask the user itself."""
    count = conn.declined_inputs - before
    if count <= 0:
        return result
    from bearagent.domain.tools import MAX_TOOL_CONTENT_CHARS

    shown = conn.declined_messages[-count:] if len(conn.declined_messages) >= count else conn.declined_messages
    questions = "; ".join(f'"{m}"' for m in shown[:5]) or "(not kept)"
    note = (
        f"\n\n[BearAgent declined {count} request(s) for input from MCP server {server!r} during this call "
        f"(MCP elicitation: {questions}). BearAgent does not put MCP servers' questions to the user yet; if the "
        "answer is needed, ask the user in your reply.]"
    )
    content = result.content[: max(0, MAX_TOOL_CONTENT_CHARS - len(note))] + note
    return result.model_copy(update={"content": content})


__all__ = ["McpConnectionManager", "McpServerStatus", "ServerState"]
