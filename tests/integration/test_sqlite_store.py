"""The SQLite event store on real files: seed 001 event by event, atomic appends, races, reads and sessions."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.events import M1, SEED_LIMITS, SEED_RUN_ID, SEED_SESSION_ID, EventFactory, seed_001_steps

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import DeterministicIdGenerator, IdGenerator, RunId, SessionId, Uuid4IdGenerator
from bearagent.domain.run_events import HookExecutedV1, RunCreatedV2, RunFailedV2, TodosUpdatedV1
from bearagent.domain.state import SessionRecord
from bearagent.ports import EventStore, SessionStore
from bearagent.runtime.reducer import BudgetExceeded, InvalidTransition, SequenceConflict
from bearagent.store.sqlite import SqliteEventStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteEventStore]:
    s = SqliteEventStore(tmp_path / "state.db")
    yield s
    s.close()


def started(
    store: SqliteEventStore, limits: BudgetLimits | None = None, ids: IdGenerator | None = None
) -> EventFactory:
    f = EventFactory(ids=ids or DeterministicIdGenerator())
    store.append(f.run_created(limits))
    store.append(f.run_started())
    return f


def count_events(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM events").fetchone()[0]


def test_it_implements_the_ports(store: SqliteEventStore) -> None:
    event_store: EventStore = store
    session_store: SessionStore = store
    assert event_store is session_store


def test_seed_001_through_the_store_event_by_event(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    steps = seed_001_steps()
    with SqliteEventStore(path) as store:
        for index, step in enumerate(steps, start=1):
            returned = store.append(step.event)
            stored = store.get_run(SEED_RUN_ID)
            assert stored is not None and stored == returned
            assert stored.last_sequence == index
            assert stored.status == step.run_status
            assert stored.usage.model_iterations == step.model_iterations
            assert stored.usage.tool_calls == step.tool_calls
            assert stored.usage.total_tokens == step.total_tokens
            assert stored.session_id == SEED_SESSION_ID and stored.budget_limits == SEED_LIMITS
            activities = {a.activity_id: a for a in store.list_activities(SEED_RUN_ID)}
            if step.activity is not None:
                assert activities[step.activity].status == step.activity_status
                assert activities[step.activity].last_sequence == index
            active = [a for a in activities.values() if a.status in ("pending", "running")]
            assert [a.activity_id for a in active] == ([stored.active_activity_id] if stored.active_activity_id else [])
    # reopen: everything is still there, equal to what was appended
    with SqliteEventStore(path) as store:
        run = store.get_run(SEED_RUN_ID)
        assert run is not None and run.status == "succeeded" and run.last_sequence == 18
        assert run.usage.total_tokens == 1300 and run.usage.model_iterations == 3 and run.usage.tool_calls == 2
        assert list(store.read_events(SEED_RUN_ID)) == [s.event for s in steps]
        assert [e.sequence for e in store.read_events(SEED_RUN_ID, 16)] == [16, 17, 18]
        assert [e.sequence for e in store.read_events(SEED_RUN_ID, 2, limit=2)] == [2, 3]
        activities = store.list_activities(SEED_RUN_ID)
        assert [a.requested_sequence for a in activities] == [3, 6, 9, 12, 15]
        assert activities[0].activity_id == M1
        replayed = store.replay_run(SEED_RUN_ID)
        assert replayed == (run, list(activities))


def test_budget_stop_through_the_store_records_nothing(store: SqliteEventStore) -> None:
    f = started(store, BudgetLimits(max_tool_calls=2))
    for event in [*f.tool_call(), *f.tool_call()]:
        store.append(event)
    before = store.get_run(f.run_id)
    assert before is not None
    events_before = list(store.read_events(f.run_id))
    with pytest.raises(BudgetExceeded) as caught:
        store.append(f.tool_requested())
    f.rejected()
    assert caught.value.info.code == "budget.max_tool_calls"
    assert caught.value.info.details["limit"] == 2 and caught.value.info.details["used"] == 2
    assert store.get_run(f.run_id) == before
    assert list(store.read_events(f.run_id)) == events_before
    assert len(store.list_activities(f.run_id)) == 2
    final = store.append(f.event(RunFailedV2(error=caught.value.info)))
    assert final.status == "failed" and final.last_sequence == before.last_sequence + 1


def test_a_failure_inside_the_transaction_rolls_everything_back(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SqliteEventStore(path)
    f = started(store)
    store.append(f.model_requested())
    store.append(f.model_started())
    before_run, before_acts, before_events = (
        store.get_run(f.run_id),
        store.list_activities(f.run_id),
        count_events(path),
    )
    with sqlite3.connect(path) as other:  # a real failure at the last write of the transaction
        other.execute(
            "CREATE TRIGGER fail_activity BEFORE INSERT ON activity_projections BEGIN SELECT RAISE(ABORT, 'injected'); END"
        )
    completed = f.model_completed(10, 5)
    with pytest.raises(BearAgentError) as caught:
        store.append(completed)
    assert caught.value.info.category == "storage"
    assert str(path) in str(caught.value)
    assert store.get_run(f.run_id) == before_run
    assert store.list_activities(f.run_id) == before_acts
    assert count_events(path) == before_events
    with sqlite3.connect(path) as other:
        other.execute("DROP TRIGGER fail_activity")
    run = store.append(completed)  # the same event now goes through
    assert run.usage.total_tokens == 15 and run.active_activity_id is None
    store.close()


def test_duplicates_are_refused_and_leave_nothing(store: SqliteEventStore, tmp_path: Path) -> None:
    f = started(store)
    events = f.model_call()
    for event in events:
        store.append(event)
    before = store.get_run(f.run_id)
    again = f.model_requested(activity_id=f.activity_id)  # reused activity id
    with pytest.raises(InvalidTransition, match="was requested before; every activity needs a new id"):
        store.append(again)
    f.rejected()
    same_id = f.event(TodosUpdatedV1(), event_id=events[0].event_id)
    with pytest.raises(InvalidTransition, match="is already stored; every event needs a new event_id"):
        store.append(same_id)
    f.rejected()
    assert store.get_run(f.run_id) == before
    assert store.append(f.model_requested()).usage.model_iterations == 2


def test_invalid_events_are_refused_before_any_write(store: SqliteEventStore, tmp_path: Path) -> None:
    f = started(store)
    good = f.model_requested()
    with pytest.raises(BearAgentError) as caught:
        store.append(good.model_copy(update={"schema_version": 7}))
    assert caught.value.info.code == "validation.unknown_event"
    with pytest.raises(BearAgentError) as caught:
        store.append(good.model_copy(update={"payload": {"activity_id": 1}}))
    assert caught.value.info.code == "validation.invalid_event_payload"
    stranger = EventFactory(RunId("10000000-0000-4000-8000-0000000000aa"))
    with pytest.raises(InvalidTransition, match="the first event of a run must be RunCreated"):
        store.append(stranger.run_started())
    assert store.get_run(stranger.run_id) is None
    assert store.append(good).last_sequence == 3


def test_two_stores_on_one_file_see_each_others_appends(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    a, b = SqliteEventStore(path), SqliteEventStore(path)
    f = EventFactory()
    a.append(f.run_created())
    b.append(f.run_started())  # b reads the run a created
    hook = f.event(HookExecutedV1(hook_event="Stop", handler="h", handler_type="command", duration_ms=1))
    a.append(hook)  # a's cached state is stale (it last saw sequence 1): it must notice and re-read
    loser = hook.model_copy(update={"event_id": f.ids.new(type(hook.event_id))})
    with pytest.raises(SequenceConflict) as caught:
        b.append(loser)
    assert caught.value.info.code == "conflict.sequence"
    assert "event has sequence 3 but the next free sequence is 4" in str(caught.value)
    assert "another writer appended first" in str(caught.value)
    assert b.append(f.model_requested()).last_sequence == 4
    assert a.append(f.model_started()).last_sequence == 5
    assert a.get_run(f.run_id) == b.get_run(f.run_id)
    a.close()
    b.close()


@pytest.mark.parametrize("shared", [True, False], ids=["one-store", "store-per-thread"])
def test_threads_racing_for_one_sequence_have_exactly_one_winner(tmp_path: Path, shared: bool) -> None:
    path = tmp_path / "state.db"
    main = SqliteEventStore(path)
    f = started(main)
    barrier = threading.Barrier(6)
    outcomes: list[str] = []
    lock = threading.Lock()

    def contender(n: int) -> None:
        s = main if shared else SqliteEventStore(path)
        event = f.event(
            HookExecutedV1(hook_event="Stop", handler=f"t{n}", handler_type="command", duration_ms=n), sequence=3
        )
        barrier.wait()
        try:
            s.append(event)
            result = "won"
        except SequenceConflict:
            result = "conflict"
        with lock:
            outcomes.append(result)
        if not shared:
            s.close()

    threads = [threading.Thread(target=contender, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict"] * 5 + ["won"]
    assert [e.sequence for e in main.read_events(f.run_id)] == [1, 2, 3]
    main.close()


@pytest.mark.slow
def test_processes_racing_on_one_run_never_share_a_sequence(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SqliteEventStore(path) as store:
        f = EventFactory(ids=Uuid4IdGenerator())
        store.append(f.run_created())
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.store_worker", "race", str(path), str(f.run_id), "40"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [w.communicate(timeout=240) for w in workers]
    for worker, (out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
        assert out.startswith("ok 40 conflicts ")
    conflicts = sum(int(out.split()[3]) for out, _ in outputs)
    with SqliteEventStore(path) as store:
        events = store.read_events(f.run_id)
        assert [e.sequence for e in events] == list(range(1, 122))
        assert len({e.event_id for e in events}) == 121
        run = store.get_run(f.run_id)
        assert run is not None and run.last_sequence == 121
    assert conflicts >= 0  # how many lost a race depends on scheduling; the log above is what must hold


def test_list_runs_filters_and_orders_newest_first(store: SqliteEventStore) -> None:
    ids = DeterministicIdGenerator()
    s1, s2 = SessionId("20000000-0000-4000-8000-0000000000a1"), SessionId("20000000-0000-4000-8000-0000000000a2")
    made: list[RunId] = []
    for n in range(5):
        f = EventFactory(ids=ids)
        store.append(f.run_created(session_id=s1 if n % 2 == 0 else s2))
        if n >= 2:
            store.append(f.run_started())
        made.append(f.run_id)
    assert [r.run_id for r in store.list_runs()] == made[::-1]
    assert [r.run_id for r in store.list_runs(session_id=s1)] == [made[4], made[2], made[0]]
    assert [r.run_id for r in store.list_runs(status="queued")] == [made[1], made[0]]
    assert [r.run_id for r in store.list_runs(session_id=s2, status="running")] == [made[3]]
    assert [r.run_id for r in store.list_runs(limit=2)] == [made[4], made[3]]
    assert store.list_runs(parent_run_id=made[0]) == []


def test_resolve_run_ref(store: SqliteEventStore) -> None:
    with pytest.raises(BearAgentError) as caught:
        store.resolve_run_ref("last")
    assert caught.value.info.code == "not_found.no_runs"
    assert "there are no runs in" in str(caught.value) and "bearagent run" in str(caught.value)
    ids = DeterministicIdGenerator()
    a = EventFactory(RunId("abc00000-0000-4000-8000-000000000001"), ids=ids)
    b = EventFactory(RunId("abd00000-0000-4000-8000-000000000002"), ids=ids)
    store.append(a.run_created())
    store.append(b.run_created())
    assert store.resolve_run_ref("last") == b.run_id
    assert store.resolve_run_ref(str(a.run_id)) == a.run_id
    assert store.resolve_run_ref("ABC") == a.run_id
    assert store.resolve_run_ref(" abd0 ") == b.run_id
    with pytest.raises(BearAgentError) as caught:
        store.resolve_run_ref("ab")
    assert caught.value.info.code == "invalid_request.ambiguous_run_ref"
    assert str(a.run_id) in str(caught.value) and str(b.run_id) in str(caught.value)
    assert "type more characters" in str(caught.value)
    with pytest.raises(BearAgentError) as caught:
        store.resolve_run_ref("ffff")
    assert caught.value.info.code == "not_found.run"
    assert "no run id starts with 'ffff'" in str(caught.value) and "bearagent runs list" in str(caught.value)
    with pytest.raises(BearAgentError) as caught:
        store.resolve_run_ref("ab*")
    assert caught.value.info.code == "invalid_request.bad_run_ref"


def test_sessions(store: SqliteEventStore) -> None:
    t0 = datetime(2026, 8, 18, 2, 0, tzinfo=UTC)
    one = SessionRecord(
        session_id=SessionId("20000000-0000-4000-8000-000000000001"),
        created_at=t0,
        updated_at=t0,
        agent_name="build",
        active_agent_name="build",
        caller="cli",
    )
    two = one.model_copy(
        update={"session_id": SessionId("20000000-0000-4000-8000-000000000002"), "updated_at": t0 + timedelta(1)}
    )
    assert store.latest_session() is None
    store.create_session(one)
    store.create_session(two)
    with pytest.raises(BearAgentError) as caught:
        store.create_session(one)
    assert caught.value.info.code == "conflict.session_exists"
    assert store.get_session(one.session_id) == one
    assert store.latest_session() == two
    moved = one.model_copy(update={"updated_at": t0 + timedelta(2), "active_agent_name": "plan", "title": "intro"})
    store.update_session(moved)
    assert store.get_session(one.session_id) == moved
    assert store.latest_session(caller="cli") == moved
    assert store.latest_session(caller="api") is None
    assert [s.session_id for s in store.list_sessions()] == [one.session_id, two.session_id]
    assert store.list_sessions(limit=1) == [moved]
    with pytest.raises(BearAgentError) as caught:
        store.update_session(moved.model_copy(update={"session_id": SessionId("20000000-0000-4000-8000-0000000000ff")}))
    assert caught.value.info.code == "not_found.session"
    assert "create it first" in str(caught.value)


def test_durability_setting_and_wal(tmp_path: Path) -> None:
    with SqliteEventStore(tmp_path / "n.db") as normal:
        assert normal._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # pyright: ignore[reportPrivateUsage]
        assert normal._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # pyright: ignore[reportPrivateUsage]
    with SqliteEventStore(tmp_path / "f.db", durability="full") as full:
        assert full._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(BearAgentError) as caught:
        SqliteEventStore(tmp_path / "x.db", durability="fast")  # type: ignore[arg-type]
    assert caught.value.info.code == "configuration.invalid_durability"
    assert "use 'normal'" in str(caught.value) and "'full'" in str(caught.value)


def test_payloads_come_back_exactly(store: SqliteEventStore) -> None:
    f = started(store)
    todo = {"content": 'héllo \u2028 ✓ "quoted"', "status": "pending", "weight": 0.1 + 0.2, "big": 2**70, "n": None}
    event = f.event(TodosUpdatedV1(todos=(todo, {"nested": {"deep": [1, [2, [3]]]}})))
    store.append(event)
    [back] = store.read_events(f.run_id, 3)
    assert back == event
    assert back.payload["todos"][0]["big"] == 2**70  # type: ignore[index]


def test_rebuild_replaces_damaged_projections(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SqliteEventStore(path) as store:
        for step in seed_001_steps():
            store.append(step.event)
        f = started(store, ids=Uuid4IdGenerator())
        store.append(f.model_requested())  # a run left with an active activity
        expected_runs = {r.run_id: r for r in store.list_runs()}
        expected_acts = {r: store.list_activities(r) for r in expected_runs}
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE run_projections SET data = replace(data, '\"succeeded\"', '\"failed\"')")
        conn.execute("DELETE FROM activity_projections")
    with SqliteEventStore(path) as store:
        report = store.rebuild_projections(validate=True)
        assert (report.runs, report.events) == (2, 18 + 3)
        assert {r.run_id: r for r in store.list_runs()} == expected_runs
        assert {r: store.list_activities(r) for r in expected_runs} == expected_acts
        assert store.append(f.model_started()).last_sequence == 4


def test_a_large_goal_is_written_once_not_on_every_append(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    goal = "summarise everything. " * 40_000  # ~880 KB
    with SqliteEventStore(path) as store:
        f = EventFactory()
        created = f.event(
            RunCreatedV2(budget_limits=BudgetLimits(), goal=goal, agent_name="build", prompt_hash="a" * 64)
        )
        store.append(created)
        store.append(f.run_started())
        store.append(f.model_requested())
        run = store.get_run(f.run_id)
        assert run is not None and run.goal == goal and run.last_sequence == 3
        assert store.list_runs()[0].goal == goal
        assert store.replay_run(f.run_id) == (run, list(store.list_activities(f.run_id)))
    with sqlite3.connect(path) as conn:
        data_len, goal_len = conn.execute("SELECT length(data), length(goal) FROM run_projections").fetchone()
    assert goal_len == len(goal)
    assert data_len < 2_000  # the run row's JSON, rewritten on every append, does not carry the goal
    with SqliteEventStore(path) as store:  # a fresh process (no cache) reads it back whole
        assert store.append(f.model_started()).goal == goal
