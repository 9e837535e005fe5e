"""The suite's early assert rewrites (tests/support/assert_rewrite.py) write exactly the file pytest then reads: if
pytest named or checked its cache differently, it would rewrite the module itself and replace the file, and this
fails (the early rewrite would only cost time)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _env(prefix: Path) -> dict[str, str]:
    """This environment with its bytecode under `prefix`, `tests.support` importable, and no installed pytest plugin
    (seconds of imports these tests do not need)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS")}
    return env | {
        "PYTHONPYCACHEPREFIX": str(prefix),
        "PYTHONPATH": str(TESTS.parent),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


def test_pytest_runs_the_rewrite_written_ahead_of_it_without_rewriting_again(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    module = project / "test_sample.py"
    module.write_text("def test_sum():\n    a = 1\n    assert a + 1 == 3\n", encoding="utf-8")
    prefix = tmp_path / "pycache"
    env = _env(prefix)

    subprocess.run(
        [sys.executable, "-m", "tests.support.assert_rewrite", str(module)], env=env, check=True, timeout=120
    )
    [written] = list(prefix.rglob("test_sample.*pytest*.pyc"))
    before = written.stat()

    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert "assert (1 + 1) == 3" in run.stdout, run.stdout  # the rewritten assert's explanation
    after = written.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), "pytest rewrote the module again"
    assert list(prefix.rglob("test_sample.*pytest*.pyc")) == [written]


def test_a_module_that_does_not_parse_is_left_to_pytest_and_the_others_are_cached(tmp_path: Path) -> None:
    broken, good = tmp_path / "test_broken.py", tmp_path / "test_good.py"
    broken.write_text("def test_x(:\n", encoding="utf-8")
    good.write_text("def test_y():\n    assert 1\n", encoding="utf-8")
    prefix = tmp_path / "pycache"
    env = _env(prefix)

    done = subprocess.run(
        [sys.executable, "-m", "tests.support.assert_rewrite", str(broken), str(good)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 1, done.stderr
    assert [p.name.split(".")[0] for p in prefix.rglob("test_*.pyc")] == ["test_good"]
