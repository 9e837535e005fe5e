"""A session's conversation with its rewinds applied: what the session's next run is given as history.

`runtime/history.py` rebuilds the conversation run after run. A `ConversationRewound` fact (recorded in the
session's latest run by `bearagent rewind --conversation`, `/rewind`, `POST /v1/sessions/{id}/rewind`) sets the
conversation back to what it was at an earlier point of the session's log: before a run began, or before one of
its events. The rewound events stay in the log; a later rewind to a point before the rewind fact brings them back
(the conversation at that point is the one the rewind replaced), so a rewind can itself be rewound.

A forked session (`SessionRecord.forked_from`) begins with its origin's conversation at the fork point: the caller
passes it as `base` (`Timeline(...).through(run, sequence)` of the origin's timeline).

Beside the conversation (compactions applied: what the model is sent) the timeline keeps the session's *messages*,
each with its run, its place in the run and the event it came from (`SourcedMessage`), without compactions: what
`GET /v1/sessions/{id}/messages` lists (`message_records.py`), with the same rewinds and fork origin applied, so that
every face listing a session's messages shows the conversation the next run is given.

Everything is computed in one pass over the runs, oldest first, without recursion: a rewind only ever names a point
before itself, whose conversation is already known.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.messages import Message
from bearagent.domain.run_events import ConversationRewoundV1, parse_run_event_payload
from bearagent.runtime.history import conversation, sourced_run_messages


@dataclass(frozen=True, slots=True)
class SourcedMessage:
    """One message of a session's timeline: its run, its place among that run's messages (1-based, stable: a
    message record's id is derived from it), the message and the event it came from."""

    run_id: RunId
    number: int
    message: Message
    source: Event


def _sourced(run_id: RunId, events: Sequence[Event]) -> list[SourcedMessage]:
    return [SourcedMessage(run_id, n, m, e) for n, (m, e) in enumerate(sourced_run_messages(events), start=1)]


def _rewind_of(event: Event) -> ConversationRewoundV1 | None:
    if event.event_type != "ConversationRewound":
        return None
    payload = parse_run_event_payload(event.event_type, event.schema_version, event.payload)
    return payload if isinstance(payload, ConversationRewoundV1) else None


class Timeline:
    """The conversation of a session's runs (oldest first, each with its events) at every point of its log."""

    def __init__(
        self,
        runs: Sequence[tuple[RunId, Sequence[Event]]],
        base: Sequence[Message] = (),
        base_messages: Sequence[SourcedMessage] = (),
    ) -> None:
        self._index: dict[RunId, int] = {}
        self._run_ids: list[RunId] = []
        self._events: list[Sequence[Event]] = []
        self._prior: list[list[Message]] = []
        self._prior_sourced: list[list[SourcedMessage]] = []
        self._body_end: list[int] = []
        """Per run, the sequence of its first `ConversationRewound` (events before it are the run's own)."""
        self._rewound: list[list[tuple[int, list[Message], list[SourcedMessage]]]] = []
        """Per run, each rewind fact's sequence and the conversation (and messages) it set."""
        current = list(base)
        listed = list(base_messages)
        for position, (run_id, events) in enumerate(runs):
            self._index[run_id] = position
            self._run_ids.append(run_id)
            self._events.append(events)
            self._prior.append(current)
            self._prior_sourced.append(listed)
            rewinds = [(e.sequence, r) for e in events if (r := _rewind_of(e)) is not None]
            first = rewinds[0][0] if rewinds else None
            self._body_end.append(first if first is not None else (events[-1].sequence + 1 if events else 1))
            body = [e for e in events if first is None or e.sequence < first]
            current = conversation(current, body)
            listed = listed + _sourced(run_id, body)
            self._rewound.append([])
            for sequence, rewind in rewinds:
                target = self._point(rewind.to_run_id, rewind.to_sequence, limit=(position, sequence))
                if target is not None:  # a rewind naming no earlier point of this session changes nothing
                    current, listed = target
                self._rewound[position].append((sequence, current, listed))
        self.end: list[Message] = current
        """The conversation now: what the session's next run is given."""
        self.messages: list[SourcedMessage] = listed
        """The session's messages now (no compaction applied), oldest first: what its message listing shows."""

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._index

    def _point(
        self, run_id: RunId, sequence: int | None, *, limit: tuple[int, int] | None = None
    ) -> tuple[list[Message], list[SourcedMessage]] | None:
        """The conversation and the messages just before event `sequence` of `run_id` (None: before the run
        began); None when that is not a point of this timeline (or not before `limit`, a rewind fact's own
        place)."""
        position = self._index.get(run_id)
        if position is None:
            return None
        if limit is not None and (position > limit[0] or (position == limit[0] and (sequence or 0) > limit[1])):
            return None
        if sequence is None:
            return list(self._prior[position]), list(self._prior_sourced[position])
        rewinds = [(state, listed) for at, state, listed in self._rewound[position] if at < sequence]
        if rewinds:
            return list(rewinds[-1][0]), list(rewinds[-1][1])
        body = [e for e in self._events[position] if e.sequence < min(sequence, self._body_end[position])]
        return (
            conversation(self._prior[position], body),
            self._prior_sourced[position] + _sourced(self._run_ids[position], body),
        )

    def _before(self, run_id: RunId, sequence: int | None) -> list[Message] | None:
        point = self._point(run_id, sequence)
        return None if point is None else point[0]

    def before(self, run_id: RunId, sequence: int | None = None) -> list[Message] | None:
        """The conversation just before event `sequence` of run `run_id` (None: before the run began); None when
        the run is not one of this timeline's."""
        return self._before(run_id, sequence)

    def through(self, run_id: RunId, sequence: int | None = None) -> list[Message] | None:
        """The conversation up to and including event `sequence` of run `run_id` (None: the whole run, with the
        rewinds recorded in it); None when the run is not one of this timeline's."""
        position = self._index.get(run_id)
        if position is None:
            return None
        if sequence is None:
            return list(self._prior[position + 1]) if position + 1 < len(self._prior) else list(self.end)
        return self._before(run_id, sequence + 1)

    def messages_through(self, run_id: RunId, sequence: int | None = None) -> list[SourcedMessage] | None:
        """The messages up to and including event `sequence` of run `run_id`, as `through` (a fork's origin)."""
        position = self._index.get(run_id)
        if position is None:
            return None
        if sequence is None:
            return list(self._prior_sourced[position + 1]) if position + 1 < len(self._prior) else list(self.messages)
        point = self._point(run_id, sequence + 1)
        return None if point is None else point[1]
