"""Bounded JSON: restrict, then freeze, thaw on output. Properties checked with hypothesis:

- any JSON object within the bounds round-trips exactly through validate -> freeze -> thaw, and through a model field
  typed `JsonObject` (model_dump, model_dump_json, model_validate_json);
- anything past a bound fails with an error that names the bound.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from bearagent.domain._base import (
    MAX_JSON_DEPTH,
    MAX_JSON_KEY_CHARS,
    MAX_JSON_NODES,
    MAX_JSON_STRING_CHARS,
    MAX_JSON_TOTAL_CHARS,
    DomainModel,
    JsonBoundsError,
    JsonObject,
    JsonValue,
    freeze_json_mapping,
    frozen_json,
    thaw_json_mapping,
    validate_json_object,
)

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Holder(DomainModel):
    data: JsonObject
    maybe: JsonObject | None = None


scalars: st.SearchStrategy[JsonValue] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
keys = st.text(max_size=20)


def _containers(children: st.SearchStrategy[JsonValue]) -> st.SearchStrategy[JsonValue]:
    return st.one_of(st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=5))


json_values: st.SearchStrategy[JsonValue] = st.recursive(scalars, _containers, max_leaves=40)
json_objects: st.SearchStrategy[dict[str, JsonValue]] = st.dictionaries(keys, json_values, max_size=6)


def _as_map(value: object) -> dict[object, object] | None:
    return dict(cast(Mapping[object, object], value)) if isinstance(value, Mapping) else None


def _as_seq(value: object) -> list[object] | None:
    return list(cast(Sequence[object], value)) if isinstance(value, (list, tuple)) else None


def same(a: object, b: object) -> bool:
    """Exact JSON equality: same types (bool is not int, 1.0 is not 1), lists/tuples and mappings compared deeply."""
    ma, mb = _as_map(a), _as_map(b)
    if ma is not None and mb is not None:
        return ma.keys() == mb.keys() and all(same(ma[k], mb[k]) for k in ma)
    sa, sb = _as_seq(a), _as_seq(b)
    if sa is not None and sb is not None:
        return len(sa) == len(sb) and all(same(x, y) for x, y in zip(sa, sb, strict=True))
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def assert_deeply_frozen(value: object) -> None:
    mapping, items = _as_map(value), _as_seq(value)
    if mapping is not None:
        assert isinstance(value, MappingProxyType), f"mapping not frozen: {type(value).__name__}"
        for item in mapping.values():
            assert_deeply_frozen(item)
    elif items is not None:
        assert isinstance(value, tuple), f"array not frozen: {type(value).__name__}"
        for item in items:
            assert_deeply_frozen(item)


def nested(depth: int) -> dict[str, JsonValue]:
    """An object whose containers nest exactly `depth` levels (the outer object is level 1), alternating arrays and
    objects inside."""
    if depth == 1:
        return {}
    value: JsonValue = {}
    for level in range(depth - 2):
        value = [value] if level % 2 == 0 else {"k": value}
    return {"k": value}


def container_depth(value: object) -> int:
    mapping, items = _as_map(value), _as_seq(value)
    children = list(mapping.values()) if mapping is not None else items
    if children is None:
        return 0
    return 1 + max((container_depth(child) for child in children), default=0)


# ---- round trips within bounds --------------------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(json_objects)
def test_validate_freeze_thaw_round_trips_exactly(value: dict[str, JsonValue]) -> None:
    checked = validate_json_object(value)
    assert same(checked, value)
    frozen = freeze_json_mapping(checked)
    assert_deeply_frozen(frozen)
    assert same(thaw_json_mapping(frozen), value)
    assert same(thaw_json_mapping(frozen_json(value)), value)


@pytest.mark.slow
@SETTINGS
@given(json_objects)
def test_model_field_round_trips_exactly(value: dict[str, JsonValue]) -> None:
    model = Holder(data=value)
    assert_deeply_frozen(model.data)
    assert same(model.model_dump()["data"], value)
    assert same(model.model_dump(mode="json")["data"], value)
    text = model.model_dump_json()
    assert same(json.loads(text)["data"], value)
    again = Holder.model_validate_json(text)
    assert again == model
    assert same(thaw_json_mapping(again.data), value)
    assert_deeply_frozen(again.data)


@SETTINGS
@given(json_objects)
def test_caller_mutation_after_construction_changes_nothing(value: dict[str, JsonValue]) -> None:
    model = Holder(data=value)
    before = model.model_dump_json()
    value["__injected__"] = [1, 2, 3]
    for item in value.values():
        if isinstance(item, list):
            item.append("mutated")
        elif isinstance(item, dict):
            item["mutated"] = True
    assert model.model_dump_json() == before


def test_validate_returns_a_copy() -> None:
    inner: list[JsonValue] = [1]
    value: dict[str, JsonValue] = {"a": inner}
    checked = validate_json_object(value)
    assert checked == value
    assert checked is not value
    assert checked["a"] is not inner


def test_tuples_and_read_only_mappings_are_accepted_as_input() -> None:
    frozen = frozen_json({"a": [1, {"b": (2, 3)}]})
    assert frozen == {"a": (1, {"b": (2, 3)})}
    assert Holder(data=frozen).model_dump() == {"data": {"a": [1, {"b": [2, 3]}]}, "maybe": None}


def test_frozen_values_are_read_only() -> None:
    model = Holder(data={"list": [1, 2], "obj": {"x": 1}})
    with pytest.raises(TypeError):
        model.data["new"] = 1  # type: ignore[index]
    obj = model.data["obj"]
    assert isinstance(obj, MappingProxyType)
    with pytest.raises(TypeError):
        obj["x"] = 2  # type: ignore[index]
    assert isinstance(model.data["list"], tuple)
    with pytest.raises(ValidationError, match="frozen"):
        model.data = {}  # pyright: ignore[reportAttributeAccessIssue]


def test_exact_bounds_are_accepted() -> None:
    deepest = nested(MAX_JSON_DEPTH)
    assert container_depth(deepest) == MAX_JSON_DEPTH
    assert same(thaw_json_mapping(Holder(data=deepest).data), deepest)
    widest: dict[str, JsonValue] = {str(i): None for i in range(MAX_JSON_NODES - 1)}  # + the object itself
    assert len(validate_json_object(widest)) == MAX_JSON_NODES - 1
    assert validate_json_object({"s": "x" * MAX_JSON_STRING_CHARS})
    assert validate_json_object({"k" * MAX_JSON_KEY_CHARS: 1})
    assert validate_json_object({"a": "x" * MAX_JSON_STRING_CHARS, "b": "y" * (MAX_JSON_STRING_CHARS - 10)})


# ---- past a bound: fails naming the bound ---------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=MAX_JSON_DEPTH + 1, max_value=MAX_JSON_DEPTH + 40))
def test_too_deep_fails_naming_max_depth(depth: int) -> None:
    value = nested(depth)
    assert container_depth(value) == depth
    with pytest.raises(JsonBoundsError, match=f"deeper than max_depth={MAX_JSON_DEPTH}"):
        validate_json_object(value)
    with pytest.raises(ValidationError, match=f"max_depth={MAX_JSON_DEPTH}"):
        Holder(data=value)


def test_too_many_nodes_fails_naming_max_nodes() -> None:
    flat: dict[str, JsonValue] = {str(i): None for i in range(MAX_JSON_NODES)}
    with pytest.raises(JsonBoundsError, match=f"more than {MAX_JSON_NODES} nodes \\(max_nodes={MAX_JSON_NODES}\\)"):
        validate_json_object(flat)
    spread: dict[str, JsonValue] = {"a": [[0] * 100 for _ in range(100)]}  # 1 + 1 + 100 + 10,000 nodes
    with pytest.raises(ValidationError, match=f"max_nodes={MAX_JSON_NODES}"):
        Holder(data=spread)


def test_too_long_string_fails_naming_max_string_chars() -> None:
    with pytest.raises(JsonBoundsError, match=f"value.a\\[0\\]: string of {MAX_JSON_STRING_CHARS + 1} characters"):
        validate_json_object({"a": ["x" * (MAX_JSON_STRING_CHARS + 1)]})
    with pytest.raises(ValidationError, match=f"max_string_chars={MAX_JSON_STRING_CHARS}"):
        Holder(data={"a": "x" * (MAX_JSON_STRING_CHARS + 1)})


def test_too_long_key_fails_naming_max_key_chars() -> None:
    with pytest.raises(JsonBoundsError, match=f"max_key_chars={MAX_JSON_KEY_CHARS}"):
        validate_json_object({"ok": {"k" * (MAX_JSON_KEY_CHARS + 1): 1}})


def test_too_large_in_total_fails_naming_max_total_chars() -> None:
    chunk = "x" * MAX_JSON_STRING_CHARS
    value: dict[str, JsonValue] = {str(i): chunk for i in range(MAX_JSON_TOTAL_CHARS // MAX_JSON_STRING_CHARS + 1)}
    with pytest.raises(JsonBoundsError, match=f"max_total_chars={MAX_JSON_TOTAL_CHARS}"):
        validate_json_object(value)


@pytest.mark.parametrize("key", [1, 1.5, None, True, ("t",)])
def test_non_string_keys_fail(key: object) -> None:
    with pytest.raises(JsonBoundsError, match=re.escape(f"value.a: object key {key!r} is not a string")):
        validate_json_object({"a": {key: 1}})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_fail(bad: float) -> None:
    with pytest.raises(JsonBoundsError, match=f"value.x\\[1\\]: non-finite float {bad!r} is not JSON"):
        validate_json_object({"x": [1.0, bad]})
    with pytest.raises(ValidationError, match="non-finite float"):
        Holder(data={"x": bad})


@pytest.mark.parametrize(
    "bad",
    [{1, 2}, b"bytes", bytearray(b"x"), datetime.date(2026, 1, 1), decimal.Decimal("1.5"), object(), 1j, range(3)],
    ids=lambda v: type(v).__name__,
)
def test_non_json_types_fail(bad: object) -> None:
    with pytest.raises(JsonBoundsError, match=f"value.v: {type(bad).__name__} is not a JSON type"):
        validate_json_object({"v": bad})


@pytest.mark.parametrize("bad", [[1, 2], "text", 1, None, ("a",)])
def test_top_level_must_be_an_object(bad: object) -> None:
    with pytest.raises(JsonBoundsError, match=f"value must be a JSON object, got {type(bad).__name__}"):
        validate_json_object(bad)
    with pytest.raises(ValidationError, match="must be a JSON object"):
        Holder.model_validate({"data": bad})


def test_json_text_with_non_finite_numbers_is_rejected() -> None:
    # Python's json module happily reads NaN/Infinity; the boundary must not.
    with pytest.raises(ValidationError):
        Holder.model_validate_json('{"data": {"x": NaN}}')
    with pytest.raises(ValidationError, match="non-finite float"):
        Holder.model_validate({"data": json.loads('{"x": Infinity}')})


_BAD_LEAVES: list[tuple[object, str]] = [
    (math.nan, "non-finite float"),
    (math.inf, "non-finite float"),
    ({1, 2}, "set is not a JSON type"),
    (b"x", "bytes is not a JSON type"),
    ("x" * (MAX_JSON_STRING_CHARS + 1), "max_string_chars"),
]


@SETTINGS
@given(json_objects, st.lists(keys, min_size=1, max_size=6), st.sampled_from(_BAD_LEAVES))
def test_one_bad_leaf_anywhere_fails_naming_it(
    value: dict[str, JsonValue], path: list[str], bad: tuple[object, str]
) -> None:
    leaf, bound = bad
    # Hang the bad leaf at the end of a fresh path of objects inside an otherwise valid object.
    node: dict[str, object] = {}
    root = node
    for key in path[:-1]:
        child: dict[str, object] = {}
        node[key] = child
        node = child
    node[path[-1]] = leaf
    poisoned: dict[str, object] = {**value, "__bad__": root}
    with pytest.raises(JsonBoundsError, match=bound):
        validate_json_object(poisoned)
    with pytest.raises(ValidationError, match=bound):
        Holder.model_validate({"data": poisoned})


def test_errors_name_the_path() -> None:
    with pytest.raises(JsonBoundsError, match=r"^where\.outer\[2\]\.inner: non-finite float"):
        validate_json_object({"outer": [0, 1, {"inner": math.nan}]}, where="where")


def test_json_schema_of_a_json_object_field() -> None:
    schema = Holder.model_json_schema()
    assert schema["properties"]["data"] == {"title": "Data", "type": "object"}
