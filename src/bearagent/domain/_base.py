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

    # defer_build: a model's validator is built on its first use, not when its class is defined. A CLI process
    # defines a few hundred models (every run event payload and version, every spec) and uses a few dozen; building
    # them all cost ~0.1 s of every `bearagent` start (~15 % of a `bearagent runs list`), paid by every command a
    # user types and by the test suite's thousands of CLI subprocesses. tests/unit/test_domain_models_build.py
    # builds every model, so a broken one still fails the suite rather than its first user.
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, hide_input_in_errors=True, defer_build=True
    )


def validate_json_object(value: object, *, where: str = "value") -> dict[str, JsonValue]:
    """Check that `value` is a JSON object within the bounds and return a plain deep copy of it.

    Accepts only dict/Mapping with string keys, lists/tuples, str, int, bool, finite float and None. Raises
    `JsonBoundsError` naming the bound (depth, nodes, string length, key length, total size) and the path.
    """
    if type(value) is not dict and not isinstance(value, Mapping):  # (the ABC check costs more than a dict)
        raise JsonBoundsError(f"{where} must be a JSON object, got {type(value).__name__}")
    copied = _checked_copy(value, where, False)  # pyright: ignore[reportUnknownArgumentType]
    assert isinstance(copied, dict)
    return copied


class _Counter:
    __slots__ = ("chars", "floats", "nodes")

    def __init__(self) -> None:
        self.nodes = 0
        self.chars = 0
        self.floats = False  # whether the walk met a float (`frozen_parsed_json`)


class _NotPlain(Exception):
    """The quick walk (`_plain_mapping`) met something only the full walk (`_copy_checked`) may judge: a bound
    broken (whose message the full walk words), a type other than the exact JSON ones, a float that is not
    finite. The full walk then starts again from the top."""


def _checked_copy(value: object, where: str, frozen: bool, counter: _Counter | None = None) -> JsonValue:
    """`_copy_checked` of a top-level JSON object: the quick walk when `value` holds only the exact JSON types
    (what a parser or a model's dump gives), else (and on any doubt) the full walk, which words every error.
    `counter.floats` tells afterwards whether a float was met (always True after the full walk)."""
    kind = type(value)
    quick = _Counter() if counter is None else counter
    if (kind is dict or kind is MappingProxyType) and MAX_JSON_DEPTH >= 1 and MAX_JSON_NODES >= 1:
        quick.nodes = 1
        try:
            return _plain_mapping(cast(Mapping[object, object], value), 1, quick, frozen)
        except _NotPlain:
            pass
    quick.floats = True  # not counted by the full walk: assume one
    return _copy_checked(value, where, 1, _Counter(), frozen)


def _plain_mapping(value: Mapping[object, object], depth: int, counter: _Counter, frozen: bool) -> JsonValue:
    """The copy `_copy_checked` makes of a dict (or read-only view of one) of exact JSON types, in a walk that
    checks the same bounds at the same points (so it succeeds exactly when that walk does, with the same result)
    but builds no paths: it raises `_NotPlain` wherever that walk might raise, or meets anything else. The caller
    counted `value` itself as a node and checked its depth."""
    max_total = MAX_JSON_TOTAL_CHARS
    nodes = counter.nodes + len(value)  # each item is a node
    if nodes > MAX_JSON_NODES:
        raise _NotPlain
    counter.nodes = nodes
    chars = counter.chars
    out: dict[str, JsonValue] = {}
    for key, item in value.items():
        if type(key) is not str or len(key) > MAX_JSON_KEY_CHARS:
            raise _NotPlain
        chars += len(key)
        if chars > max_total:
            raise _NotPlain
        kind = type(item)
        if kind is str:
            if len(item) > MAX_JSON_STRING_CHARS:  # pyright: ignore[reportArgumentType]
                raise _NotPlain
            chars += len(item)  # pyright: ignore[reportArgumentType]
            if chars > max_total:
                raise _NotPlain
        elif kind is int:
            chars += 8
        elif kind is bool or item is None:
            pass
        elif kind is dict or kind is MappingProxyType or kind is list or kind is tuple:
            if depth >= MAX_JSON_DEPTH:
                raise _NotPlain
            counter.chars = chars
            if kind is list or kind is tuple:
                item = _plain_sequence(item, depth + 1, counter, frozen)  # pyright: ignore[reportArgumentType]
            else:
                item = _plain_mapping(item, depth + 1, counter, frozen)  # pyright: ignore[reportArgumentType]
            chars = counter.chars
        elif kind is float:
            if not math.isfinite(item):  # pyright: ignore[reportArgumentType]
                raise _NotPlain
            counter.floats = True
            chars += 8
        else:
            raise _NotPlain
        out[key] = item  # pyright: ignore[reportArgumentType]
    counter.chars = chars
    return MappingProxyType(out) if frozen else out


