"""A second process on a backing store, for the store contract suite: `python -m tests.support.storage_worker
FACTORY LOCATION MODE ...` (factories: `tests.support.storage_factories`).

- `append RUN_ID COUNT`: append COUNT HookExecuted events to an existing run through a `RunWriter`, each at the
  sequence the worker believes is next, retrying on `SequenceConflict`; print `ok N conflicts M`.
- `lock SESSION_ID`: hold the session lock, print `locked`, release it when stdin closes.
"""

from __future__ import annotations

import asyncio
import sys

from bearagent.domain.ids import RunId, SessionId, Uuid4IdGenerator
from bearagent.domain.run_events import HookExecutedV1
from bearagent.runtime.reducer import SequenceConflict
from bearagent.runtime.run_writer import RunWriter
from tests.support.events import EventFactory
from tests.support.storage_factories import FACTORIES


async def append(factory: str, location: str, run_id: str, count: int) -> None:
    storage = FACTORIES[factory].open(location)
    writer = RunWriter(storage)
    events = EventFactory(RunId(run_id), ids=Uuid4IdGenerator())
    ok = conflicts = 0
    while ok < count:
        run = await storage.fetch_run(RunId(run_id))
        assert run is not None
        events.sequence = run.last_sequence
        event = events.event(HookExecutedV1(hook_event="Stop", handler="w", handler_type="command", duration_ms=ok))
        try:
            await writer.append(event)
            ok += 1
        except SequenceConflict:
            conflicts += 1
    print(f"ok {ok} conflicts {conflicts}", flush=True)
    FACTORIES[factory].close(storage)


async def lock(factory: str, location: str, session_id: str) -> None:
    storage = FACTORIES[factory].open(location)
    async with storage.session_lock(SessionId(session_id), wait=False):
        print("locked", flush=True)
        await asyncio.to_thread(sys.stdin.read)
    FACTORIES[factory].close(storage)


if __name__ == "__main__":
    factory_name, where, mode = sys.argv[1:4]
    if mode == "append":
        asyncio.run(append(factory_name, where, sys.argv[4], int(sys.argv[5])))
    elif mode == "lock":
        asyncio.run(lock(factory_name, where, sys.argv[4]))
    else:
        raise SystemExit(f"unknown mode {mode!r}; use append or lock")
