"""`/compact [focus]`: compact a session's history now, in a run of its own (`runtime/compaction_run.py`), under
the session's lock, with the agent's budgets and its compaction settings (the summary model included). The
session's next run starts from the compacted history."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId, SessionId
from bearagent.hooks.bridge import LoopHookAdapter
from bearagent.runtime.compaction import is_summary, split_point
from bearagent.runtime.observer import NullObserver, RunObserver
from bearagent.service.run_specs import compaction_run
from bearagent.service.run_types import result_of

if TYPE_CHECKING:
    from bearagent.service.runner import RunResult, WorkspaceRuntime


def nothing_to_compact(why: str) -> BearAgentError:
    return BearAgentError(
        ErrorInfo.of("invalid_request", "nothing_to_compact", f"nothing to compact: {why}"),
        hint="compact once the conversation has grown (the most recent turn is always kept as it is)",
    )


async def compact_session(
    runtime: WorkspaceRuntime,
    session_ref: str,
    *,
    agent: str | None = None,
    model: str | None = None,
    focus: str | None = None,
    observer: RunObserver | None = None,
) -> RunResult:
    """Compact the history of session `session_ref` (an id, or `continue`) with `agent`'s settings (the session's
    agent by default) and `model` as the session's model (`/model`); `focus` is given to the summariser."""
    from bearagent.service.resuming import model_calls_so_far

    await runtime.admit_and_recover()
    default = runtime.loaded.config.default_agent
    session, created = await asyncio.to_thread(runtime.sessions.resolve_session, session_ref, agent or default)
    if created:
        raise nothing_to_compact("the session has no runs yet")
    # the session row is not sealed: the agent its newest sealed run names (service/runner.py)
    spec_agent = runtime.plans.require_agent(agent or await runtime.sealed_session_agent(session, "local") or default)
    session_id = SessionId(str(session.session_id))
    async with runtime.store.session_lock(session_id, wait=True):
        history = runtime.sessions.session_history(session_id)
        plan = await runtime.plans.plan(spec_agent.name, session_key=str(session_id), model_override=model, hooks=None)
        if split_point(history, 1) == 0:
            if history and is_summary(history[0]):
                raise nothing_to_compact("the session is already a summary and its most recent turn")
            raise nothing_to_compact("the session is its most recent turn")
        position = await model_calls_so_far(runtime, session_id, None)  # the conversation's place, from the log
        spec = compaction_run(
            runtime.root,
            run_id=runtime.ids.new(RunId),
            budgets=runtime.plans.budgets_for(spec_agent, {}),
            session_id=session_id,
            history=history,
            conversation_calls=position,
        )
        hooks = runtime.hook_wiring.hooks(str(session_id), str(runtime.mode_in_force(spec_agent).mode))
        adapter = LoopHookAdapter(hooks, runtime.sessions.transcript(str(session_id))) if hooks.enabled else None
        loop = runtime.loop(hooks=adapter, observer=observer or NullObserver())  # PreCompact / PostCompact
        outcome = await loop.compact(spec, plan, focus)
        fresh = await runtime.store.fetch_session(session_id) or session
        await runtime.store.save_session(fresh.model_copy(update={"updated_at": runtime.clock.now()}))
        return result_of(outcome, session_id)
