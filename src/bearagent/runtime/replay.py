"""Replay: fold stored events (of one run or of many) into Run/Activity state from nothing. Pure, no I/O.

`Replayer.feed_rows` is the fast loop behind `rebuild_projections`: rows straight from storage (payload as JSON
text), parsed with orjson, reduced by the same `apply` that admitted them. Each run's events must come in sequence
order; runs may interleave.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import orjson

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.run_events import parse_run_event_payload
from bearagent.domain.state import ActivityProjection, RunProjection
from bearagent.runtime.reducer import InvalidTransition, apply
from bearagent.runtime.run_state import ActivityState, RunState

EventRow = tuple[str, int, str, int, str, str]
"""`(run_id, sequence, event_type, schema_version, occurred_at ISO text, payload JSON text)`."""

_UNREPLAYABLE = (BearAgentError, ValueError, KeyError, TypeError)
"""What folding a stored event may raise when the event cannot be replayed; `ReplayError` wraps it."""


class ReplayError(BearAgentError):
    """A stored event that cannot be replayed; names the run, the sequence and why."""

    def __init__(self, run_id: str, sequence: int, event_type: str, version: int, cause: Exception) -> None:
        why = cause.info.message if isinstance(cause, BearAgentError) else f"{type(cause).__name__}: {cause}"
        message = f"event {sequence} ({event_type} v{version}) of run {run_id} cannot be replayed: {why}"
        super().__init__(
            ErrorInfo.of("validation", "invalid_log", message, run_id=run_id, sequence=sequence),
            hint="the log was changed outside BearAgent; restore it from a backup",
        )
        self.run_id = run_id
        self.sequence = sequence


class Replayer:
    """Accumulates the state of every run it is fed. `validate=True` re-checks each payload against its model."""

    def __init__(self, *, validate: bool = False) -> None:
        self.validate = validate
        self.runs: dict[str, RunState] = {}
        self.activities: list[ActivityState] = []
        self.events = 0
        self._active: dict[str, ActivityState] = {}
        self._activity_ids: set[tuple[str, str]] = set()

    def feed(
        self,
        run_id: str,
        sequence: int,
        event_type: str,
        version: int,
        occurred_at: datetime,
        payload: Mapping[str, Any],
    ) -> None:
        try:
            self._feed(run_id, sequence, event_type, version, occurred_at, payload)
        except _UNREPLAYABLE as exc:
            raise ReplayError(run_id, sequence, event_type, version, exc) from exc

    def _feed(
        self,
        run_id: str,
        sequence: int,
        event_type: str,
        version: int,
        occurred_at: datetime,
        payload: Mapping[str, Any],
    ) -> None:
        if self.validate:
            parse_run_event_payload(event_type, version, payload)
        run = self.runs.get(run_id)
        active = None if run is None or run.active_activity_id is None else self._active[run_id]
        new_run, changed = apply(run, active, event_type, version, sequence, occurred_at, payload, run_id=run_id)
        self.events += 1
        if run is None:
            self.runs[run_id] = new_run
        if changed is None:
            return
        if changed.requested_sequence == sequence:
            key = (run_id, changed.activity_id)
            if key in self._activity_ids:
                raise InvalidTransition(
                    event_type,
                    "already has this activity",
                    f"activity {changed.activity_id} was requested before; every activity needs a new id",
                    run_id=run_id,
                )
            self._activity_ids.add(key)
            self.activities.append(changed)
        if new_run.active_activity_id is None:
            self._active.pop(run_id, None)
        else:
            self._active[run_id] = changed

    def feed_rows(self, rows: Iterable[EventRow]) -> None:
        """Feed storage rows (see `EventRow`)."""
        loads = orjson.loads
        parse_time = datetime.fromisoformat
        feed = self._feed
        row: EventRow = ("", 0, "", 0, "", "")
        try:
            for row in rows:
                feed(row[0], row[1], row[2], row[3], parse_time(row[4]), loads(row[5]))
        except _UNREPLAYABLE as exc:
            raise ReplayError(row[0], row[1], row[2], row[3], exc) from exc

    def active_of(self, run_id: str) -> ActivityState | None:
        """The run's pending/running activity, if any."""
        return self._active.get(run_id)

    def activities_of(self, run_id: str) -> list[ActivityState]:
        return sorted((a for a in self.activities if a.run_id == run_id), key=lambda a: a.requested_sequence)


def replay_events(events: Iterable[Event]) -> tuple[RunProjection, list[ActivityProjection]]:
    """Fold one run's events (in sequence order, each payload validated) into its projections, from nothing."""
    replayer = Replayer(validate=True)
    run_id = ""
    for event in events:
        run_id = str(event.run_id)
        replayer.feed(run_id, event.sequence, event.event_type, event.schema_version, event.occurred_at, event.payload)
    run = replayer.runs.get(run_id)
    if run is None:
        raise ValueError("replay needs at least the RunCreated event")
    return run.to_projection(), [a.to_projection() for a in replayer.activities_of(run_id)]
