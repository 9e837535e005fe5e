"""One precedence rule for every registry: a higher source shadows a lower one by name, visibly; two definitions of
one name within one source make that name unusable (an error naming both paths), never a filesystem-order toss."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from bearagent.config.workspace import Source
from bearagent.domain.diagnostics import Diagnostic

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Candidate(Generic[T]):
    """One definition of `name` found in `source` at `path`."""

    name: str
    item: T
    source: Source
    path: str


@dataclass(frozen=True, slots=True)
class Resolved(Generic[T]):
    """The winning definition of a name and the lower definitions it shadows (highest first)."""

    name: str
    item: T
    source: Source
    path: str
    shadows: tuple[Candidate[T], ...] = ()


@dataclass
class Layered(Generic[T]):
    resolved: dict[str, Resolved[T]] = field(default_factory=lambda: {})
    broken: dict[str, tuple[str, ...]] = field(default_factory=lambda: {})
    diagnostics: list[Diagnostic] = field(default_factory=lambda: [])


def resolve_layers(candidates: Iterable[Candidate[T]], *, kind: str) -> Layered[T]:
    """Pick one winner per name. `kind` ("agent", "skill", ...) words the diagnostics."""
    groups: dict[str, list[Candidate[T]]] = {}
    for candidate in candidates:
        groups.setdefault(candidate.name, []).append(candidate)
    out: Layered[T] = Layered()
    for name in sorted(groups):
        group = sorted(groups[name], key=lambda c: (c.source.rank, c.path))
        by_source: dict[str, list[Candidate[T]]] = {}
        for candidate in group:
            by_source.setdefault(candidate.source.id, []).append(candidate)
        top_source = group[0].source.id
        for source_id, members in by_source.items():
            if len(members) < 2:
                continue
            paths = tuple(m.path for m in members)
            usable = "the name is unusable until this is fixed" if source_id == top_source else "it is shadowed anyway"
            out.diagnostics.append(
                Diagnostic(
                    severity="error",
                    code="config.duplicate_name",
                    message=f"{kind} {name!r} is defined {len(members)} times in {source_id}: "
                    + " and ".join(paths)
                    + f"; {usable}",
                    source=paths[0],
                    subject=name,
                    fix=f"rename or delete all but one of: {', '.join(paths)}",
                )
            )
        if len(by_source[top_source]) > 1:
            out.broken[name] = tuple(m.path for m in by_source[top_source])
            continue
        winner, rest = group[0], tuple(group[1:])
        out.resolved[name] = Resolved(name, winner.item, winner.source, winner.path, rest)
        for lower in rest:
            if lower.source.id == winner.source.id:
                continue
            out.diagnostics.append(
                Diagnostic(
                    severity="info",
                    code="config.shadowed",
                    message=f"{kind} {name!r} from {winner.source.id} ({winner.path}) shadows the one from "
                    f"{lower.source.id} ({lower.path})",
                    source=lower.path,
                    subject=name,
                    fix=f"rename one of them if you meant to keep both; `bearagent {kind}s show {name}` shows which "
                    "definition is used",
                )
            )
    return out
