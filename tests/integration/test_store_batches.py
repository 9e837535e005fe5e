"""`append_many`: consecutive events of one run in one transaction, all or none."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.events import EventFactory

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.ids import RunId
from bearagent.runtime.reducer import BudgetExceeded
from bearagent.store.sqlite import SqliteEventStore


def test_a_batch_is_stored_whole_and_reduces_event_by_event(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "state.db")
    f = EventFactory()
    store.append_many([f.run_created(), f.run_started()])
    projection = store.append_many([f.model_requested(), f.model_started()])
    assert projection.last_sequence == 4
    assert projection.usage.model_iterations == 1
    assert projection.active_activity_id is not None
    assert [e.sequence for e in store.read_events(f.run_id)] == [1, 2, 3, 4]
    assert store.replay_run(f.run_id) == (store.get_run(f.run_id), list(store.list_activities(f.run_id)))


def test_a_budget_refusal_rolls_back_the_whole_batch(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "state.db")
    f = EventFactory()
    store.append_many([f.run_created(BudgetLimits(max_tool_calls=0)), f.run_started()])
    with pytest.raises(BudgetExceeded):
        store.append_many([f.tool_requested(), f.tool_started()])
    run = store.get_run(f.run_id)
    assert run is not None
    assert run.last_sequence == 2
    assert run.usage.tool_calls == 0
    assert run.active_activity_id is None
    assert list(store.list_activities(f.run_id)) == []
    assert len(store.read_events(f.run_id)) == 2
    # the store is still consistent and accepts the run's next fact at the same sequence
    f.sequence = 2
    assert store.append(f.run_succeeded()).status == "succeeded"


def test_a_batch_is_one_run_only(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "state.db")
    a, b = EventFactory(RunId.new()), EventFactory(RunId.new())
    with pytest.raises(ValueError, match="one run"):
        store.append_many([a.run_created(), b.run_created()])
    with pytest.raises(ValueError, match="at least one"):
        store.append_many([])
