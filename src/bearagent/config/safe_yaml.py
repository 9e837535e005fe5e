"""Bounds on YAML before it is turned into objects: a size limit and an alias-expansion limit.

Every YAML file BearAgent reads from a workspace (config.yaml, frontmatter, scripted-model scripts) may come from a
stranger's repository; an alias bomb (nested anchors referenced many times) would otherwise take gigabytes of
memory and minutes of CPU. A leaf module (it imports only PyYAML) so that every layer can use it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, cast

import yaml

_LOADER: type[yaml.SafeLoader] = cast(type[yaml.SafeLoader], getattr(yaml, "CSafeLoader", yaml.SafeLoader))

try:
    _Base: type[yaml.SafeLoader] = cast(type[yaml.SafeLoader], yaml.CSafeLoader)
except AttributeError:  # pragma: no cover - libyaml missing
    _Base = yaml.SafeLoader


class _Loader(_Base):  # type: ignore[valid-type,misc]
    """Safe loader that refuses duplicate keys (PyYAML would silently keep the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if isinstance(key, (str, int, float, bool)) or key is None:
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (each key may appear once)", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def yaml_loader() -> type[yaml.SafeLoader]:
    """The safe loader BearAgent parses YAML with (libyaml when available; duplicate keys refused)."""
    return _Loader


MAX_YAML_BYTES = 1_048_576
"""The largest YAML document (config, frontmatter, script) BearAgent parses."""
MAX_YAML_ALIASES = 100
MAX_YAML_NODES = 200_000
"""Alias references, and nodes counted with every alias expanded: an alias bomb (nested anchors referenced many
times) stops at these limits before any object is built."""


def yaml_bounds_problem(text: str) -> tuple[str, str, int | None] | None:
    """`(code, message, line)` when `text` is over the size limit or expands past the alias limits, else None.
    Walks the parser's events only (no objects are built); documents without aliases skip the walk."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_BYTES:
        return ("config.yaml_too_large", f"it is {size:,} bytes; the limit is {MAX_YAML_BYTES:,}", None)
    if "*" not in text:
        return None
    anchors: dict[str, int] = {}
    stack: list[tuple[str | None, int]] = []  # (anchor, nodes so far) of each open collection
    total = 0
    aliases = 0

    def close(count: int) -> None:
        nonlocal total
        if stack:
            anchor, inner = stack[-1]
            stack[-1] = (anchor, inner + count)
        else:
            total += count

    try:
        events = cast(Iterable[yaml.Event], yaml.parse(text, Loader=_LOADER))  # pyright: ignore[reportUnknownMemberType]
        for event in events:
            if isinstance(event, yaml.AliasEvent):
                aliases += 1
                count = anchors.get(str(event.anchor), 1)
                if aliases > MAX_YAML_ALIASES:
                    line = _line(event)
                    return ("config.yaml_aliases", f"it uses more than {MAX_YAML_ALIASES} aliases (*name)", line)
                close(count)
            elif isinstance(event, (yaml.ScalarEvent,)):
                if event.anchor:
                    anchors[str(event.anchor)] = 1
                close(1)
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                stack.append((event.anchor, 1))
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                anchor, count = stack.pop()
                if anchor:
                    anchors[str(anchor)] = count
                close(count)
            if total + sum(c for _, c in stack) > MAX_YAML_NODES:
                line = _line(event)
                return (
                    "config.yaml_aliases",
                    f"its aliases expand to more than {MAX_YAML_NODES:,} nodes (an alias bomb?)",
                    line,
                )
    except yaml.YAMLError:
        return None  # the real parse reports it with its line
    return None


def _line(event: yaml.Event) -> int | None:
    mark = cast("yaml.Mark | None", getattr(event, "start_mark", None))
    return int(mark.line) + 1 if mark is not None else None
