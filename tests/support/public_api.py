"""A JSON description of the public API: every name of `bearagent` and `bearagent.plugin`, with its kind and its
signature (callables), fields (pydantic models, dataclasses) and public members (classes, protocols).

Used by `tests/contract/test_public_api.py` and `scripts/update_public_api.py`. Types are written as the source
spells them (`ModelEntry`, not `bearagent.domain.specs.ModelEntry`): moving an implementation module does not
change the snapshot, changing what a user or a plugin calls does.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pydantic

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "tests" / "contract" / "snapshots" / "public_api.json"
NAMESPACES = ("bearagent", "bearagent.plugin")
REGENERATE = "uv run python scripts/update_public_api.py"

_MODULE_PREFIX = re.compile(r"\b(?:[a-z_][a-z0-9_]*\.)+(?=[A-Za-z_])")
_ADDRESS = re.compile(r"<([\w.]+)(?: object)? at 0x[0-9a-f]+>")
JsonDict = dict[str, object]


def public_api() -> dict[str, JsonDict]:
    """{namespace: {name: description}} for every name in each namespace's `__all__`."""
    out: dict[str, JsonDict] = {}
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        names = cast(list[str], module.__all__)
        out[namespace] = {name: describe(getattr(module, name)) for name in sorted(names)}
    return out


