"""Everything that touches the `mcp` SDK's client: one live connection (`Connection`); what a call returns becomes a
`ToolResult` in `_results.py`.

Imported lazily by the manager (importing `mcp` costs about a second).

A `Connection` owns one `mcp.Client` inside a dedicated asyncio task (the "runner"): the SDK's client is an async
context manager holding a task group, so it must be entered and exited in the same task. The runner enters it under
a cancel scope whose deadline is `startup_timeout_s` (connect + initialize + tools/list), then lifts the deadline and
waits until `stop()` is called. Calls are made from the callers' tasks on the shared session (requests are
multiplexed). When the transport dies, the error leaves the `async with` in the runner as an `ExceptionGroup`; the
runner records it (unwrapped) and sets `dead`.

Why it is over 400 lines: this is the one module that imports the SDK (so that importing it is paid once, lazily);
the connection's start, calls, health pings and death are one lifecycle of one object.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import anyio
import httpx2
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import RequestParamsMeta

from bearagent._version import __version__
from bearagent.mcp.errors import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    ConnectContext,
    McpConnectError,
    McpFailure,
    describe_failure,
    leaves,
    startup_timeout,
)
from bearagent.mcp.launch import Launch, redact

if TYPE_CHECKING:
    from bearagent.mcp.elicitation import ElicitationAnswer, ElicitationQuestion

# The SDK logs every unparsable stdout line with a traceback; keep that out of the user's terminal unless the
# application configured logging itself (a NullHandler stops the "last resort" stderr handler only).
logging.getLogger("mcp").addHandler(logging.NullHandler())

MAX_SSE_EVENT_BYTES = 16 * 1024 * 1024
STDERR_TAIL_BYTES = 2_000
STDERR_TAIL_LINES = 12
MAX_TOOL_PAGES = 100
STOP_TIMEOUT_S = 10.0
MAX_ELICITATION_NOTES = 20
MAX_ELICITATION_TEXT = 300
LISTEN_PROTOCOL = "2026-07-28"


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A server tool as listed (SDK-free shape for the manager)."""

    name: str
    description: str
    input_schema: Mapping[str, object]
    annotations: Mapping[str, object] | None