def _plain_sequence(value: Sequence[object], depth: int, counter: _Counter, frozen: bool) -> JsonValue:
    """`_plain_mapping` for a list or tuple."""
    max_total = MAX_JSON_TOTAL_CHARS
    nodes = counter.nodes + len(value)
    if nodes > MAX_JSON_NODES:
        raise _NotPlain
    counter.nodes = nodes
    chars = counter.chars
    out: list[JsonValue] = []
    for item in value:
        kind = type(item)
        if kind is str:
            if len(item) > MAX_JSON_STRING_CHARS:  # pyright: ignore[reportArgumentType]
                raise _NotPlain
            chars += len(item)  # pyright: ignore[reportArgumentType]
            if chars > max_total:
                raise _NotPlain
        elif kind is int:
            chars += 8
        elif kind is bool or item is None:
            pass
        elif kind is dict or kind is MappingProxyType or kind is list or kind is tuple:
            if depth >= MAX_JSON_DEPTH:
                raise _NotPlain
            counter.chars = chars
            if kind is list or kind is tuple:
                item = _plain_sequence(item, depth + 1, counter, frozen)  # pyright: ignore[reportArgumentType]
            else:
                item = _plain_mapping(item, depth + 1, counter, frozen)  # pyright: ignore[reportArgumentType]
            chars = counter.chars
        elif kind is float:
            if not math.isfinite(item):  # pyright: ignore[reportArgumentType]
                raise _NotPlain
            counter.floats = True
            chars += 8
        else:
            raise _NotPlain
        out.append(item)  # pyright: ignore[reportArgumentType]
    counter.chars = chars
    return tuple(out) if frozen else out


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
    if type(value) is not dict and not isinstance(value, Mapping):
        raise JsonBoundsError(f"value must be a JSON object, got {type(value).__name__}")
    frozen = _checked_copy(value, "value", True)  # pyright: ignore[reportUnknownArgumentType]
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


def frozen_parsed_json(text: str, parsed: object) -> tuple[JsonMapping, bool]:
    """`frozen_json(parsed)` for `parsed` read from the JSON text `text` by a parser, and whether it may hold a
    float (for a parser that reads integers beyond 64 bits as floats: its result is exact only without any).
    `parsed` is used up: its containers are frozen in place.

    The size of the text bounds most of what the walk counts: every value starts at a character of its own (so
    there are at most `len(text)` nodes), a string or key is never longer than its source, each counted character
    of a string or key stands for at least one of the text and an integer (counted as 8) for at least one, and
    every level of nesting opens with a `{` or `[` of the text (inside strings too, so their count is an upper bound
    of the depth). A text short enough to keep all of those within the bounds is only frozen (and, past the key
    bound, its keys' length checked); any other goes through the full check."""
    size = len(text)
    if (
        type(parsed) is dict
        and size <= MAX_JSON_NODES
        and size <= MAX_JSON_STRING_CHARS
        and 8 * size <= MAX_JSON_TOTAL_CHARS
        and text.count("{") + text.count("[") <= MAX_JSON_DEPTH
    ):
        floats: list[bool] = []
        max_key = MAX_JSON_KEY_CHARS
        try:
            frozen = _freeze_parsed(parsed, floats, None if size <= max_key + 2 else max_key)  # pyright: ignore[reportUnknownArgumentType]
        except _NotPlain:
            pass
        else:
            return frozen, bool(floats)
    if not isinstance(parsed, Mapping):
        raise JsonBoundsError(f"value must be a JSON object, got {type(parsed).__name__}")
    counter = _Counter()
    frozen = _checked_copy(parsed, "value", True, counter)  # pyright: ignore[reportUnknownArgumentType]
    assert isinstance(frozen, MappingProxyType)
    return cast(JsonMapping, frozen), counter.floats


def _freeze_parsed(value: dict[str, object], floats: list[bool], max_key: int | None) -> JsonMapping:
    """A parser's dict frozen in place (nested dicts become read-only views, lists tuples) and wrapped in a read-only
    view: nothing else holds it. Keys are checked against `max_key` (None: the text is too short to break it); a
    float is noted in `floats`. `_NotPlain` for a long key or a type no JSON parser makes. (No `cast` in here: it is
    a call.)"""
    for key, item in value.items():
        if max_key is not None and len(key) > max_key:
            raise _NotPlain
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is dict:
            value[key] = _freeze_parsed(item, floats, max_key)  # pyright: ignore[reportArgumentType]
        elif kind is list:
            value[key] = _freeze_parsed_list(item, floats, max_key)  # pyright: ignore[reportArgumentType]
        elif kind is float:
            floats.append(True)
        else:
            raise _NotPlain
    return MappingProxyType(value)  # pyright: ignore[reportReturnType]


def _freeze_parsed_list(value: list[object], floats: list[bool], max_key: int | None) -> JsonValue:
    for i, item in enumerate(value):
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is dict:
            value[i] = _freeze_parsed(item, floats, max_key)  # pyright: ignore[reportArgumentType]
        elif kind is list:
            value[i] = _freeze_parsed_list(item, floats, max_key)  # pyright: ignore[reportArgumentType]
        elif kind is float:
            floats.append(True)
        else:
            raise _NotPlain
    return tuple(value)  # pyright: ignore[reportReturnType]
