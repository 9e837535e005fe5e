"""Replay: fold stored events (of one run or of many) into Run/Activity state from nothing. Pure, no I/O.

`Replayer.feed_rows` is the fast loop behind `rebuild_projections`: rows straight from storage (payload as JSON
text), parsed with orjson, reduced by the same `apply` that admitted them. Each run's events must come in sequence
order; runs may interleave.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

import orjson

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.run_events import parse_run_event_payload
from bearagent.domain.state import ActivityProjection, RunProjection
from bearagent.runtime.reducer import InvalidTransition, apply
from bearagent.runtime.run_state import ActivityState, RunState, parse_time

_EPOCH = datetime.fromtimestamp(0, UTC)
EventRow = tuple[str, int, str, int, str, str]
"""`(run_id, sequence, event_type, schema_version, occurred_at ISO text, payload JSON text)`."""

_UNREPLAYABLE = (BearAgentError, ValueError, KeyError, TypeError)
"""What folding a stored event may raise when the event cannot be replayed; `ReplayError` wraps it."""


_Parsed = tuple[str, int, str, int, datetime, Mapping[str, Any]]
"""An event as `Replayer.feed` takes it: `EventRow` with its time and payload parsed."""


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
        self._fold(((run_id, sequence, event_type, version, occurred_at, payload),), rows=False)

    def feed_rows(self, rows: Iterable[EventRow]) -> None:
        """Feed storage rows (see `EventRow`): payloads parsed by orjson, the events of one commit sharing one
        parsed time, whose text is handed on to the reducer (`parse_time`), which would otherwise format it."""
        self._fold(rows, rows=True)

    def _fold(self, events: Iterable[EventRow] | Iterable[_Parsed], *, rows: bool) -> None:
        """The fold, one loop for every event (rebuilding a store's projections folds all of its events); `rows`:
        the events are `EventRow`s, else `_Parsed`."""
        runs, actives, activities, taken = self.runs, self._active, self.activities, self._activity_ids
        validate = self.validate
        loads = orjson.loads
        time_text: object = None
        at = _EPOCH
        event: tuple[Any, ...] = ("", 0, "", 0)
        folded = 0
        try:
            for event in events:
                if rows:
                    run_id, sequence, event_type, version, occurred, payload_text = cast(EventRow, event)
                    if occurred != time_text:
                        at = parse_time(occurred)
                        time_text = occurred
                    payload = loads(payload_text)
                else:
                    run_id, sequence, event_type, version, at, payload = cast(_Parsed, event)
                if validate:
                    parse_run_event_payload(event_type, version, payload)
                run = runs.get(run_id)
                active = None if run is None or run.active_activity_id is None else actives[run_id]
                new_run, changed = apply(run, active, event_type, version, sequence, at, payload, run_id=run_id)
                folded += 1
                if run is None:
                    runs[run_id] = new_run
                if changed is None:
                    continue
                if changed.requested_sequence == sequence:
                    key = (run_id, changed.activity_id)
                    if key in taken:
                        raise InvalidTransition(
                            event_type,
                            "already has this activity",
                            f"activity {changed.activity_id} was requested before; every activity needs a new id",
                            run_id=run_id,
                        )
                    taken.add(key)
                    activities.append(changed)
                if new_run.active_activity_id is None:
                    actives.pop(run_id, None)
                else:
                    actives[run_id] = changed
        except _UNREPLAYABLE as exc:
            raise ReplayError(event[0], event[1], event[2], event[3], exc) from exc
        finally:
            self.events += folded

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