def render(api: dict[str, JsonDict]) -> str:
    return json.dumps(api, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def drift(current: dict[str, JsonDict], snapshot: dict[str, JsonDict]) -> list[str]:
    """One line per difference: a name added or removed, or what changed in one name's description."""
    problems: list[str] = []
    for namespace in sorted({*current, *snapshot}):
        now, before = current.get(namespace, {}), snapshot.get(namespace, {})
        for name in sorted({*now, *before}):
            if name not in before:
                problems.append(f"{namespace}.{name}: new public name (not in the snapshot)")
            elif name not in now:
                problems.append(f"{namespace}.{name}: removed from the public API (still in the snapshot)")
            elif now[name] != before[name]:
                for detail in _changes(now[name], before[name]):
                    problems.append(f"{namespace}.{name}: {detail}")
    return problems


def _changes(now: object, before: object, path: str = "") -> Iterator[str]:
    if isinstance(now, dict) and isinstance(before, dict):
        a, b = cast(JsonDict, now), cast(JsonDict, before)
        for key in sorted({*a, *b}):
            where = f"{path}.{key}" if path else key
            if key not in b:
                yield f"{where} added: {json.dumps(a[key])}"
            elif key not in a:
                yield f"{where} removed (was {json.dumps(b[key])})"
            elif a[key] != b[key]:
                yield from _changes(a[key], b[key], where)
        return
    yield f"{path or 'value'} changed: {json.dumps(before)} -> {json.dumps(now)}"


# ----- describing one object -----


def describe(obj: object) -> JsonDict:
    if isinstance(obj, str):
        return {"kind": "constant", "type": "str"}
    if inspect.isclass(obj):
        return _describe_class(obj)
    if inspect.isfunction(obj):
        return {"kind": "function", "signature": signature(obj)}
    if callable(obj) and not _is_typing_object(obj):
        return {"kind": "object", "type": type(obj).__name__}
    return {"kind": "type", "value": type_text(obj)}


def _is_typing_object(obj: object) -> bool:
    return type(obj).__module__ in ("typing", "typing_extensions", "types", "collections.abc")


def _describe_class(cls: type[object]) -> JsonDict:
    out: JsonDict = {}
    bases = [
        base.__name__
        for base in cls.__mro__[1:]
        if (base.__module__ == "builtins" and base is not object) or _is_public(base)
    ]
    if bases:
        out["bases"] = bases
    if issubclass(cls, pydantic.BaseModel):
        out["kind"] = "model"
        out["fields"] = _model_fields(cls)
    elif dataclasses.is_dataclass(cls):
        out["kind"] = "dataclass"
        out["fields"] = _dataclass_fields(cls)
    elif getattr(cls, "_is_protocol", False):
        out["kind"] = "protocol"
    else:
        out["kind"] = "class"
        init = _own_dicts(cls).get("__init__")
        if inspect.isfunction(init):
            out["signature"] = signature(init, drop_first=True)
    members = _members(cls)
    if members:
        out["members"] = members
    return out


def _is_public(cls: type[object]) -> bool:
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        exported = cast(list[str], module.__all__)
        if cls.__name__ in exported and getattr(module, cls.__name__) is cls:
            return True
    return False


def _own_dicts(cls: type[object]) -> JsonDict:
    merged: JsonDict = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith("bearagent"):
            merged.update(cast(dict[str, object], vars(klass)))
    return merged


def _members(cls: type[object]) -> JsonDict:
    """Public methods, properties and class attributes defined by BearAgent classes in the MRO."""
    out: JsonDict = {}
    is_model = issubclass(cls, pydantic.BaseModel)
    fields: set[str] = set(cls.model_fields) if issubclass(cls, pydantic.BaseModel) else set()
    if dataclasses.is_dataclass(cls):
        fields = {f.name for f in dataclasses.fields(cls)}
    for name, value in sorted(_own_dicts(cls).items()):
        if name.startswith("_") and name != "__call__":
            continue
        if name in fields or (is_model and name.startswith("model_")):
            continue
        if isinstance(value, property):
            getter = value.fget
            returns = _return_text(getter) if getter is not None else ""
            out[name] = f"property -> {returns}" if returns else "property"
        elif isinstance(value, classmethod):
            method = cast(Callable[..., object], value.__func__)  # pyright: ignore[reportUnknownMemberType]
            out[name] = "classmethod " + signature(method, drop_first=True)
        elif isinstance(value, staticmethod):
            out[name] = "staticmethod " + signature(cast(Callable[..., object], value.__func__))
        elif inspect.isfunction(value):
            prefix = "async " if inspect.iscoroutinefunction(value) or inspect.isasyncgenfunction(value) else ""
            out[name] = prefix + signature(value, drop_first=True)
    for name, annotation in _class_annotations(cls).items():
        if not name.startswith("_") and name not in fields and name not in out and not is_model:
            out[name] = f"attribute: {annotation}"
    return out


def _class_annotations(cls: type[object]) -> dict[str, str]:
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith("bearagent"):
            raw = cast(dict[str, object], vars(klass).get("__annotations__", {}))
            out.update({name: _annotation_text(value) for name, value in raw.items()})
    return out


def _model_fields(cls: type[pydantic.BaseModel]) -> JsonDict:
    annotations = _class_annotations(cls)
    out: JsonDict = {}
    for name, info in cls.model_fields.items():
        text = annotations.get(name) or type_text(info.annotation)
        if not info.is_required():
            text += " = " + (_default_text(info.default) if info.default_factory is None else "<factory>")
        out[name] = text
    return out


def _dataclass_fields(cls: type[object]) -> JsonDict:
    out: JsonDict = {}
    assert dataclasses.is_dataclass(cls)
    for f in dataclasses.fields(cls):
        text = _annotation_text(f.type)
        if f.default is not dataclasses.MISSING:
            text += " = " + _default_text(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            text += " = <factory>"
        out[f.name] = text
    return out


def signature(func: Callable[..., object], *, drop_first: bool = False) -> str:
    """`(a: int, *, b: str = 'x') -> None`, with annotations as written in the source."""
    sig = inspect.signature(func)
    params = list(sig.parameters.values())
    if drop_first and params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        params = params[1:]
    parts: list[str] = []
    star_done = False
    in_positional_only = False
    for p in params:
        if in_positional_only and p.kind is not p.POSITIONAL_ONLY:
            parts.append("/")
        in_positional_only = p.kind is p.POSITIONAL_ONLY
        if p.kind is p.KEYWORD_ONLY and not star_done:
            parts.append("*")
        star_done = star_done or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        text = prefix + p.name
        if p.annotation is not p.empty:
            text += f": {_annotation_text(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {_default_text(p.default)}"
        parts.append(text)
    if in_positional_only:
        parts.append("/")
    out = f"({', '.join(parts)})"
    if sig.return_annotation is not sig.empty:
        out += f" -> {_annotation_text(sig.return_annotation)}"
    return out


def _return_text(func: Callable[..., object]) -> str:
    returns = inspect.signature(func).return_annotation
    return "" if returns is inspect.Signature.empty else _annotation_text(returns)


def _annotation_text(annotation: object) -> str:
    if isinstance(annotation, str):
        return annotation
    return type_text(annotation)


def _default_text(value: object) -> str:
    if type(value) in (set, frozenset):  # a set's repr order changes with string hashing: sort it
        items = sorted(repr(item) for item in cast(frozenset[object], value))
        return f"{type(value).__name__}({{{', '.join(items)}}})"
    return _ADDRESS.sub(lambda m: f"<{m.group(1).rsplit('.', 1)[-1]}>", repr(value))


def type_text(value: object) -> str:
    """A type or alias as text, module paths dropped (`Mapping[str, JsonValue]`)."""
    alias_value: Any = getattr(value, "__value__", None)
    if type(value).__name__ == "TypeAliasType" and alias_value is not None:
        value = alias_value
    text = value.__name__ if isinstance(value, type) else repr(value)
    return _MODULE_PREFIX.sub("", _ADDRESS.sub(lambda m: f"<{m.group(1).rsplit('.', 1)[-1]}>", text))
