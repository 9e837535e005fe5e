"""The shared rules of every domain object: restrict, then freeze, thaw on output.

`DomainModel` forbids unknown fields, forbids assignment after construction and validates defaults. Pydantic's
`frozen=True` does not stop a caller from mutating a nested dict it passed in, so JSON-shaped fields go through
`validate_json_object` (a real JSON object within fixed bounds), then `freeze_json_mapping` (a deep copy made of
read-only mappings and tuples), and are turned back into plain JSON by `thaw_json_mapping` when serialised.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, TypeAlias, Union, cast

from pydantic import BaseModel, ConfigDict, PlainSerializer, PlainValidator, WithJsonSchema
from typing_extensions import TypeAliasType

JsonScalar: TypeAlias = Union[None, bool, int, float, str]
if TYPE_CHECKING:
    JsonValue: TypeAlias = Union[JsonScalar, Sequence["JsonValue"], Mapping[str, "JsonValue"]]
else:
    # At runtime a named (TypeAliasType) recursive alias: pydantic resolves it as one recursive definition wherever
    # it is used. A plain `TypeAlias` with string forward refs made every model holding a `JsonObject` fail to build
    # (unresolved "JsonValue" in the using module, or infinite recursion while generating the schema).
    JsonValue = TypeAliasType("JsonValue", Union[JsonScalar, Sequence["JsonValue"], Mapping[str, "JsonValue"]])
JsonMapping: TypeAlias = Mapping[str, JsonValue]

MAX_JSON_DEPTH = 32
MAX_JSON_NODES = 10_000
MAX_JSON_STRING_CHARS = 1_048_576
MAX_JSON_KEY_CHARS = 1_024
MAX_JSON_TOTAL_CHARS = 4 * 1_048_576


class JsonBoundsError(ValueError):
    """A JSON value broke one of the boundary limits; the message names the limit and where."""


class DomainModel(BaseModel):
    """Base of every boundary type: no unknown fields, immutable, defaults validated.

    Validation errors name the field and the rule but never echo the rejected input (`hide_input_in_errors`): what
    is rejected at the boundary is often what must not leak (a token in error details, a secret in tool arguments).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, hide_input_in_errors=True)


def validate_json_object(value: object, *, where: str = "value") -> dict[str, JsonValue]:
    """Check that `value` is a JSON object within the bounds and return a plain deep copy of it.

    Accepts only dict/Mapping with string keys, lists/tuples, str, int, bool, finite float and None. Raises
    `JsonBoundsError` naming the bound (depth, nodes, string length, key length, total size) and the path.
    """
    if not isinstance(value, Mapping):
        raise JsonBoundsError(f"{where} must be a JSON object, got {type(value).__name__}")
    counter = _Counter()
    copied = _copy_checked(cast(object, value), where, 1, counter, False)
    assert isinstance(copied, dict)
    return copied


class _Counter:
    __slots__ = ("chars", "nodes")

    def __init__(self) -> None:
        self.nodes = 0
        self.chars = 0


