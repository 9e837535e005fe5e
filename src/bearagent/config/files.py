"""Reading YAML and frontmatter files into plain data plus diagnostics that name the file and the line.

Lenient per file: a file that cannot be read or parsed yields `None` and one error diagnostic; the caller skips it
and every other file still loads. Uses libyaml's C loader when available (1,000 agent files load in well under a
second).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import yaml

from bearagent.config.safe_yaml import yaml_bounds_problem
from bearagent.config.safe_yaml import yaml_loader as yaml_loader
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.suggest import did_you_mean as did_you_mean
from bearagent.domain.suggest import suggestion as suggestion

_FENCE = re.compile(r"^---[ \t]*\r?$")


def key_line(text: str, key: str, *, first_line: int = 1) -> int | None:
    """Best-effort 1-based line of a top-level `key:` in YAML `text` whose first line is `first_line`."""
    pattern = re.compile(rf"^[\"']?{re.escape(key)}[\"']?[ \t]*:", re.MULTILINE)
    match = pattern.search(text)
    if match is None:
        match = re.compile(rf"^[ \t-]*[\"']?{re.escape(key)}[\"']?[ \t]*:", re.MULTILINE).search(text)
    if match is None:
        return None
    return first_line + text.count("\n", 0, match.start())


def _yaml_error(path: Path, exc: yaml.YAMLError, *, line_offset: int, what: str) -> Diagnostic:
    line: int | None = None
    problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            line = mark.line + 1 + line_offset
        problem = exc.problem or exc.context or problem
    return Diagnostic(
        severity="error",
        code="config.yaml_syntax",
        message=f"invalid YAML in {what}: {problem}; the file was skipped",
        source=str(path),
        line=line,
        fix="fix the YAML syntax at that line (check indentation, quotes and `key: value` pairs)",
    )


@dataclass
class YamlDoc:
    """A parsed mapping with the text it came from, to locate keys for diagnostics."""

    path: Path
    data: dict[str, object]
    text: str
    first_line: int = 1

    def line_of(self, key: str) -> int | None:
        return key_line(self.text, key, first_line=self.first_line)


@dataclass
class FrontmatterDoc(YamlDoc):
    body: str = ""
    body_line: int = 1
    extra: dict[str, object] = field(default_factory=dict[str, object])


def not_utf8_diagnostic(path: Path) -> Diagnostic:
    """The one wording of "this file is not UTF-8" (for every reader of workspace and config text)."""
    return Diagnostic(
        severity="error",
        code="config.not_utf8",
        message=f"{path.name} is not UTF-8 text; the file was skipped",
        source=str(path),
        fix="save the file as UTF-8",
    )


def unreadable_diagnostic(path: Path, exc: OSError) -> Diagnostic:
    """The one wording of "this file cannot be read"."""
    return Diagnostic(
        severity="error",
        code="config.unreadable",
        message=f"cannot read {path.name}: {exc.strerror or exc}; the file was skipped",
        source=str(path),
        fix="check the file's permissions",
    )


def read_text(path: Path, diagnostics: list[Diagnostic]) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        diagnostics.append(not_utf8_diagnostic(path))
    except OSError as exc:
        diagnostics.append(unreadable_diagnostic(path, exc))
    return None


def load_yaml_mapping(path: Path, diagnostics: list[Diagnostic], *, what: str = "config file") -> YamlDoc | None:
    """Parse a YAML file whose top level must be a mapping (an empty file is an empty mapping)."""
    text = read_text(path, diagnostics)
    if text is None:
        return None
    return parse_yaml_mapping(text, path, diagnostics, what=what)


def parse_yaml_mapping(
    text: str, path: Path, diagnostics: list[Diagnostic], *, what: str, line_offset: int = 0
) -> YamlDoc | None:
    bounds = yaml_bounds_problem(text)
    if bounds is not None:
        code, problem, line = bounds
        diagnostics.append(
            Diagnostic(
                severity="error",
                code=code,
                message=f"the {what} cannot be loaded: {problem}; the file was skipped",
                source=str(path),
                line=line + line_offset if line is not None else None,
                fix="shorten the file and write values out instead of repeating anchors (&name / *name)",
            )
        )
        return None
    try:
        data = yaml.load(text, Loader=yaml_loader())
    except yaml.YAMLError as exc:
        diagnostics.append(_yaml_error(path, exc, line_offset=line_offset, what=what))
        return None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        diagnostics.append(
            Diagnostic(
                severity="error",
                code="config.not_a_mapping",
                message=f"the {what} must be a YAML mapping of `key: value` pairs, got {type(data).__name__}; "
                "the file was skipped",
                source=str(path),
                line=1 + line_offset,
                fix="write `key: value` lines at the top level",
            )
        )
        return None
    mapping = {str(k): v for k, v in cast(dict[object, object], data).items()}
    return YamlDoc(path=path, data=mapping, text=text, first_line=1 + line_offset)


def split_frontmatter(text: str) -> tuple[str, str, int] | None:
    """`(yaml_text, body, body_first_line)` of a `---`-fenced document, or None when there is no frontmatter."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or not _FENCE.match(lines[0]):
        return None
    for index in range(1, len(lines)):
        if _FENCE.match(lines[index]):
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :]), index + 2
    return None


