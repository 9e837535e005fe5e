"""When a run's owner is gone (`leases.owner_gone`), and the heartbeat a held run keeps (`LeaseKeeper`)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bearagent.domain.ids import RunId
from bearagent.ports import SystemClock
from bearagent.service.leases import LeaseKeeper, owner_gone, process_start, this_process
from bearagent.store.sqlite import SqliteEventStore

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _exited_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_this_process_is_never_gone() -> None:
    assert owner_gone(this_process(), NOW - timedelta(days=1), NOW) is None


def test_a_dead_pid_on_this_host_is_gone_at_once() -> None:
    owner = this_process().model_copy(update={"pid": _exited_pid()})
    why = owner_gone(owner, NOW, NOW)
    assert why is not None and "is gone" in why


def test_an_exited_owner_its_parent_has_not_collected_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 60  # the child exits at once; the wait only allows for a loaded machine
        while (state := _state(child.pid)) != "Z" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert state == "Z", state  # a zombie: signal 0 still reaches its pid
        owner = this_process().model_copy(update={"pid": child.pid, "process_start": process_start(child.pid)})
        why = owner_gone(owner, NOW, NOW)
        assert why is not None and "is gone" in why and "not collected" in why
    finally:
        child.wait()


def test_a_pid_with_no_process_is_gone_whatever_start_time_was_recorded() -> None:
    pid = _exited_pid()
    for start in (0, 1, 123_456):
        owner = this_process().model_copy(update={"pid": pid, "process_start": start})
        why = owner_gone(owner, NOW, NOW)
        assert why is not None and "is gone" in why, start


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]


def test_a_reused_pid_is_gone() -> None:
    parent = os.getppid()  # alive, but with another start time than the recorded one
    owner = this_process().model_copy(update={"pid": parent, "process_start": process_start(parent) + 1})
    why = owner_gone(owner, NOW, NOW)
    assert why is not None and "another process" in why


def test_a_live_process_on_this_host_is_not_gone() -> None:
    parent = os.getppid()
    owner = this_process().model_copy(update={"pid": parent, "process_start": process_start(parent)})
    assert owner_gone(owner, NOW - timedelta(days=1), NOW) is None


def test_another_boot_of_this_host_is_gone() -> None:
    owner = this_process().model_copy(update={"boot_id": "another-boot", "pid": os.getppid()})
    why = owner_gone(owner, NOW, NOW)
    assert why is not None and "restarted" in why


def test_another_host_is_judged_by_its_heartbeat() -> None:
    owner = this_process().model_copy(update={"host": "elsewhere", "boot_id": "x", "lease_ms": 60_000})
    assert owner_gone(owner, NOW - timedelta(seconds=30), NOW) is None
    why = owner_gone(owner, NOW - timedelta(seconds=90), NOW)
    assert why is not None and "no heartbeat" in why and "60000 ms" in why


def test_a_log_without_an_owner_is_judged_by_its_last_sign_of_life() -> None:
    assert owner_gone(None, NOW - timedelta(seconds=10), NOW) is None
    assert owner_gone(None, NOW - timedelta(minutes=5), NOW) is not None


def test_the_keeper_renews_the_heartbeat_while_a_run_is_held(tmp_path: Path) -> None:
    run = RunId("11111111-1111-4111-8111-000000000001")

    async def go() -> None:
        with SqliteEventStore(tmp_path / "state.db") as store:
            keeper = LeaseKeeper(store, SystemClock(), lease_ms=1_000)  # a beat every 1/3 s
            async with keeper.hold(run):
                first = (await store.fetch_heartbeats([run]))[run]
                await asyncio.sleep(0.8)
                later = (await store.fetch_heartbeats([run]))[run]
                assert later > first
                assert keeper.held() == (run,)
            assert keeper.held() == ()

    asyncio.run(go())
