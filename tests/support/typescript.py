"""The TypeScript compiler for the stream protocol checks: a pinned `typescript` from npm in `.cache/npm-typescript/`.

`scripts/ci-extras.sh` installs it in CI; `ensure_tsc()` installs the same version on demand, and returns None only
when node or npm is not installed (the caller skips with that reason). A failing install is an error, not a skip.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from pathlib import Path
from typing import cast

TYPESCRIPT_VERSION = "5.9.3"  # keep in sync with scripts/ci-extras.sh
ROOT = Path(__file__).resolve().parents[2]
PREFIX = ROOT / ".cache" / "npm-typescript"


def node_missing_reason() -> str | None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not found on PATH; install Node.js to run the TypeScript stream checks"
    return None


def _installed_version() -> str | None:
    package = PREFIX / "node_modules" / "typescript" / "package.json"
    if not package.exists() or not (PREFIX / "node_modules" / ".bin" / "tsc").exists():
        return None
    data = cast(dict[str, object], json.loads(package.read_text(encoding="utf-8")))
    version = data.get("version")
    return version if isinstance(version, str) else None


def ensure_tsc() -> Path | None:
    """Path of the pinned `tsc`, installing it first if needed; None when node/npm are absent."""
    if node_missing_reason() is not None:
        return None
    PREFIX.mkdir(parents=True, exist_ok=True)
    with (PREFIX / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several test processes may arrive here at once
        if _installed_version() != TYPESCRIPT_VERSION:
            npm = shutil.which("npm")
            assert npm is not None
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(PREFIX),
                    "--no-audit",
                    "--no-fund",
                    "--no-save",
                    f"typescript@{TYPESCRIPT_VERSION}",
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode != 0:
                raise RuntimeError(
                    f"npm install typescript@{TYPESCRIPT_VERSION} failed (exit {done.returncode}):\n{done.stderr}\n"
                    "fix npm's access to the registry, or run scripts/ci-extras.sh once while online"
                )
    tsc = PREFIX / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), f"{tsc} missing after npm install"
    return tsc


def run_tsc(tsc: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    assert node is not None
    # Run the compiler's JS entry point with node directly: no shell shims, same behaviour everywhere.
    entry = PREFIX / "node_modules" / "typescript" / "bin" / "tsc"
    return subprocess.run([node, str(entry), *args], capture_output=True, text=True, cwd=cwd, timeout=180)


# ---- the TypeScript client (clients/typescript/): @types/node for its node:test suite --------------------------

NODE_TYPES_VERSION = "20.19.43"  # keep in sync with clients/typescript/package.json and scripts/ci-extras.sh
NODE_TYPES_PREFIX = ROOT / ".cache" / "npm-types-node"


def _node_types_version() -> str | None:
    package = NODE_TYPES_PREFIX / "node_modules" / "@types" / "node" / "package.json"
    if not package.exists():
        return None
    data = cast(dict[str, object], json.loads(package.read_text(encoding="utf-8")))
    version = data.get("version")
    return version if isinstance(version, str) else None


def ensure_node_types() -> Path | None:
    """The `@types` directory holding the pinned @types/node (pass it to tsc as `--typeRoots`), installing it into
    `.cache/npm-types-node/` first if needed (its own prefix: an `npm install --no-save` into the compiler's prefix
    would prune the compiler); None when node/npm are absent. A failing install is an error, not a skip."""
    if node_missing_reason() is not None:
        return None
    NODE_TYPES_PREFIX.mkdir(parents=True, exist_ok=True)
    with (NODE_TYPES_PREFIX / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _node_types_version() != NODE_TYPES_VERSION:
            npm = shutil.which("npm")
            assert npm is not None
            spec = f"@types/node@{NODE_TYPES_VERSION}"
            done = subprocess.run(
                [npm, "install", "--prefix", str(NODE_TYPES_PREFIX), "--no-audit", "--no-fund", "--no-save", spec],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode != 0:
                raise RuntimeError(
                    f"npm install {spec} failed (exit {done.returncode}):\n{done.stderr}\n"
                    "fix npm's access to the registry, or run scripts/ci-extras.sh once while online"
                )
    types = NODE_TYPES_PREFIX / "node_modules" / "@types"
    assert (types / "node" / "package.json").exists(), f"{types}/node missing after npm install"
    return types
