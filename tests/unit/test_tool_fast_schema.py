"""The fast schema pre-check never accepts what jsonschema rejects (it only makes valid calls cheaper)."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from bearagent.domain._base import frozen_json, thaw_json_mapping
from bearagent.tools.builtin import native_tools
from bearagent.tools.fast_schema import compile_fast_check

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
