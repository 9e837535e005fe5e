"""The Python API: open a workspace, run prompts (async or sync), stream live events, read the log.

    from bearagent import open_workspace

    with open_workspace("examples/quickstart") as ws:
        result = ws.run_sync("Read docs/project.md and write a summary to outputs/intro.md")
        print(result.status, result.final)

The CLI and the HTTP server are thin layers over this module.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from bearagent.app.runtime import open_runtime
from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.state import ActivityProjection, RunProjection
from bearagent.domain.stream import StreamEventModel
from bearagent.plugins.manager import PluginHost
from bearagent.service.runner import RunOptions, RunResult, WorkspaceRuntime
from bearagent.workspace import load_workspace

if TYPE_CHECKING:
    from bearagent.service.replay import DryReplay, RunReplay
from bearagent.runtime.observer import RunObserver
from bearagent.runtime.run_refs import resolve_run_ref
from bearagent.runtime.streaming import RunTreeStream, follow_run
from bearagent.tools.gate import Asker


class Workspace:
    """One opened workspace. Use as a context manager (sync or async) or call `close()` / `aclose()`.

    Made by `bearagent.open_workspace(path)` (which loads the files and opens the store, providers and MCP
    servers), never by calling `Workspace()`: a direct call raises `TypeError` naming `open_workspace`."""

    __slots__ = ("_runtime",)
    _runtime: WorkspaceRuntime

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError(
            "Workspace() cannot be constructed directly: use bearagent.open_workspace(path), which loads the "
            "workspace's files and opens its store, providers and MCP servers (docs/python-api.md)."
        )

    @classmethod
    def _over(cls, runtime: WorkspaceRuntime) -> Workspace:
        """The workspace over an opened run service: how `open_workspace` (and only it) makes one."""
        workspace = object.__new__(cls)
        workspace._runtime = runtime
        return workspace

    @property
    def root(self) -> Path:
        return self._runtime.root

    # ---- running ----

    async def run(
        self,
        prompt: str,
        *,
        agent: str | None = None,
        model: str | None = None,
        session: str | None = None,
        budgets: Mapping[str, int] | None = None,
        observer: RunObserver | None = None,
        wait_approvals: bool = False,
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> RunResult:
        """Run `prompt` to the end. `session=None` starts a new session, `"continue"` continues the latest one,
        a session id continues that one. `budgets` overrides budget fields (`max_tool_calls=...`). With
        `wait_approvals` and no asker, a call that needs approval leaves the run `waiting` (status "waiting")
        for `answer_approval` instead of being denied. `metadata`: the caller's own fields for the run, recorded on
        it (bounded: at most 32 scalar keys, none naming a secret)."""
        options = RunOptions(
            agent=agent,
            model=model,
            session=session,
            budgets=dict(budgets or {}),
            wait_approvals=wait_approvals,
            metadata=metadata,
        )
        return await self._runtime.run(prompt, options, observer)

    def run_sync(
        self,
        prompt: str,
        *,
        agent: str | None = None,
        model: str | None = None,
        session: str | None = None,
        budgets: Mapping[str, int] | None = None,
    ) -> RunResult:
        """`run` for synchronous code (runs its own event loop; do not call it from inside one)."""
        return asyncio.run(self.run(prompt, agent=agent, model=model, session=session, budgets=budgets))

    async def stream(
        self,
        prompt: str,
        *,
        agent: str | None = None,
        model: str | None = None,
        session: str | None = None,
        budgets: Mapping[str, int] | None = None,
        children: bool = False,
    ) -> AsyncIterator[StreamEventModel]:
        """Run `prompt` and yield its live stream events (SPEC §14) as they happen, each with its `run_id` and
        `seq`; with `children=True` also those of the child runs it starts (Task, actions, hook judges). The run's
        final record is not yielded (read it with `runs()` / `inspect`, or use `run` with an observer). Stopping
        the iteration cancels the run."""
        runtime = self._runtime
        run_id = runtime.ids.new(RunId)
        options = RunOptions(agent=agent, model=model, session=session, budgets=dict(budgets or {}), run_id=run_id)
        queue: asyncio.Queue[StreamEventModel | None] = asyncio.Queue()
        follow = RunTreeStream(run_id, queue.put_nowait, children=children)
        unsubscribe = runtime.writer.subscribe(follow)
        task = asyncio.create_task(runtime.run(prompt, options))
        task.add_done_callback(lambda _t: queue.put_nowait(None))
        try:
            while True:
                event = await queue.get()
                if event is None:
                    break
                yield event
            task.result()  # re-raise a configuration error that stopped the run before it started
        finally:
            unsubscribe()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def stream_run(self, run_ref: str, *, after_seq: int = 0) -> AsyncIterator[StreamEventModel]:
        """The stream events (SPEC §14, with `run_id` and `seq`) of one run after log sequence `after_seq` (0: from
        its start): caught up from the log, then live until the run ends, without gaps or duplicates. A consumer
        that reconnects passes the `seq` of the last event it has all events of; a finished run is replayed from
        the log. `run_ref` is a run id, a unique prefix or `last`."""
        store = self._runtime.store
        run_id = await resolve_run_ref(store, run_ref, where=str(store.path))
        async for event in follow_run(store, self._runtime.writer, run_id, after_seq=after_seq):
            yield event

    async def resume(self, run_ref: str, *, observer: RunObserver | None = None) -> RunResult:
        """Continue a stopped run from its log: an interrupted one (its process died), or a waiting one whose
        approval was answered (`answer_approval`). `run_ref` is a run id, a unique prefix or `last`."""
        store = self._runtime.store
        run_id = await resolve_run_ref(store, run_ref, where=str(store.path))
        return await self._runtime.resume(run_id, observer)

    async def answer_approval(
        self, run_ref: str, approval_id: str, decision: str, *, answered_by: str = "api", resume: bool = True
    ) -> RunResult | None:
        """Answer a waiting run's approval once (`allow_once`, `allow_always` or `deny`; a second or late answer is
        refused) and, with `resume`, continue the run to its end here."""
        from bearagent.domain.run_events import APPROVAL_CHOICES
        from bearagent.service.resuming import answer_approval

        if decision not in APPROVAL_CHOICES:
            raise BearAgentError(
                ErrorInfo.of("invalid_request", "bad_decision", f"decision {decision!r} is not one of the answers"),
                hint=f"answer with one of {', '.join(APPROVAL_CHOICES)}",
            )
        store = self._runtime.store
        run_id = await resolve_run_ref(store, run_ref, where=str(store.path))
        await answer_approval(self._runtime, run_id, approval_id, decision, answered_by=answered_by)  # pyright: ignore[reportArgumentType]
        return await self._runtime.resume(run_id) if resume else None

    async def compact(
        self,
        session: str,
        *,
        focus: str | None = None,
        agent: str | None = None,
        model: str | None = None,
        observer: RunObserver | None = None,
    ) -> RunResult:
        """Compact the history of `session` (an id, or `"continue"` for the latest) now, as `/compact` does: its
        earlier turns become a summary (written by `compaction.model`, else the agent's own model, told to keep
        `focus`), in a run of its own; the session's next run starts from the summary (docs/runtime.md#compaction)."""
        from bearagent.service.compacting import compact_session

        return await compact_session(self._runtime, session, agent=agent, model=model, focus=focus, observer=observer)

    async def replay(self, run_ref: str, *, dry: bool = False) -> RunReplay | DryReplay:
        """Re-drive a run from its log without calling a model (read-only tool calls run again and are compared
        with the log; nothing else is executed), or with `dry=True` only check that the log is a valid run. The
        report's `ok` says whether every step matched. See docs/replay.md."""
        from bearagent.app.replay import replay_run
        from bearagent.service.replay import dry_replay

        store = self._runtime.store
        run_id = await resolve_run_ref(store, run_ref, where=str(store.path))

        def events_of(ref: str) -> Sequence[Event]:
            return store.read_events(RunId(ref))

        if dry:
            return dry_replay(events_of, str(run_id))
        return await replay_run(self._runtime.loaded, events_of, str(run_id))  # checks guards and trust first

    async def run_action(self, name: str, inputs: Mapping[str, JsonValue] | None = None) -> RunResult:
        """Run action `name` with `inputs` (trigger type `api_action`)."""
        return await self._runtime.run_action(name, dict(inputs or {}), trigger_type="api_action")

    # ---- reading the log ----

    def runs(self, *, limit: int = 20) -> Sequence[RunProjection]:
        return self._runtime.store.list_runs(limit=limit)

    def run_info(self, run_ref: str) -> RunProjection:
        """A run by full id, unique prefix or `last`."""
        store = self._runtime.store
        found = store.get_run(store.resolve_run_ref(run_ref))
        assert found is not None
        return found

    def events(self, run_ref: str) -> Sequence[Event]:
        store = self._runtime.store
        return store.read_events(store.resolve_run_ref(run_ref))

    def activities(self, run_ref: str) -> Sequence[ActivityProjection]:
        store = self._runtime.store
        return store.list_activities(store.resolve_run_ref(run_ref))

    # ---- lifecycle ----

    async def aclose(self) -> None:
        await self._runtime.aclose()

    def close(self) -> None:
        asyncio.run(self.aclose())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def open_workspace(
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    plugins: PluginHost | None = None,
    ask: Asker | None = None,
    in_process_mcp: Mapping[str, object] | None = None,
) -> Workspace:
    """Open the workspace at `path` (default: discovered from the current directory, like the CLI)."""
    root = Path(path) if path is not None else None
    loaded = load_workspace(root, env=env, plugins=plugins)
    return Workspace._over(open_runtime(loaded, ask=ask, in_process_mcp=in_process_mcp))  # pyright: ignore[reportPrivateUsage]


def runtime_of(workspace: Workspace) -> WorkspaceRuntime:
    """The private run service behind `workspace`, for BearAgent's own tests and benchmarks: not a public name
    (`Workspace.runtime` left the public API in issue 30; docs/python-api.md)."""
    return workspace._runtime  # pyright: ignore[reportPrivateUsage]
