"""Harbor's own ATIF model, to validate `bearagent runs export --format atif` against the schema the harness reads.

`harbor` (PyPI) pins Python >= 3.12 and brings a large tree of dependencies; its trajectory models need only
pydantic. So the pinned wheel is installed without dependencies into `.cache/pypi-harbor/` (`scripts/ci-extras.sh`
does it in CI; `validate_atif` does it on demand), and the validation runs in a subprocess with that folder on
`PYTHONPATH`, using this project's pydantic. A failing install is an error, not a skip; the caller skips only when
uv is absent."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HARBOR_VERSION = "0.26.0"  # keep in sync with scripts/ci-extras.sh
ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / ".cache" / "pypi-harbor"

_CHECK = """
import json, sys
from harbor.models.trajectories import Trajectory
from harbor.utils.trajectory_validator import TrajectoryValidator
path = sys.argv[1]
Trajectory.model_validate(json.loads(open(path, encoding="utf-8").read()))
validator = TrajectoryValidator()
ok = validator.validate(path)
if not ok:
    print("\\n".join(validator.errors))
    sys.exit(1)
print("valid")
"""


def uv_missing_reason() -> str | None:
    return None if shutil.which("uv") else "uv not found on PATH; install uv to fetch harbor's ATIF schema"


def ensure_harbor() -> Path:
    """The folder holding the pinned `harbor` package, installing it first if needed."""
    marker = TARGET / f"harbor-{HARBOR_VERSION}.dist-info"
    if marker.is_dir():
        return TARGET
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    with (TARGET.parent / ".pypi-harbor.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.is_dir():
            uv = shutil.which("uv")
            assert uv is not None
            done = subprocess.run(
                [
                    uv,
                    "pip",
                    "install",
                    "--quiet",
                    "--no-deps",
                    "--target",
                    str(TARGET),
                    "--python-version",
                    "3.12",
                    f"harbor=={HARBOR_VERSION}",
                ],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if done.returncode != 0:
                raise AssertionError(
                    f"uv pip install harbor=={HARBOR_VERSION} failed (exit {done.returncode}):\n{done.stderr}\n"
                    "fix access to PyPI, or run scripts/ci-extras.sh once while online"
                )
    return TARGET


def validate_atif(path: Path) -> tuple[bool, str]:
    """Whether the ATIF file at `path` validates with harbor's `Trajectory` model and `TrajectoryValidator`."""
    target = ensure_harbor()
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [sys.executable, "-c", _CHECK, str(path)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def load(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data  # pyright: ignore[reportUnknownVariableType]
