"""Diagnostics as data: every skipped file, unknown key, shadowed name or duplicate is one of these."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeAlias

from pydantic import Field, ValidationInfo, field_validator

from bearagent.domain._base import DomainModel

Severity: TypeAlias = Literal["error", "warning", "info"]

MAX_MESSAGE_CHARS = 4_000
MAX_FIX_CHARS = 2_000
MAX_LISTED_NAMES = 20
"""How many names a diagnostic or notice lists before it says `and N more`."""


def name_list(names: Iterable[str], limit: int = MAX_LISTED_NAMES) -> str:
    """`a, b, c and 7 more`: at most `limit` names, then a count of what was left out.

    Every message that lists names taken from the workspace (agents, skills, commands, tools) goes through this,
    so the number of files a workspace holds never decides the length of a message."""
    listed = list(names)
    shown = ", ".join(listed[:limit])
    return f"{shown} and {len(listed) - limit} more" if len(listed) > limit else shown


def cap_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, ending with how many were left out."""
    if len(text) <= limit:
        return text
    tail = f"… ({len(text) - limit:,} more characters left out)"
    return text[: max(limit - len(tail) - 8, 0)] + tail


class Diagnostic(DomainModel):
    """What went wrong where, and how to fix it. `source` is a file path (or `plugin:<name>`, `env:<VAR>`)."""

    severity: Severity
    code: str = Field(min_length=1, max_length=64)
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    source: str = Field(default="", max_length=4_096)
    line: int | None = Field(default=None, ge=1)
    field: str | None = Field(default=None, max_length=256)
    fix: str | None = Field(default=None, max_length=MAX_FIX_CHARS)
    subject: str | None = Field(default=None, max_length=256)

    @field_validator("message", "fix", "source", "field", "subject", mode="before")
    @classmethod
    def _bounded(cls, value: object, info: ValidationInfo) -> object:
        """Bounded by construction: text built from workspace content is cut (saying how much), never refused.

        A diagnostic exists to report a problem; failing to build one turned a long listing into a traceback."""
        if not isinstance(value, str):
            return value
        limits = {"message": MAX_MESSAGE_CHARS, "fix": MAX_FIX_CHARS, "source": 4_096}
        return cap_text(value, limits.get(info.field_name or "", 256))

    def render(self) -> str:
        """`path:line: severity: message (fix: ...)`, the one-line form the CLI prints."""
        where = self.source or "<config>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        text = f"{where}: {self.severity}: {self.message}"
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text
