"""Diagnostics as data: every skipped file, unknown key, shadowed name or duplicate is one of these."""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import Field

from bearagent.domain._base import DomainModel

Severity: TypeAlias = Literal["error", "warning", "info"]


class Diagnostic(DomainModel):
    """What went wrong where, and how to fix it. `source` is a file path (or `plugin:<name>`, `env:<VAR>`)."""

    severity: Severity
    code: str = Field(min_length=1, max_length=64)
    message: str = Field(min_length=1, max_length=4_000)
    source: str = Field(default="", max_length=4_096)
    line: int | None = Field(default=None, ge=1)
    field: str | None = Field(default=None, max_length=256)
    fix: str | None = Field(default=None, max_length=2_000)
    subject: str | None = Field(default=None, max_length=256)

    def render(self) -> str:
        """`path:line: severity: message (fix: ...)`, the one-line form the CLI prints."""
        where = self.source or "<config>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        text = f"{where}: {self.severity}: {self.message}"
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text
