"""Opening a workspace's run service: the one place a `WorkspaceRuntime` is built, over the `Resources` opened here
(store and writer, providers, MCP connections, lease keeper). Every face (the CLI, the server's registry, the
Python API, replay's scratch runtime) opens its runtime with `open_runtime`."""

from __future__ import annotations

from collections.abc import Mapping

from bearagent.app.resources import Resources
from bearagent.domain.ids import IdGenerator, Uuid4IdGenerator
from bearagent.ports import Clock, SystemClock, WorkspaceStore
from bearagent.runtime.retry import RetryPolicy
from bearagent.service.runner import WorkspaceRuntime
from bearagent.tools.gate import Asker
from bearagent.workspace import LoadedWorkspace


def open_runtime(
    loaded: LoadedWorkspace,
    *,
    store: WorkspaceStore | None = None,
    clock: Clock | None = None,
    ids: IdGenerator | None = None,
    retry: RetryPolicy | None = None,
    ask: Asker | None = None,
    in_process_mcp: Mapping[str, object] | None = None,
    permission_mode: str | None = None,
) -> WorkspaceRuntime:
    """The run service of `loaded`. Nothing is opened yet: the store on first use (`store`: one already open, e.g.
    replay's scratch store), MCP servers when an agent that names them is planned. `ask`: the terminal's asker;
    `in_process_mcp`: FastMCP servers by name (tests, the Python API); `permission_mode`: `--permission-mode`."""
    the_clock: Clock = clock or SystemClock()
    the_ids: IdGenerator = ids or Uuid4IdGenerator()
    resources = Resources(loaded, the_ids, store=store, in_process_mcp=in_process_mcp, clock=the_clock)
    return WorkspaceRuntime(
        loaded, resources, clock=the_clock, ids=the_ids, retry=retry, ask=ask, permission_mode=permission_mode
    )
