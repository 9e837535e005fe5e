"""Session-wide fixtures: the throwaway PostgreSQL cluster of the postgres store tests (started on first use by
`tests/support/postgres_cluster.py`, stopped here when the test session ends) and a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


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
