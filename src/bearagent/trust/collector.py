"""Collecting the trust surface: one `TrustItem` a thing, keyed stably, with the file and line it comes from, and
the content of every workspace file it runs fingerprinted. The rules of what needs trust are `trust/runs.py`
(hooks, MCP servers) and `trust/widening.py` (model entries, permissions, agents, settings).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from bearagent.domain._base import JsonValue

ItemKind: TypeAlias = Literal[
    "model", "hook", "mcp", "a2a", "permission", "web_fetch", "web_search", "sandbox", "file", "env"
]


@dataclass(frozen=True, slots=True)
class TrustItem:
    """One thing that needs trust. `key` is stable across edits of the same thing (so a change can be named);
    `canonical` is everything about it that decides behaviour (its digest is what trust records)."""

    kind: ItemKind
    key: str
    summary: str
    file: str = ""
    line: int | None = None
    canonical: JsonValue = None

    def digest(self) -> str:
        text = json.dumps(
            {"kind": self.kind, "key": self.key, "data": self.canonical},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def where(self) -> str:
        if not self.file:
            return ""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def render(self) -> str:
        where = self.where()
        return f"{where}: {self.summary}" if where else self.summary


@dataclass
class Collector:
    """The items found so far (by key: a later one of the same key replaces it) and where the workspace is."""

    root: Path | None
    items: dict[str, TrustItem] = field(default_factory=dict[str, TrustItem])
    _real_root: Path | None = field(default=None, init=False, repr=False)

    def _resolved_root(self) -> Path:
        """The workspace root with its links resolved, once per collector (each resolve reads every component)."""
        assert self.root is not None
        if self._real_root is None:
            self._real_root = self.root.resolve()
        return self._real_root

    def sorted_items(self) -> tuple[TrustItem, ...]:
        return tuple(sorted(self.items.values(), key=lambda i: (i.file, i.line or 0, i.key)))

    def add(
        self, kind: ItemKind, key: str, summary: str, canonical: JsonValue, *, file: str = "", line: int | None = None
    ) -> None:
        self.items[key] = TrustItem(kind, key, summary, file, line, canonical)

    def rel(self, path: str | Path) -> str:
        """`path` relative to the workspace when inside it, else as given."""
        if not path:
            return ""
        p = Path(path)
        if self.root is not None:
            try:
                return p.resolve().relative_to(self._resolved_root()).as_posix()
            except (ValueError, OSError):
                pass
        return str(p)

    def inside(self, path: Path) -> bool:
        if self.root is None:
            return False
        try:
            path.resolve().relative_to(self._resolved_root())
        except (ValueError, OSError):
            return False
        return True

    def files_run_by(
        self, words: Iterable[str], owner: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
    ) -> list[str]:
        """Fingerprint every workspace file `words` (a command line) executes or reaches (`trust.reach`): the
        script, its workspace interpreter, sourced files, Python imports, Makefiles, ... Each existing one is a
        `file` item; a module that would shadow an import if created is listed as `<path> (missing)` in the
        returned list (so creating it changes the owner's digest); the code its tool chain finds on its own
        (`reach.discovered_code`: config-as-code files, `conftest.py`, a venv's `.pth`) is one item per kind."""
        if self.root is None:
            return []
        from bearagent.trust.reach import MISSING, NONE_DISCOVERED, reached_files

        base = cwd or self.root
        out: list[str] = []
        for rel, digest in reached_files(list(words), self.root, cwd=base, env=env, discovered=True).items():
            if digest == NONE_DISCOVERED:
                continue  # no such file yet: creating one adds the item (and so asks again)
            if digest == MISSING:
                out.append(f"{rel} (missing)")
                continue
            key = f"file {rel}"
            if key not in self.items:
                self.add("file", key, f"file run by {owner} (its content is fingerprinted)", digest, file=rel)
            out.append(rel)
        return out


# ---- reading files for lines and fingerprints ---------------------------------------------------------------


def split_command(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace") if path else ""
    except OSError:
        return ""


def line_in(text: str, needle: str) -> int | None:
    if not needle:
        return None
    index = text.find(needle)
    return text.count("\n", 0, index) + 1 if index >= 0 else None


def key_line(text: str, key: str) -> int | None:
    match = re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}[\"']?[ \t]*:", text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def line_containing(path: str, needle: str) -> int | None:
    return line_in(read_text(path), needle) if path and needle else None


def nested_line(path: str, section: str, name: str) -> int | None:
    """The line of `name:` inside the top-level `section:` of a YAML file (best effort)."""
    text = read_text(path)
    start = re.search(rf"^{re.escape(section)}[ \t]*:", text, re.MULTILINE)
    offset = start.end() if start else 0
    match = re.compile(rf"^[ \t]+[\"']?{re.escape(name)}[\"']?[ \t]*:", re.MULTILINE).search(text, offset)
    if match is None:
        return None
    return text.count("\n", 0, match.start()) + 1
