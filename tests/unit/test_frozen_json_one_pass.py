"""`JsonObject` fields are checked and frozen in one walk (issue 22): the result and every bound's message must be
what `freeze_json_mapping(validate_json_object(...))` gives."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import cast

import pytest

from bearagent.domain import _base
from bearagent.domain._base import JsonBoundsError, freeze_json_mapping, frozen_json, validate_json_object


def _both(value: object) -> tuple[object, object]:
    def two_pass() -> object:
        try:
            return freeze_json_mapping(validate_json_object(value))
        except JsonBoundsError as exc:
            return f"error: {exc}"

    def one_pass() -> object:
        try:
            return frozen_json(cast("Mapping[str, object]", value))
        except JsonBoundsError as exc:
            return f"error: {exc}"

    return two_pass(), one_pass()


SAMPLES: list[object] = [
    {},
    {"a": "x", "b": [1, 2.5, None, True, {"c": ("d", "e")}], "f": {"g": {"h": "i"}}},
    {"s": "x" * 40, "t": "y"},
    {"nested": [[["deep"]]], "k": "v"},
    {"bad": float("nan")},
    {"bad": {"inner": object()}},
    {1: "not a string key"},
    ["not", "an", "object"],
]


@pytest.mark.parametrize("value", SAMPLES)
def test_one_pass_equals_check_then_freeze(value: object) -> None:
    two, one = _both(value)
    assert one == two
    assert repr(one) == repr(two)


def test_result_is_deeply_read_only() -> None:
    frozen = frozen_json({"a": {"b": [1, {"c": "d"}]}})
    inner = frozen["a"]
    assert isinstance(frozen, MappingProxyType) and isinstance(inner, MappingProxyType)
    assert isinstance(inner["b"], tuple) and isinstance(inner["b"][1], MappingProxyType)


@pytest.mark.parametrize("limit", [2, 3, 4, 5])
def test_node_bound_at_string_leaves(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    monkeypatch.setattr(_base, "MAX_JSON_NODES", limit)
    for value in ({"a": "x", "b": "y", "c": "z"}, {"a": "x", "b": ["y", "z"], "c": "w"}):
        two, one = _both(value)
        assert one == two


@pytest.mark.parametrize("limit", [5, 9, 10, 11, 30])
def test_total_size_bound_at_string_leaves(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    monkeypatch.setattr(_base, "MAX_JSON_TOTAL_CHARS", limit)
    for value in ({"ab": "cdefgh", "x": "yyyy"}, {"a": {"b": "cccccccccc"}}, {"k": ["vvvvvv", "ww"]}):
        two, one = _both(value)
        assert one == two
        if isinstance(two, str):
            assert "max_total_chars" in two
