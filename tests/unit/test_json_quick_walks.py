"""The quick walks of bounded JSON (issue 22) against the full one they stand in for:

- `_checked_copy` (the quick walk over exact JSON types, falling back to `_copy_checked` on any doubt) gives the
  same result, or the same error message, as `_copy_checked` at every bound;
- `frozen_parsed_json` (bounds implied by the size of the source text where it is short) gives what
  `frozen_json(json.loads(text))` gives, or fails where it fails, and notes every float;
- a stored payload is read (`run_reads._payload_of`) exactly as `json.loads` reads it, integers beyond 64 bits
  included, though orjson reads those as floats.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import cast

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bearagent.domain import _base
from bearagent.domain._base import JsonBoundsError, frozen_json, frozen_parsed_json
from bearagent.store.run_reads import _payload_of  # pyright: ignore[reportPrivateUsage]

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
_keys = st.text(max_size=6)


def _containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(_keys, children, max_size=4),
        st.dictionaries(_keys, children, max_size=4).map(MappingProxyType),
    )


_values = st.recursive(_leaves, _containers, max_leaves=24)


def _holding(value: object) -> dict[str, object]:
    return {"x": value}


_objects: st.SearchStrategy[object] = st.one_of(
    st.dictionaries(_keys, _values, max_size=5),
    st.dictionaries(_keys, _values, max_size=5).map(MappingProxyType),
    st.dictionaries(st.one_of(_keys, st.integers()), _values, max_size=3),  # a key that is no string
    st.builds(_holding, st.sampled_from([object(), b"bytes", {1, 2}, 1 + 2j])),
)

# small bounds, so that every bound is met and broken
_bounds = st.fixed_dictionaries(
    {
        "MAX_JSON_DEPTH": st.integers(min_value=0, max_value=5),
        "MAX_JSON_NODES": st.integers(min_value=0, max_value=30),
        "MAX_JSON_STRING_CHARS": st.integers(min_value=0, max_value=12),
        "MAX_JSON_KEY_CHARS": st.integers(min_value=0, max_value=6),
        "MAX_JSON_TOTAL_CHARS": st.integers(min_value=0, max_value=120),
    }
)

# bounds the size of a short text keeps (nodes, total size), so that the quick path of `frozen_parsed_json` is taken
_text_bounds = st.fixed_dictionaries(
    {
        "MAX_JSON_DEPTH": st.integers(min_value=0, max_value=5),
        "MAX_JSON_NODES": st.integers(min_value=0, max_value=400),
        "MAX_JSON_STRING_CHARS": st.integers(min_value=0, max_value=400),
        "MAX_JSON_KEY_CHARS": st.integers(min_value=0, max_value=6),
        "MAX_JSON_TOTAL_CHARS": st.integers(min_value=0, max_value=4000),
    }
)


def _shape(value: object) -> object:
    """A value with its container types spelled out (MappingProxyType / dict / tuple / list are not told apart by
    `==`), and floats by their bits (nan != nan)."""
    kind = type(value).__name__
    if isinstance(value, Mapping):
        items = cast(Mapping[str, object], value)
        return (kind, [(k, _shape(v)) for k, v in items.items()])
    if isinstance(value, (list, tuple)):
        return (kind, [_shape(v) for v in cast(Sequence[object], value)])
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


def _outcome(walk: Callable[[], object]) -> object:
    try:
        return _shape(walk())
    except JsonBoundsError as exc:
        return f"error: {exc}"


def _set_bounds(monkeypatch: pytest.MonkeyPatch, bounds: dict[str, int]) -> None:
    for name, limit in bounds.items():
        monkeypatch.setattr(_base, name, limit)


@pytest.mark.slow
@SETTINGS
@given(value=_objects, bounds=_bounds, frozen=st.booleans())
def test_quick_walk_equals_the_full_walk(value: object, bounds: dict[str, int], frozen: bool) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _set_bounds(monkeypatch, bounds)
        quick = _outcome(lambda: _base._checked_copy(value, "value", frozen))  # pyright: ignore[reportPrivateUsage]
        full = _outcome(
            lambda: _base._copy_checked(value, "value", 1, _base._Counter(), frozen)  # pyright: ignore[reportPrivateUsage]
        )
    assert quick == full


@pytest.mark.slow
@SETTINGS
@given(value=_objects)
def test_quick_walk_equals_the_full_walk_at_the_real_bounds(value: object) -> None:
    quick = _outcome(lambda: _base._checked_copy(value, "value", True))  # pyright: ignore[reportPrivateUsage]
    full = _outcome(lambda: _base._copy_checked(value, "value", 1, _base._Counter(), True))  # pyright: ignore[reportPrivateUsage]
    assert quick == full


_json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**80), max_value=2**80),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=10),
    ),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_keys, children, max_size=4)),
    max_leaves=24,
)


@SETTINGS
@given(
    value=st.dictionaries(_keys, _json_values, max_size=5),
    bounds=st.one_of(_bounds, _text_bounds),
    ensure_ascii=st.booleans(),
    indent=st.sampled_from([None, 1]),
)
@pytest.mark.slow
def test_parsed_text_is_frozen_as_the_full_check_freezes_it(
    value: dict[str, object], bounds: dict[str, int], ensure_ascii: bool, indent: int | None
) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _set_bounds(monkeypatch, bounds)
        expected = _outcome(lambda: frozen_json(json.loads(text)))
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            return
        has_float = any(isinstance(v, float) for v in _leaves_of(parsed))  # before it is used up
        try:
            frozen, floats = frozen_parsed_json(text, parsed)
        except JsonBoundsError:
            assert str(expected).startswith("error: ")  # the message is the stdlib route's (`_payload_of`)
            return
    assert floats or not has_float
    if not floats:
        assert _shape(frozen) == expected


@pytest.mark.parametrize(
    ("text", "bounds"),
    [
        ('{"a":[[1]]}', {"MAX_JSON_DEPTH": 2}),  # one brace, but three levels
        ('{"a":{"b":{}}}', {"MAX_JSON_DEPTH": 2}),
        ('{"abcdefg":1}', {"MAX_JSON_KEY_CHARS": 6}),
        ('{"a":"abcdefg"}', {"MAX_JSON_STRING_CHARS": 6}),
        ('{"a":1,"b":2,"c":3}', {"MAX_JSON_NODES": 3}),
        ('{"a":1,"b":2,"c":"xy"}', {"MAX_JSON_TOTAL_CHARS": 20}),
    ],
)
def test_each_bound_is_kept_on_the_quick_path(text: str, bounds: dict[str, int]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _set_bounds(monkeypatch, bounds)
        with pytest.raises(JsonBoundsError):
            frozen_json(json.loads(text))
        with pytest.raises(JsonBoundsError):
            frozen_parsed_json(text, orjson.loads(text))
        with pytest.raises(JsonBoundsError):
            _payload_of(text)


def _leaves_of(value: object) -> list[object]:
    if isinstance(value, dict):
        return [leaf for v in cast(dict[str, object], value).values() for leaf in _leaves_of(v)]
    if isinstance(value, list):
        return [leaf for v in cast(list[object], value) for leaf in _leaves_of(v)]
    return [value]


@pytest.mark.slow
@SETTINGS
@given(value=st.dictionaries(_keys, _json_values, max_size=5), bounds=st.one_of(_bounds, _text_bounds))
def test_a_stored_payload_reads_as_the_stdlib_reads_it(value: dict[str, object], bounds: dict[str, int]) -> None:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        _set_bounds(monkeypatch, bounds)
        expected = _outcome(lambda: frozen_json(json.loads(text)))
        got = _outcome(lambda: _payload_of(text))
    assert got == expected


@pytest.mark.parametrize(
    "text",
    [
        '{"cost_microusd": 18446744073709551616}',
        '{"n": -9223372036854775809, "f": 1.5}',
        '{"n": 123456789012345678901234567890}',
        '{"a": [1, 2, {"b": 1e400}]}',
        '{"a": NaN}',
        '{"a": "\\ud800"}',
        '{"a": 1, "a": 2}',
        "[1, 2]",
        '"text"',
        "{",
    ],
)
def test_payload_edge_cases_read_as_the_stdlib_reads_them(text: str) -> None:
    def stdlib() -> object:
        parsed = json.loads(text)
        if not isinstance(parsed, dict):
            raise JsonBoundsError("not an object")
        return frozen_json(cast(dict[str, object], parsed))

    try:
        expected = _shape(stdlib())
    except ValueError:
        with pytest.raises(ValueError):
            _payload_of(text)
        return
    got = _payload_of(text)
    assert _shape(got) == expected
    big = [leaf for leaf in _leaves_of(json.loads(text)) if isinstance(leaf, int) and abs(leaf) >= 2**63]
    assert all(isinstance(leaf, int) for leaf in big)
    assert not any(isinstance(leaf, float) and not math.isfinite(leaf) for leaf in _leaves_of(got))


def _leaves_of_frozen(value: object) -> list[object]:
    if isinstance(value, Mapping):
        return [leaf for v in cast(Mapping[str, object], value).values() for leaf in _leaves_of_frozen(v)]
    if isinstance(value, tuple):
        return [leaf for v in cast(tuple[object, ...], value) for leaf in _leaves_of_frozen(v)]
    return [value]


def test_integers_beyond_64_bits_stay_exact() -> None:
    got = _payload_of('{"n": 18446744073709551616, "m": [-9223372036854775809]}')
    assert got["n"] == 18446744073709551616 and type(got["n"]) is int
    assert _leaves_of_frozen(got) == [18446744073709551616, -9223372036854775809]
