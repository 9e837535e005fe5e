"""The first-run caches of tests/support/warm_caches.py are the ones Python and hypothesis then read: a module it
compiled is imported without compiling, and hypothesis takes its constants from the file it wrote instead of parsing
the module. A module it did not see is compiled and parsed as before (the control: it shows the check can fail)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
sources = []
sys.addaudithook(lambda event, args: sources.append(args[0]) if event == "compile" else None)
from hypothesis.internal.constants_ast import constants_from_module
import pkg.warmed, pkg.late
report = {}
for module in (pkg.warmed, pkg.late):
    with open(module.__file__, "rb") as f:
        source = f.read()
    constants = constants_from_module(module)
    report[module.__name__] = {
        "compiled or parsed": any(seen == source for seen in sources),
        "constant": 4815162342 in constants,
    }
print(json.dumps(report))
"""


@pytest.mark.slow  # ~2.2 s: two processes that each import hypothesis
def test_a_warmed_module_is_imported_and_read_by_hypothesis_without_compiling_or_parsing(tmp_path: Path) -> None:
    root = tmp_path / "project"
    package = root / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "warmed.py").write_text("LIMIT = 4815162342\n", encoding="utf-8")
    prefix = tmp_path / "pycache"
    prefix.mkdir()
    (prefix / f".linked-{sys.implementation.cache_tag}").touch()  # no linking of this environment: not tested here
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "HYPOTHESIS_STORAGE_DIRECTORY")}
    env |= {"PYTHONPYCACHEPREFIX": str(prefix), "PYTHONPATH": str(TESTS.parent)}

    subprocess.run(
        [sys.executable, "-m", "tests.support.warm_caches", str(root)], cwd=root, env=env, check=True, timeout=120
    )
    (package / "late.py").write_text("LIMIT = 4815162342\nLATE = True\n", encoding="utf-8")  # after the warming
    probe = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=root,
        env=env | {"PYTHONPATH": str(root / "src")},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert probe.returncode == 0, probe.stderr
    report = json.loads(probe.stdout)
    assert report["pkg.warmed"] == {"compiled or parsed": False, "constant": True}
    assert report["pkg.late"] == {"compiled or parsed": True, "constant": True}
    assert (root / ".hypothesis" / "constants").is_dir()  # where hypothesis's plugin looks, run from the same place
