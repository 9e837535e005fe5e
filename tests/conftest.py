"""Session-wide fixtures: the throwaway PostgreSQL cluster of the postgres store tests (started on first use by
`tests/support/postgres_cluster.py`, one per xdist worker, stopped here when the worker's session ends) and a fresh
database per test. Also the directory-wide `slow` marks (see `SLOW_DIRECTORIES`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

for _name in ("COLUMNS", "LINES"):  # an xdist worker inherits 80x24 (its parent's terminal size) in its environment:
    os.environ.pop(_name, None)  # a child on a pty of another size would believe them over the pty (rich does)

TESTS = Path(__file__).resolve().parent
SLOW_DIRECTORIES = ("e2e", "scale")
"""Every test in these is `slow`: each drives real `bearagent` processes end to end (runs killed and resumed,
servers, terminals) or a large workload, seconds apiece; `uv run pytest -m "not slow"`, the inner loop, leaves them
to the full run. Slow tests elsewhere carry `@pytest.mark.slow` themselves."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.relative_to(TESTS).parts if item.path.is_relative_to(TESTS) else ()
        if (parts and parts[0] in SLOW_DIRECTORIES) or item.get_closest_marker("real_llm") is not None:
            item.add_marker(pytest.mark.slow)  # real_llm: a llama.cpp server per test, up to ~20 s under load


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
