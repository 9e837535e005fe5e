"""BearAgent's own Python stays readable in the sandbox wherever it lives, and never exposes /tmp as a whole
(`sandbox/request.build_request`; the real bubblewrap run is in tests/security/test_sandbox_host.py)."""

from __future__ import annotations

import sys

import pytest

from bearagent.sandbox.request import build_request
from bearagent.sandbox.settings import SandboxSettings


@pytest.mark.parametrize(
    ("prefix", "shown"),
    [("/tmp/ci dir/.venv", True), ("/var/tmp/x/env", True), ("/tmp", False), ("/var/tmp", False)],
)
def test_a_prefix_under_a_private_tmp_is_bound_but_never_tmp_itself(
    monkeypatch: pytest.MonkeyPatch, prefix: str, shown: bool
) -> None:
    monkeypatch.setattr(sys, "prefix", prefix)
    request = build_request(SandboxSettings(), {"HOME": "/nonexistent-home"})
    assert (prefix in request.home_readable) is shown
    assert "/tmp" not in request.home_readable and "/var/tmp" not in request.home_readable
