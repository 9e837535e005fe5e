"""What a workspace runtime holds open: the event store and its one writer, the model providers (one per session
and model entry, so a scripted model's turns run on in order), and the MCP connections. Closed together."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.app.stores import open_store, writer_over
from bearagent.domain._base import frozen_json
from bearagent.domain.ids import IdGenerator, RunId
from bearagent.domain.specs import McpServerSpec, ModelEntry
from bearagent.domain.tools import ToolResult
from bearagent.hooks.mcp_tool import McpCaller, current_mcp_caller
from bearagent.hooks.protocol import JsonDict
from bearagent.ports import Asker, Clock, ModelProvider, SystemClock, Tool, ToolInterceptor, WorkspaceStore
from bearagent.providers.factory import create_provider
from bearagent.runtime.loop import AgentLoop
from bearagent.runtime.observer import RunObserver
from bearagent.runtime.plan import LoopHooks
from bearagent.runtime.retry import RetryPolicy
from bearagent.runtime.run_writer import RunWriter
from bearagent.service.leases import LeaseKeeper, recover_interrupted
from bearagent.tools.gate import ToolGate
from bearagent.tools.policy import ToolPolicy
from bearagent.workspace import LoadedWorkspace

if TYPE_CHECKING:
    from bearagent.mcp.manager import McpConnectionManager, McpServerStatus
    from bearagent.sandbox.settings import SandboxSettings


def _hook_mcp_caller(manager: McpConnectionManager, root: Path) -> McpCaller:
    """How an `mcp_tool` hook calls a tool on one of these connections (not through the gate: hooks.mcp_tool)."""

    async def call(server: str, tool: str, arguments: JsonDict) -> ToolResult:
        from bearagent.ports import ToolContext

        found = manager.find_tool(server, tool)
        if found is None:
            state = manager.server_status(server).state if server in manager.server_names else None
            why = f"is {state}" if state is not None else "is not configured"
            raise LookupError(f"MCP tool {server}.{tool} is not available: server {server!r} {why}")
        return await found.execute(frozen_json(arguments), ToolContext(workspace_root=root))

    return call


class Resources:
    """The store, the writer, the providers and the MCP connections of one runtime."""

    def __init__(
        self,
        loaded: LoadedWorkspace,
        ids: IdGenerator,
        *,
        store: WorkspaceStore | None = None,
        in_process_mcp: Mapping[str, object] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.loaded = loaded
        self.ids = ids
        self.clock: Clock = clock or SystemClock()
        self._lease: LeaseKeeper | None = None
        self._recovered = False
        self._store = store
        self._writer: RunWriter | None = None
        self._providers: dict[tuple[str, str], ModelProvider] = {}
        self._provider_override: Callable[[ModelEntry, str], ModelProvider] | None = None
        self._in_process_mcp = in_process_mcp
        self._mcp: McpConnectionManager | None = None
        self._mcp_starting = asyncio.Lock()
        """Held while the MCP connections start: runs planned at once (many callers' runs, one service) share one
        start, not one each."""

    @property
    def root(self) -> Path:
        return self.loaded.root

    @property
    def store(self) -> WorkspaceStore:
        if self._store is None:
            self._store = open_store(self.loaded)
        return self._store

    @property
    def writer(self) -> RunWriter:
        """The one writer of this runtime's store: every run and child run appends through it, and its
        subscribers see every commit."""
        if self._writer is None or self._writer.storage is not self.store:
            self._writer = writer_over(self.loaded, self.store)
        return self._writer

    def override_providers(self, make: Callable[[ModelEntry, str], ModelProvider] | None) -> None:
        """Serve every model entry with `make(entry, session_key)` instead of building its configured provider (a
        replay drives the loop with recorded turns: no provider is built, no key is read); None undoes it."""
        self._provider_override = make
        self._providers.clear()

    @property
    def lease(self) -> LeaseKeeper:
        """The heartbeat of every run this runtime executes (`service/leases.py`)."""
        if self._lease is None:
            self._lease = LeaseKeeper(self.store, self.clock)
        return self._lease

    async def recover(self) -> list[RunId]:
        """Once per runtime, when it first needs its store: record `RunInterrupted` for every running run whose
        owner is gone, so nothing shows a phantom `running` and those runs can be resumed."""
        if self._recovered:
            return []
        self._recovered = True
        return await recover_interrupted(self.store, self.writer, self.clock, self.ids)

    @property
    def has_provider_override(self) -> bool:
        """True when providers come from the embedder (tests, the Python API), not from the model entries."""
        return self._provider_override is not None

    def provider(self, entry: ModelEntry, session_key: str) -> ModelProvider:
        if self._provider_override is not None:
            return self._provider_override(entry, session_key)
        key = (session_key, entry.ref)
        provider = self._providers.get(key)
        if provider is None:
            config_dir = self.loaded.state_dir if entry.level == "workspace" else self.loaded.user_dir
            if entry.source:
                config_dir = Path(entry.source).parent
            env = self._env_for(entry)
            provider = create_provider(
                entry,
                env=env,
                base_dir=config_dir,
                registry=self.loaded.provider_factories(),
                ids=self.ids,
            )
            if env is self.loaded.env:  # a helper's key is cached with its TTL, not with the provider
                self._providers[key] = provider
        return provider

    def _env_for(self, entry: ModelEntry) -> Mapping[str, str]:
        """The environment an entry's provider reads its key from: for an `anthropic` entry whose key variable is
        unset, `apiKeyHelper`'s output (`app/key_helper.py`) in that variable."""
        env = self.loaded.env
        helper = self.loaded.api_key_helper
        var = entry.api_key_env or "ANTHROPIC_API_KEY"
        if helper is None or entry.provider != "anthropic" or env.get(var, "").strip():
            return env
        from bearagent.app.key_helper import KeyHelper

        key = KeyHelper(*helper).key(self.loaded.root, self.loaded.child_env())
        return {**env, var: key}

    def mcp_status(self) -> list[McpServerStatus] | None:
        """The session's MCP servers as started so far; None when none has been started yet."""
        return self._mcp.status() if self._mcp is not None else None

    async def mcp_manager(self) -> McpConnectionManager | None:
        """The session's MCP connections, started (in parallel) on first use; failures never fail the run. The
        connection manager is imported only for a session that has servers."""
        if self.loaded.config.execution_policy == "none":  # a chat workspace too: `config/execution.py`
            return None
        if self._mcp is None:
            specs = self.loaded.mcp.all()
            if not specs and not self._in_process_mcp:
                return None
            async with self._mcp_starting:
                if self._mcp is None:
                    from bearagent.mcp.manager import McpConnectionManager
                    from bearagent.rewind.workspace_writes import record_for_env

                    manager = McpConnectionManager(
                        specs,
                        self.loaded.child_env(),
                        self.root,
                        in_process=self._in_process_mcp,
                        sandbox=self.loaded.config.sandbox,
                        trace_context=self.loaded.plugins.trace_context,
                        writes=record_for_env(self.loaded.env),
                    )
                    await manager.start_all()
                    self._mcp = manager
        current_mcp_caller.set(_hook_mcp_caller(self._mcp, self.root))  # `mcp_tool` hooks of this run call these
        return self._mcp

    def loop(self, *, retry: RetryPolicy, hooks: LoopHooks | None, observer: RunObserver) -> AgentLoop:
        """An agent loop over this store and writer; its runs are held (owner + heartbeat) by the lease keeper. The
        workspace's file-change capture gets the blob store's limits of the user config (`rewind:`)."""
        from bearagent.rewind.capture import capture_for

        limits = self.loaded.config.rewind
        capture_for(self.root).set_limits(limits.max_file_bytes, limits.max_store_bytes)
        return AgentLoop(
            store=self.store,
            writer=self.writer,
            clock=self.clock,
            ids=self.ids,
            retry=retry,
            hooks=hooks,
            observer=observer,
            owner=self.lease.owner,
            hold=self.lease.hold,
        )

    def gate(
        self,
        tools: Mapping[str, Tool],
        *,
        policy: ToolPolicy | None = None,
        interceptor: ToolInterceptor | None = None,
        ask: Asker | None = None,
    ) -> ToolGate:
        """The tool gate of one plan (`service/planner.py` decides its tools, policy, interceptor and asker); it
        records where calls may write in the user's durable record (`rewind/workspace_writes.py`)."""
        from bearagent.rewind.workspace_writes import record_for_env

        writes = record_for_env(self.loaded.env)
        return ToolGate(tools, policy=policy, interceptor=interceptor, ask=ask, writes=writes)

    async def aclose(self) -> None:
        """Close the MCP connections, each provider's client (its connection pool) and the store: all of them even
        when one fails (`service.closing`)."""
        from bearagent.service.closing import Closer, close_all

        mcp, self._mcp = self._mcp, None
        store, self._store = self._store, None
        providers = list(self._providers.values())
        self._providers.clear()
        closers: list[Closer] = []
        if mcp is not None:
            closers.append(mcp.aclose)
        for provider in providers:
            close = getattr(provider, "aclose", None)  # not part of `ModelProvider`: a plugin's may have none
            if callable(close):
                closers.append(close)
        if store is not None:  # a PostgreSQL store closes on the caller's loop when that is its own (`aclose`)
            aclose = getattr(store, "aclose", None)
            closers.append(aclose if callable(aclose) else store.close)
        await close_all(closers)


async def connect_mcp_servers(
    specs: Sequence[McpServerSpec],
    env: Mapping[str, str],
    root: Path,
    *,
    sandbox: SandboxSettings | None,
    user_env: Mapping[str, str] | None = None,
) -> McpConnectionManager:
    """`bearagent mcp list/tools/test`'s connections: each server tried once, no background retry. `user_env` names
    the user config dir whose record of runs' writes confines a workspace's servers (None: `os.environ`)."""

    from bearagent.mcp.manager import McpConnectionManager
    from bearagent.rewind.workspace_writes import record_for_env

    writes = record_for_env(os.environ if user_env is None else user_env)
    manager = McpConnectionManager(specs, env, root, max_connect_attempts=1, sandbox=sandbox, writes=writes)
    await manager.start_all(background_retry=False)
    return manager
