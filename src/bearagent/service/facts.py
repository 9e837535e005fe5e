"""Appending facts outside the loop: the one owner (issue 30). A run no loop executes right now (queued, waiting,
interrupted, or held by a dead process) still gets facts: the recovery scan's `RunInterrupted`, a queued run's
cancellation or its failure to start, an approval's answer, a cancel over HTTP. Each is appended here, in one
transaction, on top of the sequence the caller read: a run that moved on meanwhile refuses the facts (the store's
conditional commit, then the reducer) with a `BearAgentError` the caller handles, never a silent overwrite."""

from __future__ import annotations

from collections.abc import Sequence

from bearagent.domain.ids import IdGenerator, RunId
from bearagent.domain.run_events import RunEventPayload
from bearagent.domain.state import RunProjection
from bearagent.ports import Clock
from bearagent.runtime.recorder import RunRecorder
from bearagent.runtime.run_writer import RunWriter


async def append_outside_loop(
    writer: RunWriter,
    clock: Clock,
    ids: IdGenerator,
    run_id: RunId,
    last_sequence: int,
    payloads: Sequence[RunEventPayload],
) -> RunProjection:
    """Append `payloads` to run `run_id` whose log the caller read up to `last_sequence`, all or none; returns the
    run as it stands after them. Raises `BearAgentError` (a conflict, or the reducer's refusal) when the run moved
    on or the facts do not fit its state."""
    recorder = RunRecorder(writer=writer, clock=clock, ids=ids, run_id=run_id, last_sequence=last_sequence)
    return await recorder.append_many(payloads)
