"""Fast accept-checks for the common JSON Schema subset tool specs use, so `jsonschema` is imported only when one
has to decide.

`compile_fast_check(schema)` returns a function that returns True only if the instance is valid, or None if the
schema uses a keyword outside the subset. A False answer is never trusted on its own: the caller then runs the full
`jsonschema` validator, which decides and words the error. So the fast path can only make valid calls cheaper.

`plainly_valid_schema(schema)` is the same idea for the schema itself: True only if it is a valid draft 2020-12
schema written in the subset (every value of the type its metaschema requires); False means "ask `jsonschema`'s
`check_schema`", which decides and words the error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import cast

Check = Callable[[object], bool]

_IGNORED = frozenset({"description", "title", "default", "examples", "$comment", "$schema", "deprecated"})
_SUPPORTED = _IGNORED | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "items",
    "minItems",
    "maxItems",
}


_EXACT: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict, MappingProxyType),
    "array": (list, tuple),
}


def _is_type(value: object, name: str) -> bool:
    if type(value) in _EXACT.get(name, ()):
        return True
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "object":
        return isinstance(value, Mapping)
    if name == "array":
        return isinstance(value, (list, tuple))
    if name == "null":
        return value is None
    return False


def compile_fast_check(schema: Mapping[str, object]) -> Check | None:
    if any(key not in _SUPPORTED for key in schema):
        return None
    checks: list[Check] = []
    kind = schema.get("type")
    if isinstance(kind, str):
        checks.append(lambda v, t=kind: _is_type(v, t))
    elif isinstance(kind, (list, tuple)):
        names = [str(k) for k in cast(Sequence[object], kind)]
        checks.append(lambda v, ns=tuple(names): any(_is_type(v, n) for n in ns))
    elif kind is not None:
        return None
    if "enum" in schema:
        options = list(cast(Sequence[object], schema["enum"]))
        checks.append(lambda v, os_=tuple(options): any(type(v) is type(o) and v == o for o in os_))
    for key, op in (("minLength", 1), ("maxLength", -1)):
        if key in schema:
            bound = cast(int, schema[key])
            if op > 0:
                checks.append(lambda v, b=bound: not isinstance(v, str) or len(v) >= b)
            else:
                checks.append(lambda v, b=bound: not isinstance(v, str) or len(v) <= b)
    for key in ("minimum", "maximum"):
        if key in schema:
            bound = cast(float, schema[key])
            lower = key == "minimum"
            checks.append(
                lambda v, b=bound, lo=lower: (
                    not isinstance(v, (int, float)) or isinstance(v, bool) or (v >= b if lo else v <= b)
                )
            )
    if "minItems" in schema or "maxItems" in schema or "items" in schema:
        lo_items = cast(int, schema.get("minItems", 0))
        hi_items = cast(int, schema.get("maxItems", 1 << 62))
        item_check: Check | None = None
        if "items" in schema:
            item_schema = schema["items"]
            if not isinstance(item_schema, Mapping):
                return None
            item_check = compile_fast_check(cast(Mapping[str, object], item_schema))
            if item_check is None:
                return None

        def check_array(v: object, ic: Check | None = item_check) -> bool:
            if not isinstance(v, (list, tuple)):
                return True
            seq = cast(Sequence[object], v)
            if not lo_items <= len(seq) <= hi_items:
                return False
            return ic is None or all(ic(item) for item in seq)

        checks.append(check_array)
    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        props_raw = schema.get("properties", {})
        if not isinstance(props_raw, Mapping):
            return None
        props: dict[str, Check] = {}
        for prop, sub in cast(Mapping[str, object], props_raw).items():
            if not isinstance(sub, Mapping):
                return None
            compiled = compile_fast_check(cast(Mapping[str, object], sub))
            if compiled is None:
                return None
            props[prop] = compiled
        required = [str(r) for r in cast(Sequence[object], schema.get("required", ()))]
        additional = schema.get("additionalProperties", True)
        if not isinstance(additional, bool):
            return None
        closed = additional is False

        def check_object(v: object) -> bool:
            if type(v) is not MappingProxyType and type(v) is not dict and not isinstance(v, Mapping):
                return True
            obj = cast(Mapping[str, object], v)
            for r in required:
                if r not in obj:
                    return False
            for key, item in obj.items():
                sub_check = props.get(key)
                if sub_check is None:
                    if closed:
                        return False
                elif not sub_check(item):
                    return False
            return True

        checks.append(check_object)
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


_TYPE_NAMES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems")


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0


def _is_string_set(value: object) -> bool:
    if not isinstance(value, (list, tuple)):
        return False
    items = cast(Sequence[object], value)
    return all(isinstance(item, str) for item in items) and len(set(cast(Sequence[str], items))) == len(items)


def plainly_valid_schema(schema: object) -> bool:
    """True only if `schema` is a valid draft 2020-12 schema that uses nothing but the subset (checked the way its
    metaschema would, more strictly where that is simpler: counts must be `int`s); False is no verdict."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping):
        return False
    node = cast(Mapping[object, object], schema)
    for key, value in node.items():
        if key in ("title", "description", "$comment"):
            ok = isinstance(value, str)
        elif key == "default":
            ok = True
        elif key == "examples":
            ok = isinstance(value, (list, tuple))
        elif key == "deprecated":
            ok = isinstance(value, bool)
        elif key == "type":
            if isinstance(value, str):
                ok = value in _TYPE_NAMES
            else:
                names = cast(Sequence[str], value)
                ok = _is_string_set(value) and len(names) > 0 and set(names) <= _TYPE_NAMES
        elif key == "enum":
            ok = isinstance(value, (list, tuple))
        elif key in _COUNTS:
            ok = _is_count(value)
        elif key in ("minimum", "maximum"):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif key in ("items", "additionalProperties"):
            ok = plainly_valid_schema(value)
        elif key == "properties":
            ok = isinstance(value, Mapping) and all(
                isinstance(name, str) and plainly_valid_schema(sub)
                for name, sub in cast(Mapping[object, object], value).items()
            )
        elif key == "required":
            ok = _is_string_set(value)
        else:  # `$schema` (a URI checked by format), and every keyword outside the subset
            ok = False
        if not ok:
            return False
    return True
