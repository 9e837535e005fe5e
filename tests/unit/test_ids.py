"""Typed UUID4 ids: creation, JSON round trip, kinds not interchangeable, bad text rejected at the entry."""

from __future__ import annotations

import json
import os
import pickle
import threading
import uuid

import pytest
from pydantic import BaseModel, ValidationError

from bearagent.domain.ids import (
    ActivityId,
    ArtifactId,
    CausationId,
    CorrelationId,
    DeterministicIdGenerator,
    EventId,
    IdGenerator,
    ModelCallId,
    RunId,
    SessionId,
    ToolCallId,
    TypedId,
    Uuid4IdGenerator,
    WorkspaceId,
    retyped,
)

ALL_KINDS: tuple[type[TypedId], ...] = (
    RunId,
    EventId,
    SessionId,
    ActivityId,
    ModelCallId,
    ToolCallId,
    ArtifactId,
    CausationId,
    CorrelationId,
    WorkspaceId,
)


class HoldsRun(BaseModel):
    run_id: RunId


class HoldsOptionalEvent(BaseModel):
    event_id: EventId | None = None


@pytest.mark.parametrize("kind", ALL_KINDS, ids=lambda k: k.__name__)
def test_new_is_a_fresh_uuid4_of_its_kind(kind: type[TypedId]) -> None:
    first, second = kind.new(), kind.new()
    assert type(first) is kind
    assert first.version == 4
    assert first.variant == uuid.RFC_4122
    assert first != second


@pytest.mark.parametrize("kind", ALL_KINDS, ids=lambda k: k.__name__)
def test_text_round_trip(kind: type[TypedId]) -> None:
    value = kind.new()
    again = kind(str(value))
    assert again == value
    assert hash(again) == hash(value)
    assert repr(value) == f"{kind.__name__}('{value}')"


def test_json_round_trip_through_a_model() -> None:
    run_id = RunId.new()
    model = HoldsRun(run_id=run_id)
    dumped = model.model_dump_json()
    assert json.loads(dumped) == {"run_id": str(run_id)}
    back = HoldsRun.model_validate_json(dumped)
    assert back.run_id == run_id
    assert type(back.run_id) is RunId
    assert model.model_dump(mode="python")["run_id"] == str(run_id)


def test_model_accepts_a_plain_uuid4_or_its_text() -> None:
    raw = uuid.uuid4()
    assert HoldsRun(run_id=raw).run_id == RunId(str(raw))  # pyright: ignore[reportArgumentType]
    assert HoldsRun.model_validate({"run_id": str(raw)}).run_id == RunId(str(raw))


def test_model_validation_rejects_an_event_id_for_a_run_id() -> None:
    event_id = EventId.new()
    with pytest.raises(ValidationError, match="expected RunId, got EventId"):
        HoldsRun(run_id=event_id)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValidationError, match="expected EventId, got RunId"):
        HoldsOptionalEvent(event_id=RunId.new())  # pyright: ignore[reportArgumentType]


def test_constructor_rejects_another_kind() -> None:
    with pytest.raises(TypeError, match="expected RunId, got EventId"):
        RunId(EventId.new())


def test_kinds_with_the_same_uuid_are_not_equal() -> None:
    text = str(uuid.uuid4())
    run_id, event_id = RunId(text), EventId(text)
    assert run_id != event_id
    assert run_id == RunId(text)
    assert len({run_id, event_id}) == 2
    # Not equal to the bare UUID or string either: an id always says what it identifies.
    assert run_id != uuid.UUID(text)
    assert run_id != text


@pytest.mark.parametrize(
    "text",
    [
        "not-a-uuid",
        "",
        "12345678-1234-1234-1234-1234567890",  # too short
        "zzzzzzzz-zzzz-4zzz-8zzz-zzzzzzzzzzzz",
    ],
)
def test_invalid_text_fails_at_the_entry(text: str) -> None:
    with pytest.raises(ValueError, match=r"RunId: .* is not a UUID"):
        RunId(text)
    with pytest.raises(ValidationError, match="is not a UUID"):
        HoldsRun.model_validate({"run_id": text})


@pytest.mark.parametrize(
    "value",
    [uuid.uuid1(), uuid.uuid3(uuid.NAMESPACE_DNS, "bearagent"), uuid.uuid5(uuid.NAMESPACE_DNS, "bearagent")],
    ids=["uuid1", "uuid3", "uuid5"],
)
def test_non_uuid4_fails_at_the_entry(value: uuid.UUID) -> None:
    with pytest.raises(ValueError, match="is not a version-4 UUID"):
        RunId(str(value))
    with pytest.raises(ValueError, match="is not a version-4 UUID"):
        RunId(value)
    with pytest.raises(ValidationError, match="is not a version-4 UUID"):
        HoldsRun.model_validate({"run_id": str(value)})


def test_wrong_variant_is_rejected() -> None:
    # version nibble 4 but the variant bits of a Microsoft GUID (0b110x), not RFC 4122
    with pytest.raises(ValueError, match="is not a version-4 UUID"):
        RunId("12345678-1234-4234-c234-123456789abc")


@pytest.mark.parametrize("value", [123, 1.5, None, b"\x00" * 16, ["x"]])
def test_non_text_is_rejected_by_model_validation(value: object) -> None:
    with pytest.raises(ValidationError, match="RunId must be a UUID string"):
        HoldsRun.model_validate({"run_id": value})


def test_json_schema_is_a_uuid_string() -> None:
    schema = HoldsRun.model_json_schema()["properties"]["run_id"]
    assert schema["type"] == "string"
    assert schema["format"] == "uuid"
    assert "RunId" in schema["description"]


