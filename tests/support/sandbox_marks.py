"""The skip marks of the tests that need the real sandbox (bubblewrap on Linux), in one place: without bubblewrap
the reason says how to get it; inside a BearAgent sandbox (a test run by an agent) bubblewrap cannot nest."""

from __future__ import annotations

import os
import sys

import pytest

from bearagent.sandbox.probe import find_bwrap

NO_NESTING = pytest.mark.skipif(
    "BEARAGENT_SANDBOX" in os.environ and os.environ["BEARAGENT_SANDBOX"] != "off",
    reason="running inside a BearAgent sandbox: bubblewrap cannot nest there (see docs/sandbox.md)",
)


def needs_sandbox(
    reason: str = "the sandbox tests need Linux and bubblewrap (scripts/ci-extras.sh installs it)",
) -> list[pytest.MarkDecorator]:
    """A module's `pytestmark`: skipped without Linux and bubblewrap (`reason`), or inside a BearAgent sandbox."""
    return [
        pytest.mark.skipif(not sys.platform.startswith("linux") or find_bwrap(None) is None, reason=reason),
        NO_NESTING,
    ]
