"""`RunRecorder`: turns typed payloads into envelopes with the next sequence and appends them through the run
writer (`runtime/run_writer.py`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import orjson

from bearagent.domain._base import JsonMapping, frozen_json, frozen_parsed_json
from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import EVENT_TYPE_RE, Event
from bearagent.domain.ids import CausationId, CorrelationId, EventId, IdGenerator, RunId, retyped
from bearagent.domain.run_events import RunEventPayload, event_type_of
from bearagent.domain.state import RunProjection
from bearagent.ports import Clock
from bearagent.runtime.run_state import trusted_model
from bearagent.runtime.run_writer import RunWriter

_log = logging.getLogger("bearagent.events")


def encoded_payload(payload: RunEventPayload) -> tuple[JsonMapping, str | None]:
    """A payload model's JSON form, bounded and frozen, and its stored text (what the store's `dumps_json` writes),
    from one dump: the text is encoded first, and its length vouches for the size bounds (`frozen_parsed_json`),
    so the dump is frozen in place without the full walk. A dump with a float (its text may say `null` for a NaN,
    which the full check refuses) or an integer beyond 64 bits (orjson refuses it) takes the full check, and its
    text is left to the store (None)."""
    dumped = payload.model_dump(mode="json")
    try:
        text = orjson.dumps(dumped).decode()
    except TypeError:
        return frozen_json(dumped), None
    frozen, floats = frozen_parsed_json(text, dumped)
    if floats:
        return frozen_json(payload.model_dump(mode="json")), None
    return frozen, text


def _event(
    *,
    event_id: EventId,
    run_id: RunId,
    sequence: int,
    event_type: str,
    schema_version: int,
    occurred_at: datetime,
    causation_id: CausationId | None,
    correlation_id: CorrelationId,
    payload: JsonMapping,
) -> Event:
    """The envelope of a fact this recorder made. Its fields are typed by construction (ids from the generator,
    the type and version from the payload registry, the sequence counted here, the payload bounded and frozen by
    `encoded_payload`), so only what can still be wrong is checked: the clock's time zone; anything unexpected
    goes through full validation instead."""
    if (
        type(event_id) is EventId
        and type(run_id) is RunId
        and type(correlation_id) is CorrelationId
        and (causation_id is None or type(causation_id) is CausationId)
        and sequence >= 1
        and occurred_at.tzinfo is UTC
        and EVENT_TYPE_RE.match(event_type) is not None
        and 1 <= schema_version <= 1_000
    ):
        return trusted_model(
            Event,
            {
                "event_id": event_id,
                "run_id": run_id,
                "sequence": sequence,
                "event_type": event_type,
                "schema_version": schema_version,
                "occurred_at": occurred_at,
                "causation_id": causation_id,
                "correlation_id": correlation_id,
                "payload": payload,
            },
        )
    return Event(
        event_id=event_id,
        run_id=run_id,
        sequence=sequence,
        event_type=event_type,
        schema_version=schema_version,
        occurred_at=occurred_at,
        causation_id=causation_id,
        correlation_id=correlation_id,
        payload=payload,
    )


class RunRecorder:
    """Appends the facts of one run in order. The writer's reducer decides whether each fact may happen; a refusal
    (budget, invalid transition, sequence conflict) propagates as a `BearAgentError` and nothing is written."""

    def __init__(
        self,
        *,
        writer: RunWriter,
        clock: Clock,
        ids: IdGenerator,
        run_id: RunId,
        correlation_id: CorrelationId | None = None,
        last_sequence: int = 0,
        sinks: Sequence[Callable[[Event], None]] = (),
        last_event_id: EventId | None = None,
    ) -> None:
        self._writer = writer
        self._clock = clock
        self._ids = ids
        self.run_id = run_id
        self.correlation_id = correlation_id or ids.new(CorrelationId)
        self._sequence = last_sequence
        self._last_event_id: EventId | None = last_event_id
        self.projection: RunProjection | None = None
        self._sinks = tuple(sinks)
        self._held: list[tuple[RunEventPayload, datetime]] = []

    @property
    def sequence(self) -> int:
        return self._sequence

    async def load(self) -> RunProjection | None:
        """Read the run's projection from the store (a recorder taking over a run someone else last wrote to)."""
        stored = await self._writer.storage.load_run(self.run_id)
        self.projection = stored.state.to_projection() if stored is not None else None
        if self.projection is not None:  # appends go on after what the other writer appended
            self._sequence = self.projection.last_sequence
        return self.projection

    async def append(self, payload: RunEventPayload) -> RunProjection:
        return await self.append_many((payload,))

    def hold(self, payload: RunEventPayload) -> None:
        """Keep a fact, stamped now, to be committed with the next append in the same transaction: for a completion
        that the next fact follows with no external action in between (a tool call's result and the next model
        request, a model turn's end and its first tool call's request). The facts are still durable before the next
        action starts, since that action waits for the commit of its own request; what is saved is a transaction.
        Whoever holds must `flush()` before doing anything else that is not an append (running hooks or tools,
        asking a server, planning, handing the run back); `projection` does not show held facts until then."""
        self._held.append((payload, self._clock.now()))

    @property
    def holding(self) -> bool:
        return bool(self._held)

    async def flush(self) -> RunProjection | None:
        """Commit the held facts now (None: nothing was held)."""
        if not self._held:
            return None
        return await self._append(())

    async def append_many(self, payloads: Sequence[RunEventPayload]) -> RunProjection:
        """Append consecutive facts in one transaction (all or none), e.g. an activity's Requested + Started; facts
        held before (`hold`) go first, in the same transaction. If the reducer refuses the batch (a budget, say),
        the held facts are committed alone and the refusal is raised. A cancellation that arrives while the store
        commits is raised after the commit is recorded here."""
        try:
            return await self._append(payloads)
        except BearAgentError:
            if self._held:  # nothing was written: the held facts are facts all the same
                await self._append(())
            raise

    async def _append(self, payloads: Sequence[RunEventPayload]) -> RunProjection:
        events: list[Event] = []
        sequence = self._sequence
        last_event_id = self._last_event_id
        now = self._clock.now()
        held = tuple(self._held)
        stamped = [*held, *((payload, now) for payload in payloads)] if held else [(p, now) for p in payloads]
        texts: list[str | None] = []
        for payload, occurred_at in stamped:
            event_type, version = event_type_of(payload)
            sequence += 1
            frozen, text = encoded_payload(payload)
            texts.append(text)
            event = _event(
                event_id=self._ids.new(EventId),
                run_id=self.run_id,
                sequence=sequence,
                event_type=event_type,
                schema_version=version,
                occurred_at=occurred_at,
                causation_id=retyped(CausationId, last_event_id) if last_event_id is not None else None,
                correlation_id=self.correlation_id,
                payload=frozen,
            )
            events.append(event)
            last_event_id = event.event_id

        def committed(projection: RunProjection) -> None:
            self._sequence = sequence
            self._last_event_id = last_event_id
            self.projection = projection
            if held:
                del self._held[: len(held)]

        dumped_from = [payload for payload, _ in stamped] if held else payloads
        projection = await self._writer.append_many(
            events, on_commit=committed, dumped_from=dumped_from, payload_texts=texts
        )
        for event in events:
            for sink in self._sinks:
                try:
                    sink(event)
                except Exception:  # a sink is an observer: its failure never touches the run
                    _log.warning(
                        "event sink %r failed on %s #%d", sink, event.event_type, event.sequence, exc_info=True
                    )
        return projection
