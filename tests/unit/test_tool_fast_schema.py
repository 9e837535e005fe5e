"""The fast schema pre-checks never accept what jsonschema rejects: arguments (`compile_fast_check`) and schemas
(`plainly_valid_schema`); they only make valid calls and valid schemas cheaper."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from bearagent.domain._base import frozen_json, thaw_json_mapping
from bearagent.tools.builtin import native_tools
from bearagent.tools.fast_schema import compile_fast_check, plainly_valid_schema

SCHEMAS = [thaw_json_mapping(t.spec.input_schema) for t in native_tools()]
KEYS = [
    "file_path",
    "offset",
    "limit",
    "content",
    "old_string",
    "new_string",
    "replace_all",
    "pattern",
    "path",
    "glob",
    "output_mode",
    "-i",
    "-n",
    "head_limit",
    "command",
    "timeout",
    "description",
    "url",
    "prompt",
    "todos",
    "status",
    "id",
    "other",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 700_000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    st.sampled_from(["content", "count", "pending", "done", "files_with_matches"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=8,
)
objects = st.dictionaries(st.sampled_from(KEYS), values, max_size=5)


def test_every_native_schema_compiles_to_a_fast_check() -> None:
    assert all(compile_fast_check(s) is not None for s in SCHEMAS)


def test_unsupported_keywords_fall_back() -> None:
    one_of: dict[str, object] = {"type": "object", "oneOf": [{}]}
    assert compile_fast_check(one_of) is None
    assert compile_fast_check({"type": "object", "properties": {"a": {"pattern": "x"}}}) is None


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(objects, st.integers(0, len(SCHEMAS) - 1))
def test_fast_accept_implies_valid(instance: dict[str, Any], index: int) -> None:
    schema = SCHEMAS[index]
    check = compile_fast_check(schema)
    assert check is not None
    frozen = frozen_json(instance)
    if check(frozen):
        validator = cast(Any, Draft202012Validator(cast(dict[str, Any], schema)))
        assert validator.is_valid(instance), (schema, instance)


def test_valid_calls_take_the_fast_path() -> None:
    read_schema = next(
        s
        for s in SCHEMAS
        if "file_path" in cast(dict[str, Any], s["properties"]) and "offset" in cast(dict[str, Any], s["properties"])
    )
    check = compile_fast_check(read_schema)
    assert check is not None
    assert check(frozen_json({"file_path": "a", "offset": 2}))
    assert not check(frozen_json({"file_path": "a", "offset": True}))
    assert not check(frozen_json({"file_path": "a", "extra": 1}))


# Schemas in the subset, each value right most of the time and otherwise a near miss (a negative or float count, a
# repeated name, an unknown type, a wrong kind), plus keywords outside the subset: the check may say False for a
# valid schema, never True for an invalid one.
_NAMES = ["string", "object", "integer", "number", "boolean", "array", "null"]
_near_miss = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, -1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.sampled_from(["strnig", "int", ""]),
    st.lists(st.sampled_from(["a", "string"]), min_size=2, max_size=3),
    st.lists(values, max_size=2),
    st.dictionaries(st.sampled_from(KEYS), values, max_size=2),
)
_counts = st.one_of(st.integers(0, 9), st.sampled_from([0.0, 2.0]))


def _right_values(inner: st.SearchStrategy[object]) -> dict[str, st.SearchStrategy[object]]:
    return {
        "type": st.one_of(
            st.sampled_from(_NAMES), st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3, unique=True)
        ),
        "properties": st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
        "required": st.lists(st.sampled_from(KEYS), max_size=3, unique=True),
        "additionalProperties": inner,
        "items": inner,
        "enum": st.lists(values, max_size=3),
        "minLength": _counts,
        "maxLength": _counts,
        "minItems": _counts,
        "maxItems": _counts,
        "minimum": st.one_of(st.integers(-5, 5), st.floats(allow_nan=False)),
        "maximum": st.one_of(st.integers(-5, 5), st.floats(allow_nan=False)),
        "description": st.text(max_size=5),
        "title": st.text(max_size=5),
        "$comment": st.text(max_size=5),
        "default": values,
        "examples": st.lists(values, max_size=2),
        "deprecated": st.booleans(),
        "$schema": st.sampled_from(["https://json-schema.org/draft/2020-12/schema", "not a uri"]),
        "pattern": st.sampled_from(["^a", "("]),
        "format": st.sampled_from(["uri", "date"]),
    }


def _schema_node(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    right = _right_values(inner)

    @st.composite
    def node(draw: st.DrawFn) -> object:
        keys = draw(st.lists(st.sampled_from(sorted(right)), max_size=5, unique=True))
        out: dict[str, object] = {}
        for key in keys:
            wrong = draw(st.integers(0, 7)) == 0
            out[key] = draw(_near_miss if wrong else right[key])
        return out

    return node()


schemas = st.recursive(st.one_of(st.booleans(), _schema_node(st.just({}))), _schema_node, max_leaves=10)


def _jsonschema_accepts(schema: object) -> bool:
    try:
        Draft202012Validator.check_schema(cast(Any, schema))
    except SchemaError:
        return False
    return True


@pytest.mark.slow
@settings(max_examples=800, deadline=None)
@given(schemas)
def test_plainly_valid_implies_a_valid_schema(schema: object) -> None:
    if plainly_valid_schema(schema):
        assert _jsonschema_accepts(schema), schema


def test_every_native_and_action_schema_is_plainly_valid() -> None:
    from bearagent.registries.actions import DEFAULT_INPUTS

    assert all(plainly_valid_schema(s) for s in SCHEMAS)
    assert plainly_valid_schema(DEFAULT_INPUTS)
    assert plainly_valid_schema({"type": "object", "properties": {"doc": {"type": "string", "description": "x"}}})


def test_what_the_subset_cannot_vouch_for_goes_to_jsonschema() -> None:
    unvouched: tuple[object, ...] = (
        {"type": "strnig"},
        {"type": []},
        {"type": ["string", "string"]},
        {"required": ["a", "a"]},
        {"minLength": -1},
        {"maxItems": 1.0},  # valid for jsonschema (an integral float), but not vouched for here
        {"minimum": True},
        {"properties": {"a": {"type": 3}}},
        {"properties": {1: {"type": "string"}}},
        {"$schema": "https://json-schema.org/draft/2020-12/schema"},
        {"pattern": "x"},
        {"examples": "x"},
        "string",
    )
    for schema in unvouched:
        assert not plainly_valid_schema(schema), schema
