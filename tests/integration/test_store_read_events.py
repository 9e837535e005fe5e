"""Reading a run's events back (`read_events`): rows as this store writes them are checked field by field without
building the envelope through pydantic (issue 22); every row must read exactly as `Event.model_validate` reads it,
and a row changed outside BearAgent is refused with the same message as before."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from tests.support.events import EventFactory

from bearagent.domain.events import Event
from bearagent.domain.ids import DeterministicIdGenerator, RunId
from bearagent.store.errors import StoreError
from bearagent.store.sqlite import SqliteEventStore

RUN = RunId("12345678-0000-4000-8000-000000000001")
COLUMNS = "event_id, run_id, sequence, event_type, schema_version, occurred_at, causation_id, correlation_id, payload"


def _store(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    f = EventFactory(RUN, ids=DeterministicIdGenerator())
    with SqliteEventStore(path) as store:
        store.append_many([f.run_created(), f.run_started()])
        store.append_many(f.model_call(10, 5))
        store.append_many(f.tool_call())
    return path


def _by_pydantic(path: Path) -> list[Event]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(f"SELECT {COLUMNS} FROM events WHERE run_id = ? ORDER BY sequence", (str(RUN),)).fetchall()
    finally:
        conn.close()
    keys = COLUMNS.split(", ")
    return [Event.model_validate({**dict(zip(keys, row, strict=True)), "payload": json.loads(row[8])}) for row in rows]


def _change(path: Path, sql: str, *params: object) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def _same(read: list[Event], expected: list[Event]) -> None:
    assert read == expected
    for a, b in zip(read, expected, strict=True):
        assert a.model_dump_json() == b.model_dump_json()
        assert repr(a.occurred_at) == repr(b.occurred_at)
        assert type(a.event_id) is type(b.event_id) and type(a.causation_id) is type(b.causation_id)
        assert a.model_fields_set == b.model_fields_set


def test_rows_read_as_the_envelope_validation_reads_them(tmp_path: Path) -> None:
    path = _store(tmp_path)
    with SqliteEventStore(path) as store:
        _same(list(store.read_events(RUN)), _by_pydantic(path))


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("UPDATE events SET event_id = upper(event_id) WHERE sequence = 2", ()),
        ("UPDATE events SET occurred_at = '2026-11-29T12:00:00.5+02:00' WHERE sequence = 3", ()),
        ("UPDATE events SET occurred_at = '2026-11-29T12:00:00' || 'Z' WHERE sequence = 4", ()),
        ("UPDATE events SET sequence = CAST(sequence AS TEXT) WHERE sequence = 5", ()),
        ("UPDATE events SET causation_id = upper(causation_id) WHERE sequence = 6", ()),
    ],
)
def test_rows_written_otherwise_still_read_as_before(tmp_path: Path, sql: str, params: tuple[object, ...]) -> None:
    path = _store(tmp_path)
    _change(path, sql, *params)
    with SqliteEventStore(path) as store:
        _same(list(store.read_events(RUN)), _by_pydantic(path))


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE events SET event_id = 'not-a-uuid' WHERE sequence = 2",
        "UPDATE events SET occurred_at = '2026-11-29T12:00:00' WHERE sequence = 3",  # no time zone
        "UPDATE events SET payload = '[1, 2]' WHERE sequence = 4",
        "UPDATE events SET event_type = 'lowercase' WHERE sequence = 4",
        "UPDATE events SET causation_id = '6ba7b810-9dad-11d1-80b4-00c04fd430c8' WHERE sequence = 5",
        "UPDATE events SET schema_version = 0 WHERE sequence = 5",
    ],
)
def test_a_tampered_row_is_refused_with_the_envelope_validation_s_message(tmp_path: Path, sql: str) -> None:
    path = _store(tmp_path)
    _change(path, sql)
    with pytest.raises(ValueError) as expected:
        _by_pydantic(path)
    with SqliteEventStore(path) as store, pytest.raises(StoreError) as refused:
        store.read_events(RUN)
    assert str(expected.value).splitlines()[0] in str(refused.value)
    assert "cannot be read" in str(refused.value)


@pytest.mark.parametrize(
    "sql",
    [
        # the events of one commit share a time; a row between them with another spelling of it
        "UPDATE events SET occurred_at = (SELECT occurred_at FROM events WHERE sequence = 3) WHERE sequence = 4",
        "UPDATE events SET occurred_at = replace((SELECT occurred_at FROM events WHERE sequence = 3), 'Z', '+00:00')"
        " WHERE sequence = 4",
        # a cause that is not the event before, and one that is in upper case
        "UPDATE events SET causation_id = (SELECT event_id FROM events WHERE sequence = 1) WHERE sequence = 5",
        "UPDATE events SET causation_id = upper((SELECT event_id FROM events WHERE sequence = 4)) WHERE sequence = 5",
    ],
)
def test_rows_that_break_what_the_rows_repeat_still_read_as_before(tmp_path: Path, sql: str) -> None:
    path = _store(tmp_path)
    _change(path, sql)
    with SqliteEventStore(path) as store:
        _same(list(store.read_events(RUN)), _by_pydantic(path))


def _add_to_payload(path: Path, sequence: int, members: str) -> None:
    conn = sqlite3.connect(path)
    try:
        (text,) = conn.execute(
            "SELECT payload FROM events WHERE run_id = ? AND sequence = ?", (str(RUN), sequence)
        ).fetchone()
        changed = text[:-1] + ("," if text != "{}" else "") + members + "}"
        conn.execute("UPDATE events SET payload = ? WHERE run_id = ? AND sequence = ?", (changed, str(RUN), sequence))
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize(
    "members",
    [
        '"n":18446744073709551617',  # beyond 64 bits: orjson would read it as a float
        '"n":-123456789012345678901234567890',
        '"f":1.5',
        '"s":"\\ud800"',  # a lone surrogate, which orjson refuses
        '"deep":' + "[" * 40 + "]" * 40,  # past max_depth
        '"k":{"a":1,"a":2}',
    ],
)
def test_payloads_read_as_the_envelope_validation_reads_them(tmp_path: Path, members: str) -> None:
    path = _store(tmp_path)
    _add_to_payload(path, 3, members)
    try:
        expected = _by_pydantic(path)
    except ValueError as exc:
        with SqliteEventStore(path) as store, pytest.raises(StoreError) as refused:
            store.read_events(RUN)
        assert str(exc).splitlines()[0] in str(refused.value)
        return
    with SqliteEventStore(path) as store:
        read = list(store.read_events(RUN))
    assert read == expected
    assert [repr(e.payload) for e in read] == [repr(e.payload) for e in expected]
    if "ud800" not in members:  # a lone surrogate has no JSON dump
        _same(read, expected)


def test_an_integer_beyond_64_bits_reads_back_exactly(tmp_path: Path) -> None:
    path = _store(tmp_path)
    _add_to_payload(path, 2, '"n":18446744073709551617')
    with SqliteEventStore(path) as store:
        payload = store.read_events(RUN)[1].payload
    assert payload["n"] == 18446744073709551617 and type(payload["n"]) is int