class Connection:
    """One live client session to one server (see the module docstring)."""

    def __init__(
        self,
        *,
        name: str,
        launch: Launch,
        ctx: ConnectContext,
        startup_timeout_s: float,
        call_timeout_s: float,
        in_process: object | None = None,
        on_tools_changed: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.launch = launch
        self._ctx = ctx
        self._startup = startup_timeout_s
        self._call_timeout = call_timeout_s
        self._in_process = in_process
        self._on_tools_changed = on_tools_changed
        self.client: Client | None = None
        self.tools: list[RemoteTool] = []
        self.protocol_version: str | None = None
        self.server_version: str | None = None
        self.dead = anyio.Event()
        self.failure: McpFailure | None = None
        self._stop = anyio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr: IO[str] | None = None
        self._garbage = 0
        self._garbage_sample = ""
        self._unauthorized = False
        self.declined_inputs = 0  # requests for input (elicitation) declined; the first texts are kept below
        self.declined_messages: list[str] = []
        self.elicitor: Callable[[ElicitationQuestion], Awaitable[ElicitationAnswer]] | None = None
        """Who answers the server's questions during the call in flight (set by the manager per call)."""

    # ----- lifecycle -----

    async def open(self) -> None:
        """Connect, initialize and list tools within the startup timeout; raise `McpConnectError` otherwise."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._task = asyncio.create_task(self._run(ready), name=f"mcp-server-{self.name}")
        try:
            await asyncio.shield(ready)
        except asyncio.CancelledError:
            await self.close()
            raise

    async def _run(self, ready: asyncio.Future[None]) -> None:
        deadline = anyio.current_time() + self._startup
        scope = anyio.CancelScope(deadline=deadline)
        error: BaseException | None = None
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    target = await self._target(stack)
                    client = await stack.enter_async_context(
                        Client(
                            cast(Any, target),
                            read_timeout_seconds=self._call_timeout,
                            message_handler=self._on_message,
                            elicitation_callback=self._on_elicit,
                            client_info=types.Implementation(name="bearagent", version=__version__),
                        )
                    )
                    self.client = client
                    self.protocol_version = client.protocol_version
                    info = client.server_info
                    self.server_version = info.version if info is not None else None
                    self.tools = await list_tools(client)
                    scope.deadline = math.inf
                    if not ready.done():
                        ready.set_result(None)
                    async with anyio.create_task_group() as tg:
                        if self.protocol_version == LISTEN_PROTOCOL and self._on_tools_changed is not None:
                            tg.start_soon(self._listen_tools, client)
                        await self._stop.wait()
                        tg.cancel_scope.cancel()
        except asyncio.CancelledError:
            error = None
            if not ready.done():
                ready.set_exception(McpConnectError(self._failure_for(TimeoutError())))
            raise
        except BaseException as exc:
            error = exc
        finally:
            if not ready.done() and (error is None or anyio.current_time() >= deadline):
                # the deadline fired while starting (whatever the cancellation turned into on its way out)
                error = TimeoutError()
            if error is not None:
                self.failure = self._failure_for(error)
                if not ready.done():
                    ready.set_exception(McpConnectError(self.failure))
            self.client = None
            self.dead.set()
            self._close_stderr()
            if self.launch.cleanup is not None:  # the process is gone: remove the sandbox's placeholders
                self.launch.cleanup()

    async def _target(self, stack: AsyncExitStack) -> object:
        if self._in_process is not None:
            return self._in_process
        launch = self.launch
        if launch.transport == "http":
            assert launch.url is not None
            auth = None
            if launch.oauth_store is not None:
                from bearagent.mcp.oauth import session_auth

                auth = session_auth(self.name, launch.url, Path(launch.oauth_store))
            http = httpx2.AsyncClient(
                headers=dict(launch.headers),
                timeout=httpx2.Timeout(min(self._startup, 30.0), read=self._call_timeout + 30.0),
                auth=auth,
                event_hooks={"response": [self._note_status]},
            )
            await stack.enter_async_context(http)
            return streamable_http_client(launch.url, http_client=http, max_sse_event_size=MAX_SSE_EVENT_BYTES)
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        params = StdioServerParameters(
            command=launch.command[0],
            args=list(launch.command[1:]),
            env=dict(launch.env),
            cwd=launch.cwd,
            encoding_error_handler="replace",
        )
        return stdio_client(params, errlog=self._stderr)

    async def _note_status(self, response: httpx2.Response) -> None:
        # a 401 the OAuth provider could not cure (or with no login at all) reaches the SDK as a generic HTTP error:
        # remember it so the failure names `bearagent mcp login`
        if response.status_code == 401:
            self._unauthorized = True

    async def _on_elicit(self, context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        """A server asks the user for input (a form, a URL): the call's elicitor answers (the run's Elicitation
        hooks, a person; `mcp/elicitation.py`). Unanswered, it is declined (as if the user said no) and the
        question kept; the manager appends it to the call's result so the model can ask."""
        from bearagent.mcp.elicitation import question_of, wire_content

        question = question_of(self.name, params)
        answer = await self.elicitor(question) if self.elicitor is not None else None
        if answer is not None and answer.answered_by != "nobody":
            content = wire_content(answer.content) if answer.action == "accept" else None
            return types.ElicitResult(action=answer.action, content=content)
        self.declined_inputs += 1
        if len(self.declined_messages) < MAX_ELICITATION_NOTES:
            text = question.message[:MAX_ELICITATION_TEXT]
            if question.url:
                text += f" (open {question.url[:MAX_ELICITATION_TEXT]})"
            self.declined_messages.append(text or "(no message)")
        return types.ElicitResult(action=answer.action if answer is not None else "decline")

    async def ping(self, timeout_s: float) -> float:
        """A health probe; returns the round trip in ms. `ping` at protocol 2025-11-25 and earlier; 2026-07-28
        removed it, so there the probe is one uncached `tools/list` page."""
        client = self.client
        if client is None or self.dead.is_set():
            raise MCPError(CONNECTION_CLOSED, "Connection closed")
        started = anyio.current_time()
        with anyio.fail_after(timeout_s):
            if self.protocol_version == LISTEN_PROTOCOL:
                await client.list_tools(cache_mode="bypass")
            else:
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await client.session.send_ping()
        return (anyio.current_time() - started) * 1000

    async def _on_message(self, message: object) -> None:
        if isinstance(message, Exception):
            self._garbage += 1
            if not self._garbage_sample:
                self._garbage_sample = _garbage_sample(message)
        elif isinstance(message, types.ToolListChangedNotification) and self._on_tools_changed is not None:
            self._on_tools_changed()

    async def _listen_tools(self, client: Client) -> None:
        """At protocol 2026-07-28 change notifications are not pushed: subscribe to `tools/list_changed` events.
        (Older sessions deliver `notifications/tools/list_changed` to `_on_message`.) Best effort: a server that
        does not support subscriptions just keeps its first tool list."""
        callback = self._on_tools_changed
        assert callback is not None
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    callback()
        except Exception:
            return

    async def refresh_tools(self) -> None:
        client = self.client
        if client is not None:
            with anyio.fail_after(self._call_timeout):
                self.tools = await list_tools(client, refresh=True)

    async def close(self) -> None:
        """Stop the session and (stdio) the server process: stdin closed, then SIGTERM/SIGKILL to its process group
        by the SDK, every wait bounded. Idempotent."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            self._close_stderr()
            return
        done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)

    def _close_stderr(self) -> None:
        if self._stderr is not None and self.dead.is_set():
            self._stderr.close()
            self._stderr = None

    # ----- diagnostics -----

    def stderr_tail(self) -> str:
        f = self._stderr
        if f is None or f.closed:
            return ""
        try:
            fd = f.fileno()
            size = os.fstat(fd).st_size
            raw = os.pread(fd, STDERR_TAIL_BYTES, max(0, size - STDERR_TAIL_BYTES))
        except OSError:
            return ""
        text = raw.decode("utf-8", errors="replace")
        if size > STDERR_TAIL_BYTES:
            text = text.split("\n", 1)[-1]
        lines = [line.rstrip() for line in text.rstrip().splitlines() if line.strip()]
        if len(lines) > STDERR_TAIL_LINES:
            lines = ["…", *lines[-STDERR_TAIL_LINES:]]
        return redact("\n".join(lines), self.launch.secrets)

    def _failure_for(self, exc: BaseException) -> McpFailure:
        ctx = ConnectContext(
            server=self._ctx.server,
            where=self._ctx.where,
            transport=self._ctx.transport,
            command=self._ctx.command,
            cwd=self._ctx.cwd,
            url=self._ctx.url,
            startup_timeout_s=self._startup,
            stderr_tail=self.stderr_tail(),
            garbage_lines=self._garbage,
            garbage_sample=self._garbage_sample,
            unauthorized=self._unauthorized,
            has_auth_header=any(k.lower() == "authorization" for k in self.launch.headers),
        )
        failure = startup_timeout(ctx) if isinstance(exc, TimeoutError) else describe_failure(exc, ctx)
        secrets = self.launch.secrets
        return McpFailure(failure.kind, redact(failure.message, secrets), redact(failure.hint, secrets))

    def failure_now(self, exc: BaseException | None = None) -> McpFailure:
        """The unwrapped failure for `exc` (or the recorded one) with the current stderr tail."""
        if exc is None and self.failure is not None:
            return self.failure
        return self._failure_for(exc if exc is not None else ConnectionError("connection closed"))

    # ----- calls -----

    async def call_tool(
        self, name: str, arguments: Mapping[str, object], timeout_s: float, meta: Mapping[str, str] | None = None
    ) -> types.CallToolResult:
        """Call a tool; `meta` goes into the request's `params._meta` (the W3C trace context of the call)."""
        client = self.client
        if client is None or self.dead.is_set():
            raise MCPError(CONNECTION_CLOSED, "Connection closed")
        sent = cast("RequestParamsMeta", dict(meta)) if meta else None
        return await client.call_tool(name, dict(arguments), read_timeout_seconds=timeout_s, meta=sent)


