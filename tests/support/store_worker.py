"""Subprocess workers for the store's concurrency and crash tests: `python -m tests.support.store_worker MODE ...`.

- `race PATH RUN_ID COUNT`: append `COUNT` HookExecuted events to an existing run, each time at the sequence the
  worker believes is next; print `ok N conflicts M` at the end. Several racing workers never share a sequence.
- `crash PATH SEED`: append forever (until killed): runs of random shape, each event its own transaction,
  resuming the runs a previous (killed) worker left open. Prints `ready` once it is writing.
"""

from __future__ import annotations

import random
import sys
from datetime import timedelta

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId, Uuid4IdGenerator
from bearagent.domain.run_events import HookExecutedV1
from bearagent.domain.state import RunProjection
from bearagent.runtime.reducer import SequenceConflict
from bearagent.store.sqlite import SqliteEventStore
from tests.support.events import EventFactory


def race(path: str, run_id: str, count: int) -> None:
    store = SqliteEventStore(path, busy_timeout_ms=30_000)
    factory = EventFactory(RunId(run_id), ids=Uuid4IdGenerator())  # several processes: ids must not collide
    ok = conflicts = 0
    while ok < count:
        run = store.get_run(RunId(run_id))
        assert run is not None
        factory.sequence = run.last_sequence
        event = factory.event(HookExecutedV1(hook_event="Stop", handler="race", handler_type="command", duration_ms=ok))
        try:
            store.append(event)
            ok += 1
        except SequenceConflict:
            conflicts += 1
    print(f"ok {ok} conflicts {conflicts}", flush=True)
    store.close()


def crash(path: str, seed: int) -> None:
    rng = random.Random(seed)
    store = SqliteEventStore(path)
    open_runs = [r for r in store.list_runs(limit=10_000) if r.status in ("queued", "running")]
    factories: list[EventFactory] = []
    for run in open_runs:  # resume what a killed predecessor left open
        f = EventFactory(run.run_id, ids=Uuid4IdGenerator())
        f.sequence = run.last_sequence
        f.clock.advance(timedelta(seconds=run.last_sequence))
        factories.append(f)
    print("ready", flush=True)
    while True:
        if not factories or rng.random() < 0.2:
            f = EventFactory(RunId.new(), ids=Uuid4IdGenerator())
            store.append(f.run_created(BudgetLimits(max_model_iterations=6, max_tool_calls=6)))
            factories.append(f)
        index = rng.randrange(len(factories))
        f = factories[index]
        run = store.get_run(f.run_id)
        assert run is not None
        f.sequence = run.last_sequence
        if run.status in ("succeeded", "failed", "cancelled"):
            factories.pop(index)
            continue
        event = _next_event(f, run, rng, store)
        try:
            store.append(event)
        except BearAgentError as exc:  # a budget stop: record it like the runtime would
            if exc.info.category != "budget":
                raise
            f.rejected()
            store.append(f.run_failed("budget", exc.info.message[:200]))


def _next_event(f: EventFactory, run: RunProjection, rng: random.Random, store: SqliteEventStore) -> Event:
    if run.status == "queued":
        return f.run_started() if rng.random() < 0.95 else f.run_cancelled()
    if run.active_activity_id is not None:
        activity = next(a for a in store.list_activities(f.run_id) if a.status in ("pending", "running"))
        f.activity_id = activity.activity_id
        f.model_call_id = activity.model_call_id
        f.tool_call_id = activity.tool_call_id
        roll = rng.random()
        if roll < 0.03:
            return f.run_cancelled()
        if activity.kind == "model_call":
            if activity.status == "pending":
                return f.model_started()
            return (
                f.model_completed(rng.randrange(500), rng.randrange(100), rng.randrange(5))
                if roll < 0.9
                else f.model_failed(3, 0, 1)
            )
        if activity.status == "pending":
            return f.tool_started()
        return f.tool_completed() if roll < 0.9 else f.tool_failed()
    roll = rng.random()
    if roll < 0.45:
        return f.model_requested()
    if roll < 0.85:
        return f.tool_requested(rng.choice(["Read", "Write", "Bash"]))
    if roll < 0.9:
        return f.event(HookExecutedV1(hook_event="PreToolUse", handler="h", handler_type="command", duration_ms=1))
    return f.run_succeeded()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "race":
        race(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif mode == "crash":
        crash(sys.argv[2], int(sys.argv[3]))
    else:
        raise SystemExit(f"unknown mode {mode!r}; use race or crash")
