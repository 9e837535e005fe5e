"""A fresh checkout's other first-run caches, filled in one process beside the assert rewrites (`start`).

With no caches, the process that collects the suite (`--collect-only`, `-n 0`, and each xdist worker) did this work
one module at a time after the rewrites: it compiled BearAgent's ~330 modules into the bytecode prefix, and
hypothesis's pytest plugin parsed each of them for its "local constants" (a file per module under `.hypothesis/`,
keyed by the source's hash). Each xdist worker did both at once in a first full run. py-spy of a fresh clone's
`--collect-only` (2026-12-08, docs/testing.md): ~1 s compiling and ~1 s reading constants in the collecting
process, on one core while the other idled, and the environment's bytecode linked (`bytecode_prefix.link_compiled`,
~0.45 s) before any of it.

`start` runs these in one process beside the rewrite processes (`assert_rewrite.prepare` starts it with them and
waits for all of them before the collection). Each step only starts what the process would do anyway, the same way: Python's own `py_compile` writes the file an import
would (`importlib.util.cache_from_source`, so the prefix when there is one), and hypothesis's own
`constants_from_module` writes its cache file. A module this misses, or a file Python or hypothesis do not accept,
is compiled or parsed on import as before.

    python -m tests.support.warm_caches ROOT   (what `start` runs)
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import subprocess
import sys
import types
from pathlib import Path

SOURCES = ("src",)
"""Below the checkout's root: the local modules hypothesis reads constants from (it skips `tests/`), compiled too."""
SUPPORT = ("tests/support",)
"""Test helper modules pytest does not rewrite (no test file pattern, no conftest): compiled only."""


def start(root: Path, invocation_dir: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start the process that fills the caches; hypothesis keeps its own below the directory pytest was started in,
    so that is where the process runs."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.warm_caches", str(root)],
        cwd=invocation_dir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # whatever fails here is done again, and reported, where it would have been
    )


def compile_modules(files: list[Path]) -> int:
    """Compile each module without bytecode where an import would read it; returns how many were compiled."""
    done = 0
    for file in files:
        target = importlib.util.cache_from_source(str(file))
        if os.path.exists(target):
            continue  # Python checks it against the source on import, and compiles again if it is stale
        try:
            py_compile.compile(str(file), cfile=target, doraise=True)
        except (py_compile.PyCompileError, OSError):
            continue
        done += 1
    return done


def read_constants(files: list[Path]) -> int:
    """hypothesis's cached constants for each module, as its plugin reads them at collection; returns how many
    modules were read."""
    try:
        from hypothesis.internal.constants_ast import constants_from_module
    except ImportError:  # another hypothesis: its plugin does the work itself
        return 0
    for index, file in enumerate(files):
        module = types.ModuleType(f"_warm_caches_{index}")
        module.__file__ = str(file)
        constants_from_module(module)  # reads, or computes and writes, `.hypothesis/constants/<source hash>`
    return len(files)


def main(root: Path) -> int:
    from tests.support.bytecode_prefix import link_environment

    link_environment()  # first: the collection imports the environment right after this process ends
    local = sorted(p for d in SOURCES for p in (root / d).rglob("*.py"))
    support = sorted(p for d in SUPPORT for p in (root / d).rglob("*.py"))
    compile_modules(local + support)
    read_constants(local)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
