"""A runtime's session hooks: the hook dispatcher of each session (one group assembly for runs and `hooks test`,
`hooks/bridge.py`), hook executions recorded as facts of the run they happen in, and the session-level ones
(SessionStart before a session's first run here, SessionEnd when the process closes it) kept until the session's
next run records them: in this process, or, kept on the session record, in the next one. The same goes for the
context waiting for the model with the session's next prompt (SessionStart's `additionalContext`, what a finished
`async` handler said): one list per session, shared by its dispatchers, kept on the session record at close.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, cast

from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import SessionId
from bearagent.domain.run_events import HookExecutedV1, parse_run_event_payload
from bearagent.hooks.bridge import SessionHooks, assemble_hook_groups
from bearagent.hooks.dispatcher import HookDispatcher, HookSettings
from bearagent.runtime.run_context import current_run
from bearagent.service.children import suppressed_hook_events

if TYPE_CHECKING:
    from bearagent.mcp.elicitation import Elicitor
    from bearagent.service.host import HookHost


PENDING_CONTEXT = "PendingHookContext"
"""A session-record item (not a run event): context a hook left for the session's next prompt."""


class SessionHookWiring:
    """The session hooks of one workspace runtime (see the module docstring)."""

    def __init__(self, runtime: HookHost) -> None:
        self._rt = runtime
        self._started: set[str] = set()
        self._facts: dict[str, list[HookExecutedV1]] = {}
        """Hook executions of each session outside any run (SessionStart before its first run, SessionEnd)."""
        self._context: dict[str, list[str]] = {}
        """Per session: context for the model with its next prompt (`HookDispatcher.pending_context`)."""

    def hooks(self, session_id: str, permission_mode: str) -> SessionHooks:
        """The hooks of a session: one group assembly (`hooks/bridge.py`), executions recorded as facts."""
        from bearagent.rewind.workspace_writes import record_for_env

        groups, functions = assemble_hook_groups(
            self._rt.loaded.hooks.all(),
            self._rt.loaded.agents.all(),
            self._rt.loaded.hooks.python_handlers(),
            exclude_events=suppressed_hook_events.get(),  # inside a judge run: its starting events stay quiet
            workspace_agent_hooks=self._rt.loaded.hooks.disabled_by is None,
        )
        enabled = self._rt.loaded.config.execution_policy == "local" and bool(groups)
        settings = HookSettings(
            workspace_root=self._rt.root,
            session_id=session_id,
            permission_mode=permission_mode,
            env=self._rt.loaded.child_env(),
            sandbox=self._rt.loaded.config.sandbox,
            writes=record_for_env(self._rt.loaded.env),
            trace_context=self._rt.loaded.plugins.trace_context,
        )
        dispatcher = HookDispatcher(
            groups,
            python_handlers=functions,
            judge=self._rt.children.judge,
            agent_judge=self._rt.children.agent_judge,
            record=self._recorder(session_id),
            transcript=self._rt.sessions.transcript(session_id),
            settings=settings,
            pending_context=self._context.setdefault(session_id, []),
        )
        return SessionHooks(dispatcher=dispatcher, enabled=enabled)

    def _recorder(self, session_key: str) -> Callable[[HookExecutedV1], Awaitable[None]]:
        """Hook executions become facts of the run they happen in; a session-level one (SessionStart before any
        run, SessionEnd after the last) is kept and recorded at the start of the session's next run (in this
        process, or, kept on the session record at close, in the next one)."""

        async def record(payload: HookExecutedV1) -> None:
            run = current_run.get()
            if run is None:
                self._facts.setdefault(session_key, []).append(payload)
                return
            with contextlib.suppress(BearAgentError):
                await run.recorder.append(payload)

        return record

    def elicitor(self, hooks: SessionHooks, *, wait: bool = False) -> Elicitor | None:
        """Who answers MCP servers' questions in a run's tool calls: its Elicitation hooks (with the
        ElicitationResult hooks after), then a person (the interactive session; with `wait`, as for tool
        approvals, whoever answers it through the approvals API or CLI: `service/elicitations.py`), else nobody
        (declined, the model reads the question)."""
        dispatcher = hooks.dispatcher
        person = self._rt.answer_elicitation
        if person is None and wait:
            from bearagent.domain.ids import SessionId
            from bearagent.service.elicitations import logged_asker

            ids = self._rt.ids
            person = logged_asker(
                lambda run_id, after: self._rt.store.fetch_events(run_id, after_sequence=after),
                lambda: str(ids.new(SessionId)).replace("-", "")[-12:],
            )
        with_hooks = hooks.enabled and (
            dispatcher.has_hooks("Elicitation") or dispatcher.has_hooks("ElicitationResult")
        )
        if not with_hooks and person is None:
            return None
        from bearagent.hooks.elicitation import hook_elicitor

        return hook_elicitor(dispatcher if with_hooks else None, person)

    async def prelude(self, session_key: str, session_id: SessionId | None) -> tuple[HookExecutedV1, ...]:
        """The session-level facts a run records first: those kept on the session record, then this process's."""
        kept: list[HookExecutedV1] = []
        if session_id is not None:
            for item in await self._rt.store.take_session_facts(session_id):
                with contextlib.suppress(BearAgentError, KeyError, TypeError):
                    fact = cast(dict[str, JsonValue], item)
                    if fact.get("event_type") == PENDING_CONTEXT:  # context kept for this prompt by another process
                        self._context.setdefault(session_key, []).insert(0, str(fact["text"]))
                        continue
                    payload = parse_run_event_payload(
                        str(fact["event_type"]),
                        int(cast(int, fact["schema_version"])),
                        cast(dict[str, JsonValue], fact["payload"]),
                    )
                    if isinstance(payload, HookExecutedV1):
                        kept.append(payload)
        return (*kept, *self._facts.pop(session_key, []))

    async def _fire(self, event: str, session_id: str, payload: Mapping[str, JsonValue]) -> None:
        agent = self._rt.loaded.agents.get(self._rt.loaded.config.default_agent)
        mode = str(self._rt.mode_in_force(agent).mode) if agent is not None else "default"
        hooks = self.hooks(session_id, mode)
        if hooks.enabled:
            await hooks.dispatcher.fire(event, payload)  # pyright: ignore[reportArgumentType]

    async def start(self, session_key: str, hooks: SessionHooks, *, created: bool) -> None:
        """SessionStart, once per session in this process (before its first run here)."""
        if session_key not in self._started and hooks.enabled:
            outcome = await hooks.dispatcher.fire("SessionStart", {"source": "startup" if created else "resume"})
            if outcome.additional_context:  # Claude Code gives it to the model with the session's first prompt
                hooks.dispatcher.pending_context.append(outcome.additional_context)
            await self._instructions_loaded(hooks)
        self._started.add(session_key)

    async def _instructions_loaded(self, hooks: SessionHooks) -> None:
        """InstructionsLoaded (observation only): the project instructions file, then each file it imports."""
        instructions = self._rt.loaded.instructions
        if instructions is None or not hooks.dispatcher.has_hooks("InstructionsLoaded"):
            return
        main = str(instructions.path)
        await hooks.dispatcher.fire("InstructionsLoaded", {"file_path": main, "load_reason": "session_start"})
        for imported in instructions.imports:
            payload: dict[str, JsonValue] = {
                "file_path": str(self._rt.root / imported),
                "load_reason": "include",
                "parent_file_path": main,
            }
            await hooks.dispatcher.fire("InstructionsLoaded", payload)

    async def close(self) -> None:
        """SessionEnd for every session this process started; facts still pending are kept on their session
        record, for its next run (anywhere) to record."""
        for session_id in list(self._started):
            await self._fire("SessionEnd", session_id, {"reason": "other"})
        background = sys.modules.get("bearagent.tools.background")  # loaded only once a shell was started
        if background is not None:
            for session_id in self._started:
                await asyncio.to_thread(background.end_session_shells, session_id)
        self._started.clear()
        for session_key in {*self._facts, *self._context}:
            facts = self._facts.get(session_key, [])
            kept: list[JsonValue] = [
                {"event_type": "HookExecuted", "schema_version": 1, "payload": f.model_dump(mode="json")} for f in facts
            ]
            kept.extend({"event_type": PENDING_CONTEXT, "text": t} for t in self._context.get(session_key, []))
            if kept and not session_key.startswith(("detached:", "judge:")):
                with contextlib.suppress(BearAgentError, ValueError):
                    await self._rt.store.queue_session_facts(SessionId(session_key), kept)
        self._facts.clear()
        self._context.clear()
