"""The suite's own set-up (`tests/conftest.py`): where `PYTHONDONTWRITEBYTECODE=1` forbids bytecode caches (CI), the
suite and its subprocesses write them under the checkout's `.cache/pycache` instead, so the hundreds of `bearagent`
processes the tests start do not compile everything again each time (issue 29)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]

PROBE = """
import json, os, subprocess, sys
import tests.conftest
child = subprocess.run(
    [sys.executable, "-c", "import json, sys; print(json.dumps([sys.flags.dont_write_bytecode, sys.pycache_prefix]))"],
    capture_output=True, text=True, check=True,
)
print(json.dumps({
    "env": os.environ.get("PYTHONDONTWRITEBYTECODE"),
    "prefix": os.environ.get("PYTHONPYCACHEPREFIX"),
    "self": [sys.dont_write_bytecode, sys.pycache_prefix],
    "child": json.loads(child.stdout),
}))
"""


def _probe(**env: str) -> dict[str, object]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=CHECKOUT, env={**base, **env}, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_dont_write_bytecode_becomes_a_cache_under_the_checkout_for_the_suite_and_its_children() -> None:
    cache = str(CHECKOUT / ".cache" / "pycache")
    seen = _probe(PYTHONDONTWRITEBYTECODE="1")
    assert seen == {"env": None, "prefix": cache, "self": [False, cache], "child": [0, cache]}


def test_without_the_variable_nothing_changes() -> None:
    seen = _probe()
    assert seen == {"env": None, "prefix": None, "self": [False, None], "child": [0, None]}
