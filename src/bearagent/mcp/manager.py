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

The `mcp` SDK is imported on first connect, not at import time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from bearagent.domain._base import JsonMapping
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import ToolCallId
from bearagent.domain.specs import McpServerSpec
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.mcp.errors import ConnectContext, McpConnectError, McpFailure, describe_failure
from bearagent.mcp.launch import Launch, redact, resolve_launch, where_of
from bearagent.mcp.tool import McpTool, build_tools
from bearagent.ports import Tool, ToolContext

if TYPE_CHECKING:
    from bearagent.mcp._sdk import Connection
    from bearagent.sandbox.settings import SandboxSettings

ServerState: TypeAlias = Literal["pending", "connecting", "ready", "failed", "closed"]

DEFAULT_MAX_CONNECT_ATTEMPTS = 3
DEFAULT_MAX_RESTARTS = 5
DEFAULT_BACKOFF_S = 0.5
DEFAULT_MAX_BACKOFF_S = 5.0


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    """What `bearagent mcp list` shows for one server."""

    name: str
    transport: str
    state: ServerState
    tool_count: int
    last_error: str | None
    hint: str | None
    connect_attempts: int
    restarts: int
    source: str
    protocol_version: str | None


class _Slot:
    """One configured server: its spec, current connection, tools and failure bookkeeping."""

    def __init__(self, spec: McpServerSpec, in_process: object | None) -> None:
        self.spec = spec
        self.in_process = in_process
        self.state: ServerState = "pending"
        self.failure: McpFailure | None = None
        self.conn: Connection | None = None
        self.tools: tuple[McpTool, ...] = ()
        self.attempts = 0  # connect attempts, total
        self.failed_in_row = 0  # consecutive failed connect attempts
        self.restarts = 0  # reconnects after a connection that worked died
        self.next_attempt_at = 0.0
        self.lock = asyncio.Lock()
        self.had_connection = False


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
    ) -> None:
        self._env = dict(env)
        self._sandbox = sandbox
        self._root = workspace_root
        self._max_attempts = max_connect_attempts
        self._max_restarts = max_restarts
        self._backoff = backoff_s
        self._max_backoff = max_backoff_s
        self._slots: dict[str, _Slot] = {}
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
            self._slots[spec.name] = _Slot(spec, (in_process or {}).get(spec.name))
        for name, server in (in_process or {}).items():
            if name not in self._slots:
                spec = McpServerSpec(name=name, transport="stdio", command="(in-process)", source="in-process")
                self._slots[name] = _Slot(spec, server)
        self._closed = False
        self._retry_task: asyncio.Task[None] | None = None
        self._retry_interval = 0.0
        self._background: set[asyncio.Task[None]] = set()

    # ----- lifecycle -----

    async def __aenter__(self) -> McpConnectionManager:
        await self.start_all()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start_all(self, *, background_retry: bool = True, retry_interval_s: float = 5.0) -> None:
        """Connect every pending server concurrently; returns when each is `ready` or `failed`. With
        `background_retry`, failed servers are retried every `retry_interval_s` (bounded attempts) so a server that
        comes up later adds its tools without anyone asking."""
        pending = [slot for slot in self._slots.values() if slot.state == "pending"]
        await asyncio.gather(*(self._connect_guarded(slot) for slot in pending))
        if background_retry:
            self.start_background_retry(retry_interval_s)

    async def retry_failed(self) -> list[str]:
        """Try once more (concurrently) every `failed` server that has attempts left and whose backoff elapsed;
        returns the names that are now ready."""
        now = time.monotonic()
        due = [
            slot
            for slot in self._slots.values()
            if slot.state == "failed" and self._may_retry(slot) and slot.next_attempt_at <= now
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
                if not any(s.state == "failed" and self._may_retry(s) for s in self._slots.values()):
                    return  # a later crash is handled by the next call, not by this loop
                await asyncio.sleep(interval_s)
                await self.retry_failed()

        self._retry_task = asyncio.create_task(loop(), name="mcp-retry")

    async def aclose(self) -> None:
        """Close every session and stop every stdio server process (bounded waits). Idempotent."""
        self._closed = True
        tasks = [t for t in (self._retry_task, *self._background) if t is not None and not t.done()]
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
        return [self._status(slot) for slot in self._slots.values()]

    def server_status(self, server: str) -> McpServerStatus:
        return self._status(self._slot(server))

    def unavailable_summary(self) -> str:
        """Text for the model (and the user): which servers are unavailable and why. Empty when all are ready."""
        lines: list[str] = []
        for slot in self._slots.values():
            if slot.state in ("ready", "pending", "closed"):
                continue
            reason = slot.failure.message if slot.failure else "still connecting"
            retry = " It will be retried." if slot.state == "failed" and self._may_retry(slot) else ""
            lines.append(f"- {slot.spec.name}: {reason}{retry}")
        if not lines:
            return ""
        head = "These MCP servers are unavailable, so their tools (mcp__<server>__*) are absent:"
        return "\n".join([head, *lines])

    # ----- calls (used by McpTool) -----

    async def call_tool(
        self, tool: McpTool, arguments: JsonMapping, context: ToolContext, *, exact_name: str
    ) -> ToolResult:
        from bearagent.mcp import _sdk

        slot = self._slot(tool.server)
        started = time.monotonic()

        def elapsed() -> int:
            return int((time.monotonic() - started) * 1000)

        try:
            conn = await self._ensure_connected(slot)
        except McpConnectError as exc:
            return self._failed(tool, context, "server_unavailable", exc.failure.text(), elapsed(), retryable=True)

        timeout = slot.spec.call_timeout_s
        try:
            pending = conn.call_tool(exact_name, _thaw(arguments), timeout)
            # A dead stdio (or in-process) server fails pending requests at once (-32000); a dead HTTP transport
            # does not always, so HTTP calls race the connection's death.
            raw = await (_sdk.run_with_death_watch(conn, pending) if conn.launch.transport == "http" else pending)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if _sdk.is_connection_closed(exc) or conn.dead.is_set():
                await asyncio.sleep(0)  # let the runner record why the transport died
                failure = conn.failure if conn.failure is not None else conn.failure_now(exc)
                self._mark_dead(slot, conn, failure)
                then = (
                    "The next call restarts it."
                    if self._may_retry(slot)
                    else f"It will not be restarted again in this session ({slot.restarts} restart(s) so far)."
                )
                return self._failed(
                    tool,
                    context,
                    "connection_lost",
                    f"MCP server {slot.spec.name!r} died during the call to {exact_name!r}: {failure.message} {then}",
                    elapsed(),
                    retryable=True,
                )
            if _sdk.is_timeout(exc):
                return self._failed(
                    tool,
                    context,
                    "call_timeout",
                    f"MCP tool {exact_name!r} on server {slot.spec.name!r} did not answer within {timeout:g}s "
                    f"(the call was cancelled). Fix: raise `call_timeout_s` in {where_of(slot.spec)} if the tool "
                    "is just slow.",
                    elapsed(),
                    retryable=True,
                )
            text = _sdk.mcp_error_text(exc)
            if text is not None:
                return self._failed(
                    tool,
                    context,
                    "protocol_error",
                    f"MCP server {slot.spec.name!r} refused the call to {exact_name!r} with {text}",
                    elapsed(),
                )
            failure = describe_failure(exc, self._ctx(slot, conn.launch))
            return self._failed(tool, context, "call_failed", failure.text(), elapsed())
        return _sdk.to_tool_result(raw, spec=tool.spec, context=context, server=slot.spec.name, duration_ms=elapsed())

    # ----- internals -----

    def _slot(self, server: str) -> _Slot:
        slot = self._slots.get(server)
        if slot is None:
            raise BearAgentError(
                ErrorInfo.of("not_found", "mcp_server", f"no MCP server named {server!r}"),
                hint=f"configured servers: {', '.join(self._slots) or '(none)'}; see `bearagent mcp list`",
            )
        return slot

    def _may_retry(self, slot: _Slot) -> bool:
        if slot.failed_in_row >= self._max_attempts:
            return False
        return not (slot.had_connection and slot.restarts >= self._max_restarts)

    def _status(self, slot: _Slot) -> McpServerStatus:
        conn = slot.conn
        return McpServerStatus(
            name=slot.spec.name,
            transport="in-process" if slot.in_process is not None else slot.spec.transport,
            state=slot.state,
            tool_count=len(slot.tools),
            last_error=slot.failure.message if slot.failure else None,
            hint=slot.failure.hint if slot.failure else None,
            connect_attempts=slot.attempts,
            restarts=slot.restarts,
            source=slot.spec.source,
            protocol_version=conn.protocol_version if conn is not None else None,
        )

    def _ctx(self, slot: _Slot, launch: Launch | None) -> ConnectContext:
        spec = slot.spec
        return ConnectContext(
            server=spec.name,
            where=where_of(spec),
            transport="in-process" if slot.in_process is not None else spec.transport,
            command=launch.command if launch else ((spec.command or "?"), *spec.args),
            cwd=launch.cwd if launch else spec.cwd,
            url=launch.url if launch else spec.url,
            startup_timeout_s=spec.startup_timeout_s,
        )

    async def _connect_guarded(self, slot: _Slot) -> None:
        async with slot.lock:
            if slot.state == "ready" or self._closed:
                return
            await self._connect(slot)

    async def _connect(self, slot: _Slot) -> None:
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
            self._record_failure(slot, describe_failure(exc, self._ctx(slot, None)))
            return
        ctx = self._ctx(slot, launch)  # messages show the server's own command, not the sandbox around it
        if launch.transport == "stdio" and slot.in_process is None and self._sandbox is not None and self._sandbox.mcp:
            confined = self._confine(slot, launch)
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
            self._record_failure(slot, exc.failure)
            return
        if self._closed:
            await conn.close()
            slot.state = "closed"
            return
        slot.conn = conn
        slot.tools = build_tools(self, spec, conn.tools, conn.server_version)
        slot.state = "ready"
        slot.failure = None
        slot.failed_in_row = 0
        slot.had_connection = True

    def _confine(self, slot: _Slot, launch: Launch) -> Launch | None:
        """The launch wrapped in the sandbox, or None after recording why the server cannot start (not retried:
        the sandbox will not start on the next attempt either)."""
        from bearagent.sandbox.launch import SandboxUnavailableError, confined_launch, unavailable_message

        assert self._sandbox is not None
        try:
            confined = confined_launch(
                launch.command,
                self._sandbox,
                launch.env,
                self._root,
                cwd=Path(launch.cwd) if launch.cwd else None,
            )
        except (SandboxUnavailableError, OSError) as exc:
            what = f"MCP server {slot.spec.name!r}"
            if isinstance(exc, SandboxUnavailableError):
                message = unavailable_message(what, "mcp", exc.status)
            else:
                message = f"{what} was not run: the sandbox could not be prepared ({exc.strerror or exc})"
            message, _, fix = message.partition(". To fix: ")
            self._record_failure(
                slot, McpFailure("sandbox_unavailable", message + ".", fix or "check `bearagent doctor`.")
            )
            slot.failed_in_row = max(slot.failed_in_row, self._max_attempts)
            return None
        done = False

        def cleanup() -> None:
            nonlocal done
            if not done:
                done = True
                confined.finish()

        return replace(launch, command=confined.argv, env=confined.env, cleanup=cleanup)

    def _record_failure(self, slot: _Slot, failure: McpFailure) -> None:
        slot.state = "failed"
        slot.failure = failure
        slot.failed_in_row += 1
        slot.tools = ()
        delay = min(self._backoff * (2 ** (slot.failed_in_row - 1)), self._max_backoff)
        slot.next_attempt_at = time.monotonic() + delay

    def _mark_dead(self, slot: _Slot, conn: Connection, failure: McpFailure) -> None:
        if slot.conn is not conn:
            return
        slot.conn = None
        slot.state = "failed"
        slot.failure = failure
        slot.tools = ()
        slot.next_attempt_at = time.monotonic()  # the first restart after a crash is immediate
        self._spawn(conn.close())

    async def _ensure_connected(self, slot: _Slot) -> Connection:
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
            if not self._may_retry(slot):
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
                await asyncio.sleep(min(wait, self._max_backoff))
            if slot.had_connection:
                slot.restarts += 1
            await self._connect(slot)
            if slot.state != "ready" or slot.conn is None:
                assert slot.failure is not None
                raise McpConnectError(slot.failure)
            return slot.conn

    def _schedule_refresh(self, slot: _Slot) -> None:
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

    def _failed(
        self,
        tool: McpTool,
        context: ToolContext,
        specific: str,
        message: str,
        duration_ms: int,
        *,
        retryable: bool = False,
    ) -> ToolResult:
        slot = self._slots[tool.server]
        secrets = slot.conn.launch.secrets if slot.conn is not None else ()
        error = ErrorInfo.of("mcp", specific, redact(message, secrets), retryable=retryable, server=tool.server)
        return ToolResult(
            tool_call_id=context.tool_call_id or context.ids.new(ToolCallId),
            tool_name=tool.spec.name,
            status="failed",
            content=error.message,
            error=error,
            duration_ms=duration_ms,
        )


def _thaw(arguments: JsonMapping) -> dict[str, object]:
    from bearagent.domain._base import thaw_json_mapping

    return dict(thaw_json_mapping(arguments))


__all__ = ["McpConnectionManager", "McpServerStatus", "ServerState"]
