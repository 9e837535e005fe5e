"""A payload is encoded once (issue 37): `recorder.encoded_payload` gives the frozen JSON the event holds and the text
the store writes, from one dump. Both must be exactly what the two separate steps gave before: `frozen_json` of the
dump (same values, same refusals) and the store's own `dumps_json` of the frozen payload (byte for byte), or no text
at all (None: the store encodes), for any JSON object a payload may carry (hypothesis)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bearagent.domain._base import JsonBoundsError, JsonValue, frozen_json, thaw_json_mapping
from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.events import Event
from bearagent.domain.ids import ActivityId, CorrelationId, DeterministicIdGenerator, EventId, RunId, ToolCallId
from bearagent.domain.run_events import RunCreatedV1, ToolCallRequestedV2
from bearagent.ports import RunCommit, SystemClock
from bearagent.runtime.recorder import RunRecorder, encoded_payload
from bearagent.runtime.run_writer import RunWriter
from bearagent.store.run_commit import dumps_json
from bearagent.store.sqlite import SqliteEventStore

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars: st.SearchStrategy[JsonValue] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),  # beyond 64 bits too: orjson refuses those
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),  # any code point, lone surrogates included
)
values: st.SearchStrategy[JsonValue] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
objects = st.dictionaries(st.text(max_size=12), values, max_size=5)


def _requested(arguments: dict[str, JsonValue]) -> ToolCallRequestedV2:
    ids = DeterministicIdGenerator()
    return ToolCallRequestedV2(
        activity_id=ids.new(ActivityId), tool_call_id=ids.new(ToolCallId), tool_name="lookup", arguments=arguments
    )


@pytest.mark.slow
@SETTINGS
@given(objects)
def test_the_frozen_payload_and_its_text_are_what_the_two_steps_gave(arguments: dict[str, JsonValue]) -> None:
    payload = _requested(arguments)
    frozen, text = encoded_payload(payload)
    assert frozen == frozen_json(payload.model_dump(mode="json"))
    assert thaw_json_mapping(frozen) == payload.model_dump(mode="json")
    if text is not None:
        assert text == dumps_json(frozen)  # the row holds the same bytes as when the store encoded it


def test_what_orjson_cannot_write_exactly_is_left_to_the_store() -> None:
    big = _requested({"n": 2**64})  # beyond 64 bits: orjson refuses, the stdlib writes it exactly
    frozen, text = encoded_payload(big)
    assert text is None and frozen["arguments"] == {"n": 2**64}
    assert dumps_json(frozen) == dumps_json(frozen_json(big.model_dump(mode="json")))
    floats = _requested({"x": 0.1, "y": [1e300]})  # a float: the full check, and the store encodes it
    frozen, text = encoded_payload(floats)
    assert text is None and frozen == frozen_json(floats.model_dump(mode="json"))
    surrogate = _requested({"s": "\ud800"})  # orjson refuses a lone surrogate; the stdlib writes it
    assert encoded_payload(surrogate)[1] is None


def test_a_payload_past_the_bounds_is_refused_as_before() -> None:
    deep: JsonValue = 0
    for _ in range(80):
        deep = [deep]
    payload = ToolCallRequestedV2.model_construct(  # built around the model's own check, as a bug would
        activity_id=ActivityId.new(), tool_call_id=ToolCallId.new(), tool_name="t", arguments={"deep": deep}
    )
    with pytest.raises(JsonBoundsError) as encoded:
        encoded_payload(payload)
    with pytest.raises(JsonBoundsError) as before:
        frozen_json(payload.model_dump(mode="json"))
    assert str(encoded.value) == str(before.value)
    nan = _requested({})
    object.__setattr__(nan, "arguments", {"x": math.nan})  # a NaN (orjson writes it as null): refused
    with pytest.raises(JsonBoundsError):
        encoded_payload(nan)


def test_the_store_writes_the_recorders_text_and_reads_back_the_same_event(tmp_path: Path) -> None:
    commits: list[RunCommit] = []

    class Seen(SqliteEventStore):
        def commit_now(self, commit: RunCommit) -> bool:
            commits.append(commit)
            return super().commit_now(commit)

    store = Seen(tmp_path / "state.db")
    ids = DeterministicIdGenerator()
    recorder = RunRecorder(writer=RunWriter(store), clock=SystemClock(), ids=ids, run_id=ids.new(RunId))
    try:
        asyncio.run(recorder.append_many((RunCreatedV1(budget_limits=BudgetLimits()),)))
        (commit,) = commits
        assert len(commit.payload_texts) == 1 and commit.payload_texts[0] is not None
        (stored,) = store.read_events(recorder.run_id)
        assert stored.payload == commit.events[0].payload
        assert dumps_json(stored.payload) == commit.payload_texts[0]
    finally:
        store.close()


def test_texts_are_taken_only_from_the_recorder(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "state.db")
    ids = DeterministicIdGenerator()
    run_id = ids.new(RunId)
    payload = RunCreatedV1(budget_limits=BudgetLimits())
    event = Event.model_validate(
        {
            "event_id": str(ids.new(EventId)),
            "run_id": str(run_id),
            "sequence": 1,
            "event_type": "RunCreated",
            "schema_version": 1,
            "occurred_at": "2026-01-01T00:00:00Z",
            "correlation_id": str(ids.new(CorrelationId)),
            "payload": payload.model_dump(mode="json"),
        }
    )
    try:
        with pytest.raises(ValueError, match="payload_texts needs dumped_from"):
            asyncio.run(RunWriter(store).append_many((event,), payload_texts=('{"forged":1}',)))
        with pytest.raises(ValueError, match="one text"):
            asyncio.run(RunWriter(store).append_many((event,), dumped_from=(payload,), payload_texts=("{}", "{}")))
        assert store.read_events(run_id) == []
    finally:
        store.close()
