"""One configured MCP server as the connection manager tracks it: its state, connection and tools, and the
bookkeeping that bounds reconnecting (connect attempts in a row, restarts after a connection that worked died,
exponential backoff between attempts)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from bearagent.domain.specs import McpServerSpec
from bearagent.mcp.errors import ConnectContext, McpFailure
from bearagent.mcp.launch import Launch, where_of

if TYPE_CHECKING:
    from bearagent.mcp._sdk import Connection
    from bearagent.mcp.tool import McpTool

ServerState: TypeAlias = Literal["pending", "connecting", "ready", "failed", "closed"]

DEFAULT_MAX_CONNECT_ATTEMPTS = 3
DEFAULT_MAX_RESTARTS = 5
DEFAULT_BACKOFF_S = 0.5
DEFAULT_MAX_BACKOFF_S = 5.0
DEFAULT_PING_INTERVAL_S = 30.0
DEFAULT_PING_TIMEOUT_S = 10.0


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
    ping_ms: float | None = None
    """The last health ping's round trip (None: not pinged yet, or not ready)."""


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    """How hard the manager tries: connect attempts in a row, restarts per session, the backoff between them."""

    max_connect_attempts: int = DEFAULT_MAX_CONNECT_ATTEMPTS
    max_restarts: int = DEFAULT_MAX_RESTARTS
    backoff_s: float = DEFAULT_BACKOFF_S
    max_backoff_s: float = DEFAULT_MAX_BACKOFF_S


class ServerSlot:
    """One configured server: its spec, current connection, tools and failure bookkeeping."""

    def __init__(self, spec: McpServerSpec, in_process: object | None, policy: ReconnectPolicy) -> None:
        self.spec = spec
        self.in_process = in_process
        self.policy = policy
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
        self.last_ping_ms: float | None = None

    @property
    def transport(self) -> str:
        return "in-process" if self.in_process is not None else self.spec.transport

    def may_retry(self) -> bool:
        if self.failed_in_row >= self.policy.max_connect_attempts:
            return False
        return not (self.had_connection and self.restarts >= self.policy.max_restarts)

    def give_up(self) -> None:
        """No more attempts (the reason will not change on the next one, e.g. the sandbox cannot start)."""
        self.failed_in_row = max(self.failed_in_row, self.policy.max_connect_attempts)

    def record_failure(self, failure: McpFailure) -> None:
        """A connect attempt failed: `failed`, no tools, the next attempt after the backoff."""
        self.state = "failed"
        self.failure = failure
        self.failed_in_row += 1
        self.tools = ()
        delay = min(self.policy.backoff_s * (2 ** (self.failed_in_row - 1)), self.policy.max_backoff_s)
        self.next_attempt_at = time.monotonic() + delay

    def mark_dead(self, conn: Connection, failure: McpFailure) -> bool:
        """`conn` (if still the current connection) died: `failed`, the first restart immediate. False when `conn`
        was no longer current."""
        if self.conn is not conn:
            return False
        self.conn = None
        self.state = "failed"
        self.failure = failure
        self.tools = ()
        self.next_attempt_at = time.monotonic()  # the first restart after a crash is immediate
        return True

    def status(self) -> McpServerStatus:
        conn = self.conn
        return McpServerStatus(
            name=self.spec.name,
            transport=self.transport,
            state=self.state,
            tool_count=len(self.tools),
            last_error=self.failure.message if self.failure else None,
            hint=self.failure.hint if self.failure else None,
            connect_attempts=self.attempts,
            restarts=self.restarts,
            source=self.spec.source,
            protocol_version=conn.protocol_version if conn is not None else None,
            ping_ms=self.last_ping_ms if self.state == "ready" else None,
        )

    def context(self, launch: Launch | None) -> ConnectContext:
        """What failure messages say about the server: where it is configured, what was launched or dialled."""
        spec = self.spec
        return ConnectContext(
            server=spec.name,
            where=where_of(spec),
            transport=self.transport,
            command=launch.command if launch else ((spec.command or "?"), *spec.args),
            cwd=launch.cwd if launch else spec.cwd,
            url=launch.url if launch else spec.url,
            startup_timeout_s=spec.startup_timeout_s,
        )