def test_uuid4_generator_gives_random_ids_of_the_requested_kind() -> None:
    generator: IdGenerator = Uuid4IdGenerator()
    ids = [generator.new(ToolCallId) for _ in range(50)]
    assert all(type(i) is ToolCallId and i.version == 4 for i in ids)
    assert len(set(ids)) == 50


def test_deterministic_generator_orders_each_kind_independently() -> None:
    generator: IdGenerator = DeterministicIdGenerator()
    runs = [generator.new(RunId) for _ in range(3)]
    event = generator.new(EventId)
    runs.append(generator.new(RunId))
    assert [str(r) for r in runs] == [
        "10000000-0000-4000-8000-000000000001",
        "10000000-0000-4000-8000-000000000002",
        "10000000-0000-4000-8000-000000000003",
        "10000000-0000-4000-8000-000000000004",
    ]
    assert str(event) == "90000000-0000-4000-8000-000000000001"
    assert runs == sorted(runs, key=lambda r: r.int)
    assert all(type(r) is RunId and r.version == 4 for r in runs)


def test_deterministic_generators_repeat_the_same_sequence() -> None:
    first, second = DeterministicIdGenerator(), DeterministicIdGenerator()
    kinds = [RunId, ToolCallId, RunId, ActivityId, ToolCallId]
    assert [first.new(k) for k in kinds] == [second.new(k) for k in kinds]


def test_deterministic_ids_of_different_kinds_never_collide() -> None:
    generator = DeterministicIdGenerator()
    ids = [generator.new(kind) for kind in ALL_KINDS]
    assert len({i.int for i in ids}) == len(ALL_KINDS)


@pytest.mark.parametrize("kind", ALL_KINDS, ids=lambda k: k.__name__)
def test_generated_ids_are_what_their_text_parses_to(kind: type[TypedId]) -> None:
    # ids are made from random bits without a text round trip: each must equal the id its text makes
    for made in (kind.new(), Uuid4IdGenerator().new(kind)):
        assert type(made) is kind
        parsed = kind(str(made))
        assert parsed == made and hash(parsed) == hash(made) and str(parsed) == str(made)
        assert made.is_safe == uuid.SafeUUID.unknown
        assert pickle.loads(pickle.dumps(made)) == made


def test_random_ids_fix_only_the_version_and_variant_bits() -> None:
    made = [Uuid4IdGenerator().new(EventId) for _ in range(512)]
    fixed = (0xF000 << 64) | (0xC000 << 48)
    assert all(m.version == 4 and m.variant == uuid.RFC_4122 for m in made)
    varying = 0
    for m in made:
        varying |= m.int ^ made[0].int
    assert varying == ((1 << 128) - 1) & ~fixed  # every other bit takes both values
    assert len({m.int for m in made}) == len(made)


def test_retyped_keeps_the_uuid_and_changes_the_kind() -> None:
    event_id = EventId.new()
    causation = retyped(CausationId, event_id)
    assert type(causation) is CausationId
    assert causation == CausationId(str(event_id))
    assert causation != event_id


@pytest.mark.parametrize(
    "text",
    [
        "6ba7b810-9dad-41d1-80b4-00c04fd430c8",  # canonical: read without a UUID parse
        "6BA7B810-9DAD-41D1-80B4-00C04FD430C8",  # other spellings: through uuid.UUID, the same id
        "{6ba7b810-9dad-41d1-80b4-00c04fd430c8}",
        "6ba7b8109dad41d180b400c04fd430c8",
    ],
)
def test_every_spelling_of_an_id_reads_as_the_same_id(text: str) -> None:
    expected = uuid.UUID("6ba7b810-9dad-41d1-80b4-00c04fd430c8")
    for made in (RunId(text), HoldsRun.model_validate({"run_id": text}).run_id):
        assert made.int == expected.int and str(made) == str(expected) and made.is_safe == expected.is_safe


@pytest.mark.parametrize(
    "text",
    [
        "6ba7b810-9dad-11d1-80b4-00c04fd430c8",  # version 1
        "6ba7b810-9dad-41d1-c0b4-00c04fd430c8",  # not the RFC 4122 variant
        "6ba7b810-9dad-41d1-80b4-00c04fd430c8\n",
        "6ba7b810-9dad-41d1-80b4-00c04fd430cg",
    ],
)
def test_text_that_is_no_version_4_uuid_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        RunId(text)
    with pytest.raises(ValidationError):
        HoldsRun.model_validate({"run_id": text})


@pytest.mark.parametrize("kind", ALL_KINDS, ids=lambda k: k.__name__)
def test_the_text_of_an_id_is_the_uuid_s_text_however_it_was_made(kind: type[TypedId]) -> None:
    made = kind.new()
    text = str(uuid.UUID(int=made.int))
    for same in (made, kind(text), kind(text.upper()), kind(uuid.UUID(text)), pickle.loads(pickle.dumps(made))):
        assert str(same) == text and f"{same}" == text and repr(same) == f"{kind.__name__}('{text}')"
    assert "_text" not in str(pickle.dumps(made))  # the remembered text is not part of the id's state


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_never_hands_out_its_parent_s_random_bits() -> None:
    # random ids come from a pool of os.urandom bytes (one system call for many ids): the child must drop it
    EventId.new()  # the pool holds bytes now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, " ".join(str(EventId.new()) for _ in range(300)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split())
    parent = {str(EventId.new()) for _ in range(300)}
    assert len(child) == 300 and not child & parent


def test_random_ids_from_many_threads_are_all_different() -> None:
    made: list[list[EventId]] = [[] for _ in range(8)]

    def take(into: list[EventId]) -> None:
        into.extend(EventId.new() for _ in range(2_000))

    threads = [threading.Thread(target=take, args=(into,)) for into in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({m for group in made for m in group}) == 16_000