def _copy_checked(value: object, path: str, depth: int, counter: _Counter, frozen: bool) -> JsonValue:
    """The checked deep copy of one JSON value: plain dicts and lists, or (`frozen`) read-only mappings and tuples
    built in the same pass, so a frozen field is walked once, not checked and then copied again."""
    counter.nodes += 1
    if counter.nodes > MAX_JSON_NODES:
        raise JsonBoundsError(f"{path}: JSON has more than {MAX_JSON_NODES} nodes (max_nodes={MAX_JSON_NODES})")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        counter.chars += 8
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise JsonBoundsError(f"{path}: non-finite float {value!r} is not JSON")
        counter.chars += 8
        return value
    if isinstance(value, str):
        if len(value) > MAX_JSON_STRING_CHARS:
            raise JsonBoundsError(
                f"{path}: string of {len(value)} characters exceeds max_string_chars={MAX_JSON_STRING_CHARS}"
            )
        _add_chars(counter, len(value), path)
        return value
    if depth > MAX_JSON_DEPTH:
        raise JsonBoundsError(f"{path}: JSON nesting deeper than max_depth={MAX_JSON_DEPTH}")
    if isinstance(value, Mapping):
        out: dict[str, JsonValue] = {}
        mapping = cast(Mapping[object, object], value)
        for key, item in mapping.items():
            if not isinstance(key, str):
                raise JsonBoundsError(f"{path}: object key {key!r} is not a string")
            if len(key) > MAX_JSON_KEY_CHARS:
                raise JsonBoundsError(f"{path}: object key longer than max_key_chars={MAX_JSON_KEY_CHARS}")
            _add_chars(counter, len(key), path)
            kind = type(item)
            if counter.nodes < MAX_JSON_NODES and (
                (kind is str and len(item) <= MAX_JSON_STRING_CHARS)  # pyright: ignore[reportArgumentType]
                or kind is int
                or kind is bool
                or item is None
            ):
                # the common leaves, checked as the recursive call would (its path is only built for a message)
                counter.nodes += 1
                if kind is str:
                    counter.chars += len(item)  # pyright: ignore[reportArgumentType]
                    if counter.chars > MAX_JSON_TOTAL_CHARS:
                        _add_chars(counter, 0, f"{path}.{key}")
                elif kind is int:
                    counter.chars += 8
                out[key] = cast(JsonValue, item)
            else:
                out[key] = _copy_checked(item, f"{path}.{key}", depth + 1, counter, frozen)
        return MappingProxyType(out) if frozen else out
    if isinstance(value, (list, tuple)):
        items = cast(Sequence[object], value)
        copied = [_copy_checked(item, f"{path}[{i}]", depth + 1, counter, frozen) for i, item in enumerate(items)]
        return tuple(copied) if frozen else copied
    raise JsonBoundsError(f"{path}: {type(value).__name__} is not a JSON type")


def _add_chars(counter: _Counter, n: int, path: str) -> None:
    counter.chars += n
    if counter.chars > MAX_JSON_TOTAL_CHARS:
        raise JsonBoundsError(f"{path}: JSON total size exceeds max_total_chars={MAX_JSON_TOTAL_CHARS}")


def freeze_json_mapping(value: Mapping[str, JsonValue]) -> JsonMapping:
    """Deep-copy a JSON object into read-only mappings (objects) and tuples (arrays)."""
    return MappingProxyType({key: _freeze(item) for key, item in value.items()})


def _freeze(value: JsonValue) -> JsonValue:
    if isinstance(value, Mapping):
        return MappingProxyType({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(item) for item in value)
    return value


def thaw_json_mapping(value: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """Turn a frozen JSON object back into plain dicts and lists (for serialisation)."""
    return {key: thaw_json_value(item) for key, item in value.items()}


def thaw_json_value(value: JsonValue) -> JsonValue:
    """Thaw any frozen JSON value (see `thaw_json_mapping`)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value  # the leaves, told apart without the ABC checks below
    if isinstance(value, Mapping):
        return {key: thaw_json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) and not isinstance(value, str):
        return [thaw_json_value(item) for item in value]
    return value


def _restrict_and_freeze(value: object) -> JsonMapping:
    """`freeze_json_mapping(validate_json_object(value))` in one walk: the same checks, messages and result."""
    if not isinstance(value, Mapping):
        raise JsonBoundsError(f"value must be a JSON object, got {type(value).__name__}")
    frozen = _copy_checked(cast(object, value), "value", 1, _Counter(), True)
    assert isinstance(frozen, MappingProxyType)
    return cast(JsonMapping, frozen)


JsonObject = Annotated[
    JsonMapping,
    PlainValidator(_restrict_and_freeze),
    PlainSerializer(thaw_json_mapping),
    WithJsonSchema({"type": "object"}),
]
"""A bounded, deeply frozen JSON object field: use it for every free-form JSON payload."""


def frozen_json(value: Mapping[str, object]) -> JsonMapping:
    """Restrict and freeze in one call (for code building payloads outside a model)."""
    return _restrict_and_freeze(value)
