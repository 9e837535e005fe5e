"""`RunWriter`: the one reducer-driven write of the runtime, over the async storage port (`ports.RunStorage`).

load the run's state and version -> apply the events with the reducer (state machines, budgets) -> commit events,
new state and ended activities if the stored version still matches. Any store gets the same rules because the
store only commits; the reducing happens here, once.

A cache of each run's state (the state this writer last committed) spares the load on the common path: it is
trusted only while the store confirms the version at commit; a `VersionConflict`, or a refusal the cached state
gave, reloads the run from the store and reduces again, so a stale cache never decides anything.

After each commit the writer publishes `(run_id, sequence, event)` to its subscribers (`subscribe`), in commit
order: the one live view of the log that the stream protocol, the terminal, plugin sinks and child runs share.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.recent import remember
from bearagent.domain.run_events import RunEventPayload, event_type_of, parse_run_event_payload
from bearagent.domain.state import RunProjection
from bearagent.ports import (
    ActivityIdTaken,
    EventIdTaken,
    RunCommit,
    RunCommits,
    StoredRun,
    VersionConflict,
    commit_now_of,
)
from bearagent.runtime.reducer import InvalidTransition, SequenceConflict, apply
from bearagent.runtime.run_state import ActivityState, RunState

_log = logging.getLogger("bearagent.events")

DEFAULT_CACHE_SIZE = 256


@dataclass(frozen=True, slots=True)
class Committed:
    """One committed event as the writer publishes it."""

    run_id: RunId
    sequence: int
    event: Event


@dataclass(frozen=True, slots=True)
class TokenDelta:
    """A piece of model text, published as it is generated and never stored: the run, the model call's activity,
    the number of characters of that call's text before it, and the run's last committed sequence (`after`)."""

    run_id: RunId
    activity_id: str
    offset: int
    text: str
    after: int


Published = Committed | TokenDelta
Subscriber = Callable[[Published], None]


def prepare_commit(
    stored: StoredRun | None, events: Sequence[Event], payload_texts: Sequence[str | None] = ()
) -> RunCommit:
    """The commit the reducer makes of consecutive `events` of one run on top of `stored` (None: a new run).
    Raises what the reducer raises (`InvalidTransition`, `BudgetExceeded`, `SequenceConflict`). The reducer works
    on `stored` in place (as the store and replay do, so an append never copies a run): it is used up either way."""
    run_id = str(events[0].run_id)
    version = 0 if stored is None else stored.version
    state = None if stored is None else stored.state
    active = None if stored is None else stored.active
    finished: list[ActivityState] = []
    requested: list[str] = []
    for event in events:
        state, changed = apply(
            state,
            active,
            event.event_type,
            event.schema_version,
            event.sequence,
            event.occurred_at,
            event.payload,
            run_id=run_id,
        )
        if changed is not None and changed.requested_sequence == event.sequence:
            if changed.activity_id in requested:
                raise InvalidTransition(
                    event.event_type,
                    "already has this activity",
                    f"activity {changed.activity_id} was requested before; every activity needs a new id",
                    run_id=run_id,
                )
            requested.append(changed.activity_id)
        active = (changed or active) if state.active_activity_id is not None else None
        if changed is not None and active is None:  # the activity ended: it moves out of the run row
            finished.append(changed)
    assert state is not None
    return RunCommit(
        run_id=RunId(run_id),
        expected_version=version,
        events=tuple(events),
        state=state,
        active=active,
        finished=tuple(finished),
        requested_activity_ids=tuple(requested),
        payload_texts=tuple(payload_texts),
    )


class RunWriter:
    """Appends events of any run through the reducer into a `RunStorage`. One per store and process (it holds the
    cache and the subscribers); safe for many concurrent runs on one event loop. Two appends racing for the same
    sequence are told apart by the store's version check: the loser gets `SequenceConflict`."""

    def __init__(self, storage: RunCommits, *, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        self.storage = storage
        self._commit_now = commit_now_of(storage)
        self._cache: dict[str, StoredRun] = {}
        self._cache_size = cache_size
        self._subscribers: list[Subscriber] = []

    # ---- subscribers -----------------------------------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call `subscriber` after every commit, once per committed event in sequence order, and with every token
        delta (`publish_token`); returns the function that unsubscribes. A subscriber is an observer: it must not
        block, and its failure never touches a run."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def _publish(self, events: Sequence[Event]) -> None:
        for event in events:
            self._tell(Committed(event.run_id, event.sequence, event))

    def publish_token(self, run_id: RunId, activity_id: str, offset: int, text: str) -> None:
        """Hand a token delta of a model call to the subscribers (tokens are live only, never committed)."""
        if self._subscribers:
            cached = self._cache.get(str(run_id))
            self._tell(TokenDelta(run_id, activity_id, offset, text, 0 if cached is None else cached.version))

    def _tell(self, item: Published) -> None:
        for subscriber in tuple(self._subscribers):
            try:
                subscriber(item)
            except Exception:
                _log.warning("subscriber %r failed on %r", subscriber, type(item).__name__, exc_info=True)

    # ---- appending -------------------------------------------------------------------------------------------

    async def append(self, event: Event) -> RunProjection:
        return await self.append_many((event,))

    async def append_many(
        self,
        events: Sequence[Event],
        *,
        on_commit: Callable[[RunProjection], None] | None = None,
        dumped_from: Sequence[RunEventPayload] | None = None,
        payload_texts: Sequence[str | None] = (),
    ) -> RunProjection:
        """Validate, reduce and commit consecutive events of ONE run: all become facts, or none does. Returns the
        run projection after the last. Raises `SequenceConflict` (another writer took the sequence),
        `InvalidTransition`, `BudgetExceeded`, `BearAgentError(validation.*)`, `StoreError`.

        `dumped_from`: the payload models the events' payloads were dumped from (the recorder's), one per event.
        A model instance was validated when it was built, so its dump is not parsed back into a model here; the
        pair (type, version) of each is still checked against its event. Without it, every payload is validated.
        `payload_texts` (only with `dumped_from`): each payload's JSON text as the store writes it, encoded by the
        recorder from the same dump it froze (None for one: the store encodes it), so a payload is encoded once.

        A commit handed to the store is awaited to its end even if the caller is cancelled meanwhile: `on_commit`
        is called once it is a fact (before the cancellation goes on), so the caller's view of the log stays true.
        """
        if not events:
            raise ValueError("append_many needs at least one event")
        run_id = str(events[0].run_id)
        if dumped_from is not None and len(dumped_from) != len(events):
            raise ValueError("dumped_from needs one payload model per event")
        if payload_texts and (dumped_from is None or len(payload_texts) != len(events)):
            raise ValueError("payload_texts needs dumped_from and one text (or None) per event")
        for i, event in enumerate(events):
            if str(event.run_id) != run_id:
                raise ValueError("append_many takes events of one run")
            if dumped_from is None or event_type_of(dumped_from[i]) != (event.event_type, event.schema_version):
                parse_run_event_payload(event.event_type, event.schema_version, event.payload)
        state, cancelled = await self._write(run_id, events, payload_texts)
        projection = state.to_projection()
        if on_commit is not None:
            on_commit(projection)
        self._publish(events)
        if cancelled is not None:
            raise cancelled
        return projection

    async def _write(
        self, run_id: str, events: Sequence[Event], texts: Sequence[str | None]
    ) -> tuple[RunState, asyncio.CancelledError | None]:
        cached = self._cache.pop(run_id, None)  # put back only after a commit
        if cached is not None:
            try:
                commit = prepare_commit(cached, events, texts)
            except BearAgentError:
                pass  # maybe stale: decide on what the store says
            else:
                try:
                    return commit.state, await self._commit(commit)
                except VersionConflict:
                    pass
        commit = prepare_commit(await self.storage.load_run(RunId(run_id)), events, texts)
        try:
            return commit.state, await self._commit(commit)
        except VersionConflict as exc:  # another writer got in between the load and the commit
            raise SequenceConflict(run_id, expected=exc.stored_version + 1, got=events[0].sequence) from None

    async def _commit(self, commit: RunCommit) -> asyncio.CancelledError | None:
        """Commit and cache the new state; returns the cancellation that arrived while the store committed."""
        cancelled: asyncio.CancelledError | None = None
        try:
            if self._commit_now is None or not self._commit_now(commit):  # at once: no task, nothing to cancel
                task = asyncio.ensure_future(self.storage.commit(commit))
                while not task.done():
                    try:
                        await asyncio.wait((task,))  # a cancelled wait leaves the commit running
                    except asyncio.CancelledError as exc:
                        cancelled = exc  # the store goes on committing: learn the outcome, then let the cancel through
                if task.cancelled():
                    raise cancelled or asyncio.CancelledError()
                if cancelled is not None and task.exception() is not None:
                    raise cancelled  # nothing was written: the cancellation wins over the refusal
                task.result()
        except ActivityIdTaken as exc:
            event = commit.events[0]
            raise InvalidTransition(
                event.event_type,
                "already has this activity",
                f"activity {exc.activity_id} was requested before; every activity needs a new id",
                run_id=str(commit.run_id),
            ) from None
        except EventIdTaken as exc:
            event = commit.events[0]
            raise InvalidTransition(
                event.event_type,
                "already holds this event id",
                f"event {exc.event_id} is already stored; every event needs a new event_id",
                run_id=str(commit.run_id),
            ) from None
        remember(self._cache, str(commit.run_id), StoredRun(commit.state, commit.active), self._cache_size)
        return cancelled


__all__ = ["Committed", "Published", "RunWriter", "Subscriber", "TokenDelta", "prepare_commit"]
