"""What every layered registry shares: name lookup over one `Layered` resolution, and the wording of the
diagnostics their parsers report (frontmatter keys, unknown keys, the first pydantic error), and the `arguments` names
skills and commands share."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Generic, Literal, Protocol, Self, TypeVar, cast

from pydantic import ValidationError

from bearagent.config.files import FrontmatterDoc, did_you_mean, load_frontmatter
from bearagent.config.layers import Candidate, Layered, Resolved, resolve_layers
from bearagent.config.safe_read import check_workspace_file, source_root
from bearagent.config.workspace import Source
from bearagent.domain.diagnostics import Diagnostic


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T")
N = TypeVar("N", bound=_Named)
# (severity, code, key, message, fix): severity "error", "warning" or "info"; key is the frontmatter field or None.
Reporter = Callable[[str, str, "str | None", str, str], None]


class LayeredRegistry(Generic[T]):
    """Resolved items by name (`get` is an exact lookup); names defined twice in their top source are `broken`."""

    def __init__(self, layered: Layered[T], diagnostics: Sequence[Diagnostic]) -> None:
        self._layered = layered
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)

    @classmethod
    def from_candidates(
        cls, candidates: Iterable[Candidate[T]], diagnostics: Sequence[Diagnostic], *, kind: str
    ) -> Self:
        """Resolve precedence (`kind` words the duplicate-name diagnostics, which follow `diagnostics`)."""
        layered = resolve_layers(candidates, kind=kind)
        return cls(layered, [*diagnostics, *layered.diagnostics])

    def get(self, name: str) -> T | None:
        found = self._layered.resolved.get(name)
        return found.item if found else None

    def resolved(self, name: str) -> Resolved[T] | None:
        return self._layered.resolved.get(name)

    def names(self) -> list[str]:
        return sorted(self._layered.resolved)

    def all(self) -> list[T]:
        return [self._layered.resolved[n].item for n in self.names()]

    def entries(self) -> list[Resolved[T]]:
        return [self._layered.resolved[n] for n in self.names()]

    @property
    def broken(self) -> Mapping[str, tuple[str, ...]]:
        return self._layered.broken


def frontmatter_candidates(
    files: Iterable[tuple[Source, Path]],
    diags: list[Diagnostic],
    *,
    what: str,
    parse: Callable[[FrontmatterDoc, Source], tuple[N | None, list[Diagnostic]]],
    known_keys: Collection[str] | None = None,
    optional_frontmatter: bool = False,
) -> list[Candidate[N]]:
    """Read and `parse` each `(source, file)`; a file that cannot be read or parsed adds its diagnostics to `diags`
    (`what` names the file in them) and no candidate. `known_keys` (the file kind's keys) turns on the lenient
    reading of frontmatter that is not strict YAML, as Claude Code reads it (`config.lenient_frontmatter`)."""
    candidates: list[Candidate[N]] = []
    for source, path in files:
        # a workspace file that is a symlink out of the workspace is refused, never read (config/safe_read.py)
        if not check_workspace_file(source_root(source), path, diags, what=f"{what} {path.name}"):
            continue
        doc = load_frontmatter(path, diags, what=what, known_keys=known_keys, optional=optional_frontmatter)
        if doc is None:
            continue
        spec, file_diags = parse(doc, source)
        diags.extend(file_diags)
        if spec is not None:
            candidates.append(Candidate(spec.name, spec, source, str(path)))
    return candidates


def severity_of(severity: str) -> Literal["error", "warning", "info"]:
    return "error" if severity == "error" else ("warning" if severity == "warning" else "info")


class EntryReporter(Protocol):
    def __call__(self, severity: str, code: str, message: str, fix: str, field: str | None = None) -> None: ...


def entry_reporter(
    diags: list[Diagnostic], *, source: str, line: int | None, field: str | None, subject: str | None
) -> EntryReporter:
    """A reporter appending to `diags` a diagnostic about one config entry (`field` unless the call names another)."""

    def add(severity: str, code: str, message: str, fix: str, field: str | None = field) -> None:
        diags.append(
            Diagnostic(
                severity=severity_of(severity),
                code=code,
                message=message,
                source=source,
                line=line,
                field=field,
                fix=fix,
                subject=subject,
            )
        )

    return add


def frontmatter_reporter(doc: FrontmatterDoc, diags: list[Diagnostic], *, top_level_line: bool = False) -> Reporter:
    """A `Reporter` appending to `diags` a diagnostic about `key` of `doc` (its line when the key is found there).
    With `top_level_line`, a dotted key (`policy.max_turns`) is located by its first part."""

    def add(severity: str, code: str, key: str | None, message: str, fix: str) -> None:
        diags.append(
            Diagnostic(
                severity=severity_of(severity),
                code=code,
                message=message,
                source=str(doc.path),
                line=doc.line_of(key.split(".")[0] if top_level_line else key) if key else None,
                field=key,
                fix=fix,
            )
        )

    return add


def unknown_key(
    key: str, known: Collection[str], what: str, *, candidates: Iterable[str] | None = None
) -> tuple[str, str]:
    """`(message, fix)` for a key that is not one of `known` and is ignored; `what` names it in the message (e.g.
    `'x' in action file`); the guess is drawn from `candidates` (default: `known`)."""
    guess = did_you_mean(key, known if candidates is None else candidates)
    message = f"unknown key {what}" + (f" (did you mean {guess!r}?)" if guess else "") + "; it is ignored"
    return message, f"rename it to {guess!r}" if guess else f"known keys: {', '.join(sorted(known))}"


def first_error(exc: ValidationError) -> tuple[str, str]:
    """`(dotted location, message)` of a pydantic error's first problem."""
    first = exc.errors()[0]
    return ".".join(str(p) for p in first["loc"]), first["msg"]


_ARGUMENT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def argument_names(value: object) -> tuple[str, ...] | None:
    """Claude Code's `arguments` (a list, or a string split on spaces and commas) as names; None when invalid."""
    if value is None:
        return ()
    if isinstance(value, str):
        items: list[object] = [v for v in re.split(r"[\s,]+", value) if v]
    elif isinstance(value, list):
        items = list(cast(list[object], value))
    else:
        return None
    names = tuple(str(v) for v in items)
    if len(names) > 32 or not all(isinstance(v, str) and _ARGUMENT_NAME.match(v) for v in items):
        return None
    if any(n in ("ARGUMENTS",) or n.isdigit() for n in names):
        return None
    return names