def load_frontmatter(
    path: Path,
    diagnostics: list[Diagnostic],
    *,
    what: str,
    known_keys: Collection[str] | None = None,
    optional: bool = False,
) -> FrontmatterDoc | None:
    """Read a Markdown file with YAML frontmatter. Missing frontmatter, broken YAML or a non-mapping frontmatter is
    one error diagnostic naming the file (and line) and the file is skipped. With `known_keys` (the keys of this
    file kind), frontmatter that is not strict YAML is read as Claude Code reads it (`config.lenient_frontmatter`)
    and an info diagnostic says so. With `optional`, a file without frontmatter is all body (Claude Code's command
    files may be a bare prompt)."""
    text = read_text(path, diagnostics)
    if text is None:
        return None
    parts = split_frontmatter(text)
    if parts is None and optional and not text.lstrip("\ufeff").startswith("---"):
        return FrontmatterDoc(path=path, data={}, text="", first_line=1, body=text.lstrip("\ufeff").strip("\n"))
    if parts is None:
        diagnostics.append(
            Diagnostic(
                severity="error",
                code="config.no_frontmatter",
                message=f"{what} has no YAML frontmatter (or its closing `---` is missing); the file was skipped",
                source=str(path),
                line=1,
                fix="start the file with `---`, then `description: ...`, then a closing `---` line",
            )
        )
        return None
    yaml_text, body, body_line = parts
    strict: list[Diagnostic] = []
    doc = parse_yaml_mapping(yaml_text, path, strict, what=f"{what} frontmatter", line_offset=1)
    if doc is None and known_keys is not None and [d.code for d in strict] == ["config.yaml_syntax"]:
        from bearagent.config.lenient_frontmatter import LenientError, parse_lenient

        try:
            data = parse_lenient(yaml_text, known_keys)
        except LenientError:
            pass
        else:
            first = strict[0]
            problem = first.message.removeprefix(f"invalid YAML in {what} frontmatter: ").removesuffix(
                "; the file was skipped"
            )
            diagnostics.append(
                Diagnostic(
                    severity="info",
                    code="frontmatter.not_strict_yaml",
                    message=f"the {what} frontmatter is not strict YAML ({problem}); it was read as Claude Code "
                    "reads it: one `key: value` per line, a value running on until the next key",
                    source=str(path),
                    line=first.line,
                    fix='quote the value (description: "...") or make it a block (description: |) for strict YAML',
                )
            )
            doc = YamlDoc(path=path, data=data, text=yaml_text, first_line=2)
            strict = []
    diagnostics.extend(strict)
    if doc is None:
        return None
    return FrontmatterDoc(
        path=path, data=doc.data, text=yaml_text, first_line=2, body=body.strip("\n"), body_line=body_line
    )


def unknown_key_diagnostics(
    doc: YamlDoc, known: Iterable[str], *, what: str, prefix: str = "", data: Mapping[str, object] | None = None
) -> list[Diagnostic]:
    """One warning per unknown key, naming the key and the closest known key."""
    known_list = sorted(known)
    out: list[Diagnostic] = []
    for key in data if data is not None else doc.data:
        if key in known_list:
            continue
        guess = did_you_mean(key, known_list)
        out.append(
            Diagnostic(
                severity="warning",
                code="config.unknown_key",
                message=f"unknown key {prefix}{key!r} in {what}"
                + (f" (did you mean {guess!r}?)" if guess else "")
                + "; it is ignored",
                source=str(doc.path),
                line=doc.line_of(key),
                field=f"{prefix}{key}",
                fix=f"rename it to {guess!r}" if guess else f"remove it; known keys: {', '.join(known_list)}",
            )
        )
    return out
