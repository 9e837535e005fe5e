"""One bad field of a config section (`sandbox:`, `shell_env:`, the store's settings), with its fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Problem:
    """One bad field of a section: `field` is dotted (`sandbox.network`), `fix` says what to write instead."""

    field: str
    message: str
    fix: str
    severity: Literal["error", "warning"] = "error"