def _garbage_sample(exc: Exception) -> str:
    text = str(exc)
    marker = "input_value="
    at = text.find(marker)
    if at >= 0:
        text = text[at + len(marker) :]
    return text.split("\n", 1)[0][:120]


async def list_tools(client: Client, *, refresh: bool = False) -> list[RemoteTool]:
    out: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh" if refresh else "use")
        for tool in page.tools:
            annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
            out.append(
                RemoteTool(
                    name=tool.name,
                    description=tool.description or tool.title or "",
                    input_schema=cast(Mapping[str, object], tool.input_schema),
                    annotations=cast(Mapping[str, object] | None, annotations),
                )
            )
        cursor = page.next_cursor
        if not cursor:
            break
    return out


def is_connection_closed(exc: BaseException) -> bool:
    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED


def is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or (isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT)


def mcp_error_text(exc: BaseException) -> str | None:
    if isinstance(exc, MCPError):
        return f"JSON-RPC error {exc.code}: {exc.message}"
    return None


async def run_with_death_watch(conn: Connection, call: Awaitable[types.CallToolResult]) -> types.CallToolResult:
    """Await `call`, but give up as soon as the connection dies (an HTTP transport failure does not always fail
    the pending request itself)."""
    result: list[types.CallToolResult] = []
    try:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                await conn.dead.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            result.append(await call)
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # the task group wraps what the call raised: hand the caller the first real error
        found = [e for e in leaves(group) if not isinstance(e, asyncio.CancelledError)]
        if not found:
            raise
        raise found[0] from group
    if not result:
        raise MCPError(CONNECTION_CLOSED, "Connection closed")
    return result[0]
