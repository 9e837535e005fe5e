"""Session-wide fixtures: the throwaway PostgreSQL cluster of the postgres store tests (started on first use by
`tests/support/postgres_cluster.py`, one per xdist worker, stopped here when the worker's session ends) and a fresh
database per test. Also bytecode caches where `PYTHONDONTWRITEBYTECODE` forbids them (`_bytecode_to_the_checkout_cache`)
and a fresh checkout's assert rewrites and other caches filled before the workers start (`pytest_configure`),
the directory-wide `slow` marks (see `SLOW_DIRECTORIES`), and `sandbox_outside`: a host
directory that the Bash sandbox shows read-only, wherever the checkout lives."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

for _name in ("COLUMNS", "LINES"):  # an xdist worker inherits 80x24 (its parent's terminal size) in its environment:
    os.environ.pop(_name, None)  # a child on a pty of another size would believe them over the pty (rich does)

TESTS = Path(__file__).resolve().parent
PYCACHE = TESTS.parent / ".cache" / "pycache"
"""Where the suite's bytecode goes when the environment forbids writing it next to the sources (below)."""


def _bytecode_to_the_checkout_cache() -> None:
    """CI (and anyone who sets `PYTHONDONTWRITEBYTECODE=1`) forbids bytecode caches so that a fresh clone stays clean.
    For the suite that is costly: every `bearagent` subprocess (hundreds of `bearagent run`, servers, hooks) compiles
    the product and its dependencies again, and every xdist worker compiles the test modules and rewrites their
    asserts again: collection took 21 s of CPU instead of 10.5 s, a `bearagent run` 1.8 s instead of 1.15 s (measured
    2026-12-04). So the suite drops the variable, for itself and its children, and sends all bytecode to
    `PYTHONPYCACHEPREFIX=<checkout>/.cache/pycache` (ignored by git): the sources, the venv and the tests' workspaces
    stay free of `__pycache__` directories, as the variable wanted, and the first run fills the cache the later
    processes (and runs) read. Where the checkout's `.cache/` cannot be written, nothing changes."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    try:
        PYCACHE.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    sys.dont_write_bytecode = False  # this process too: the test modules not imported yet, and their assert rewrites
    sys.pycache_prefix = str(PYCACHE)


def _seed_from_the_environment() -> None:
    """The prefix (`_bytecode_to_the_checkout_cache`) applies to every module, the environment's too, whose bytecode
    `uv sync` compiled beside its sources (`compile-bytecode` in pyproject.toml): a fresh clone's first run compiled
    ~1,000 dependency modules again, in every xdist worker at once. Once per checkout, that bytecode is linked into
    the prefix (~10,000 files, ~0.5-0.8 s): a cold collection took ~1 s less (2026-12-07, docs/testing.md). The
    standard library's is left out: linking it too cost more than it saved. A fresh checkout's first run links it in
    the process `tests/support/warm_caches.py` runs beside the assert rewrites; this is for the runs that start none
    (a marker in the prefix says the link is done), before the collection imports the environment."""
    if sys.pycache_prefix != str(PYCACHE):
        return
    from tests.support.bytecode_prefix import link_environment

    link_environment()


_bytecode_to_the_checkout_cache()
SLOW_DIRECTORIES = ("e2e", "scale")
"""Every test in these is `slow`: each drives real `bearagent` processes end to end (runs killed and resumed,
servers, terminals) or a large workload, seconds apiece; `uv run pytest -m "not slow"`, the inner loop, leaves them
to the full run. Tests elsewhere that take 2 s or more on the 2-core machine carry `@pytest.mark.slow` themselves
(the rule and its measurement: docs/testing.md, "Which tests are slow")."""


def pytest_configure(config: pytest.Config) -> None:
    """A fresh checkout's assert rewrites and other first-run caches, in parallel before the workers start
    (tests/support/assert_rewrite.py, tests/support/warm_caches.py)."""
    from tests.support.assert_rewrite import prepare

    prepare(config)
    _seed_from_the_environment()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (the `addopts` in pyproject.toml): one worker more than the cores this process may use. Much of the
    suite's time is spent waiting on the processes its tests start (CLI runs, servers, terminals, PostgreSQL), so a
    third worker on two cores keeps both busy: the inner loop took 6 min 25 s against 8 min 18 s with two workers,
    for the same CPU (docs/testing.md). `PYTEST_XDIST_AUTO_NUM_WORKERS`, or `-n N`, still decides when given."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.relative_to(TESTS).parts if item.path.is_relative_to(TESTS) else ()
        if (parts and parts[0] in SLOW_DIRECTORIES) or item.get_closest_marker("real_llm") is not None:
            item.add_marker(pytest.mark.slow)  # real_llm: a llama.cpp server per test, up to ~20 s under load
    # Slow tests first (a stable sort: each file keeps its order). `--dist worksteal` gives the first half to one
    # worker and the second to the other, and an idle worker takes half of the other's queue: the long tests (the
    # kill -9 test alone takes minutes) start at once, and the run ends on short tests spread over all workers
    # instead of one worker finishing a long test while the others sit idle.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session", autouse=True)
def _postgres_cluster_teardown() -> Iterator[None]:  # pyright: ignore[reportUnusedFunction]
    yield
    from tests.support import postgres_cluster

    postgres_cluster.stop_cluster()


@pytest.fixture
def postgres_dsn() -> str:
    """The DSN of a new, empty database in the session's cluster; skips where PostgreSQL is not installed (fails in
    CI)."""
    from tests.support import postgres_cluster

    postgres_cluster.require()
    return postgres_cluster.new_database()


SANDBOX_OUTSIDE_BASES = ("/var/cache", "/var/lib", "/srv", "/opt")
"""Where `sandbox_outside` looks when neither the checkout's `.cache/` nor `$XDG_CACHE_HOME` will do (writable as
root, as in CI)."""


def _shown_read_only_by_the_sandbox(path: Path) -> bool:
    """Whether the default sandbox shows `path` as the host's own file, read-only: not under its private /tmp or
    /var/tmp, not in a home it hides (the environment's HOME and the password database's), not under a hidden path
    (`bearagent.sandbox.request.build_request` decides, as for a real call)."""
    from bearagent.sandbox.request import PRIVATE_TMP, build_request
    from bearagent.sandbox.settings import SandboxSettings

    real = Path(os.path.realpath(path))
    request = build_request(SandboxSettings(), os.environ)
    covered = [*PRIVATE_TMP, *request.hidden_homes, *request.hidden]
    return not any(
        real == Path(c) or Path(os.path.realpath(c)) in real.parents or Path(c) in real.parents for c in covered
    )


def _candidate_bases() -> list[Path]:
    bases = [TESTS.parent / ".cache"]
    if os.environ.get("XDG_CACHE_HOME"):
        bases.append(Path(os.environ["XDG_CACHE_HOME"]))
    return bases + [Path(b) for b in SANDBOX_OUTSIDE_BASES]


def _new_directory(bases: list[Path]) -> Path | None:
    for base in bases:
        try:
            base.mkdir(parents=True, exist_ok=True)
            return Path(tempfile.mkdtemp(prefix="bearagent-sandbox-tests-", dir=base))
        except OSError:
            continue
    return None


@pytest.fixture
def sandbox_outside() -> Iterator[Path]:
    """A new host directory outside the workspace that a sandboxed command sees read-only (removed afterwards): the
    sandbox tests write and read there to prove a write outside the workspace is refused (EROFS) rather than lost in
    a private directory. Not under /tmp or /var/tmp (the sandbox has its own) nor in a home (the sandbox replaces
    each home with an empty scratch directory, where a write "succeeds" without reaching the host): a checkout under
    /tmp or in the home must not decide the outcome (issue 29). Tried in order: the checkout's `.cache/`,
    `$XDG_CACHE_HOME`, then `SANDBOX_OUTSIDE_BASES` (root). Skips, with its reason, when none is writable."""
    path = _new_directory([b for b in _candidate_bases() if _shown_read_only_by_the_sandbox(b)])
    if path is None:
        pytest.skip(
            "needs a writable directory that the sandbox shows read-only (outside /tmp, /var/tmp and the home): the "
            f"checkout ({TESTS.parent}) is in one of them and {', '.join(SANDBOX_OUTSIDE_BASES)} are not writable; "
            "clone the repository elsewhere (e.g. /srv or /opt) or run as root"
        )
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def sandbox_home_base() -> Iterator[Path]:
    """A new host directory outside /tmp and /var/tmp for a sandbox test's fake home (removed afterwards), so that
    hiding the home, not the sandbox's private /tmp, is what keeps the home unseen. As `sandbox_outside` where one is
    available; else in the user's cache directory (inside the real home, which the sandbox hides as well): never a
    reason to skip."""
    from bearagent.sandbox.request import PRIVATE_TMP

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    shown = [b for b in _candidate_bases() if _shown_read_only_by_the_sandbox(b)]
    private = [Path(t) for t in PRIVATE_TMP]
    outside_tmp = [b for b in [*shown, cache] if not any(Path(os.path.realpath(b)).is_relative_to(t) for t in private)]
    path = _new_directory(outside_tmp)
    if path is None:
        pytest.skip(f"needs a writable directory outside /tmp and /var/tmp for a fake home (tried {outside_tmp})")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
