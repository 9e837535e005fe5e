"""Workspace records (seed 002's Workspace) in both stores: recorded by key, the first record's id and creation
time kept, `updated_at` moved only when the content changes, visible from a second handle (another process)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.storage_factories import FACTORIES, StorageFactory

from bearagent.domain._base import frozen_json
from bearagent.domain.ids import Uuid4IdGenerator, WorkspaceId
from bearagent.domain.state import WorkspaceRecord
from bearagent.ports import RunStorage

pytestmark = pytest.mark.timeout(120)  # PostgreSQL's throwaway cluster starts on first use


@pytest.fixture(params=sorted(FACTORIES))
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[RunStorage, RunStorage]]:
    factory: StorageFactory = FACTORIES[request.param]
    location = factory.location(tmp_path)
    one = factory.open(location)
    two = factory.open(location)
    yield one, two
    factory.close(one)
    factory.close(two)


def record(at: datetime, **fields: object) -> WorkspaceRecord:
    base: dict[str, object] = {
        "key": "docs",
        "workspace_id": Uuid4IdGenerator().new(WorkspaceId),
        "name": "Docs",
        "external_ref": "gh:acme/docs",
        "metadata": frozen_json({"team": "web"}),
        "created_at": at,
        "updated_at": at,
    }
    return WorkspaceRecord.model_validate({**base, **fields})


def test_a_record_keeps_its_id_and_creation_and_moves_only_on_change(stores: tuple[RunStorage, RunStorage]) -> None:
    one, two = stores
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    first = asyncio.run(one.record_workspace(record(t0)))
    assert first.created_at == first.updated_at == t0

    same = asyncio.run(two.record_workspace(record(t0 + timedelta(days=1))))  # a restart, nothing changed
    assert same.workspace_id == first.workspace_id and same.updated_at == t0 and same.created_at == t0

    renamed = asyncio.run(
        two.record_workspace(record(t0 + timedelta(days=2), name="Docs site", execution_policy="none"))
    )
    assert renamed.workspace_id == first.workspace_id and renamed.created_at == t0
    assert renamed.updated_at == t0 + timedelta(days=2) and renamed.name == "Docs site"
    again = asyncio.run(one.record_workspace(record(t0 + timedelta(days=3), name="Docs site", execution_policy="none")))
    assert again == renamed
    assert again.metadata == {"team": "web"} and again.execution_policy == "none"
