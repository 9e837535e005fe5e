"""The workspace feed (`GET /v1/workspaces/{ws}/events`) through a real `bearagent serve`: every run the caller may
see, live and interleaved, ids `<run_id>:<seq>-<n>`; resumed with `Last-Event-ID` after a dropped connection, live
or later, with no event lost or repeated; `feed.reset` for an id it no longer holds; runs another process writes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse
from tests.server.test_http_api import JWT_SECRET, Server, gateway_token, start, wait_for
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import agent_md, scripted_workspace

SCRIPT = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
    wait_for_file: release
    wait_timeout_ms: 120000
  - text: "Read it."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
    delay_ms: 250
  - text: "All read."
    delay_ms: 250
"""
# a run's first model call is held until a test creates .bearagent/release (`release`): runs a test starts one after
# the other are then all in flight together, however long a loaded machine takes to start them (a fixed delay
# could run out first, and the runs would not interleave)
IDLE_S = 2.0
RW = "runs:read runs:write"


@dataclass(frozen=True)
class Frame:
    id: str
    event: str
    data: str

    @property
    def run_id(self) -> str:
        return str(json.loads(self.data)["run_id"])


@dataclass(frozen=True)
class Served:
    server: Server
    root: Path
    home: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("feed")
    root = scripted_workspace(tmp / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary", tools="[Read]")})
    write(root, "notes.md", "hello notes\n")
    config = f"""
workspaces:
  - {{id: ws, path: {root}}}
auth:
  jwt: {{key: {JWT_SECRET}, algorithms: [HS256], audience: bearagent}}
limits: {{sse_idle_timeout_s: {IDLE_S}}}
"""
    srv = start(tmp, config=config)
    try:
        yield Served(srv, root, tmp / "home")
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


def read_feed(client: httpx.Client, last_event_id: str | None = None, *, until: set[str] | None = None) -> list[Frame]:
    """Frames with an id (not tokens: they are live only), until each run in `until` has ended or the stream closes."""
    headers = {"last-event-id": last_event_id} if last_event_id else {}
    frames: list[Frame] = []
    ended: set[str] = set()
    with connect_sse(client, "GET", "/v1/workspaces/ws/events", headers=headers) as source:
        for sse in source.iter_sse():
            if sse.event == "feed.reset":
                frames.append(Frame("", sse.event, sse.data))
                continue
            if sse.event == "token":  # no `id:` line (httpx-sse repeats the last id it saw, as EventSource does)
                continue
            frame = Frame(sse.id, sse.event, sse.data)
            frames.append(frame)
            if sse.event in ("run.succeeded", "run.failed"):
                ended.add(frame.run_id)
            if until is not None and until <= ended:
                break
    return frames


def release(served: Served) -> None:
    """Let the held first model call of every run (started or to come) answer."""
    (served.root / ".bearagent" / "release").touch()


def start_run(client: httpx.Client) -> str:
    sid = client.post("/v1/workspaces/ws/sessions", json={}).json()["id"]
    accepted = client.post(f"/v1/sessions/{sid}/runs", json={"prompt": "read the notes"})
    assert accepted.status_code == 202, accepted.text
    return str(accepted.json()["run_id"])


def run_stream(client: httpx.Client, run_id: str) -> list[str]:
    with connect_sse(client, "GET", f"/v1/runs/{run_id}/events") as source:
        return [sse.data for sse in source.iter_sse() if sse.event != "token"]


@pytest.mark.slow
def test_the_feed_interleaves_the_callers_runs_and_resumes_without_gaps_or_duplicates(
    served: Served,
) -> None:
    srv = served.server
    alice = gateway_token("alice", RW, ["ws"])
    bob = gateway_token("bob", RW, ["ws"])
    with srv.client(alice) as a, srv.client(bob) as b, srv.client() as admin:
        with connect_sse(a, "GET", "/v1/workspaces/ws/events") as warm:  # the feed exists before the runs start
            assert warm.response.status_code == 200
        first, second, bobs = start_run(a), start_run(a), start_run(b)
        release(served)
        for run_id in (first, second):
            wait_for(a, run_id)
        wait_for(b, bobs)
        assert read_feed(admin, None) == []  # a fresh connection starts from now: nothing happened since
        # the feed's journal holds everything since it started: resume from the first frame of these runs
        per_run = {r: run_stream(c, r) for r, c in ((first, a), (second, a), (bobs, b))}
        # the runs go in parallel: whichever started first (not necessarily the first accepted) opens the journal
        start, opened, after = _from_the_earliest(a, (first, second))
        whole = [Frame(opened, "run.started", per_run[start][0]), *after]
        mine = [f for f in whole if f.run_id in (first, second)]
        assert mine == whole, "alice sees no frame of bob's run"
        for run_id in (first, second):
            assert [f.data for f in whole if f.run_id == run_id] == per_run[run_id]  # same events as the run stream
        for f in whole:
            event = json.loads(f.data)
            run_part, _, seq_part = f.id.partition(":")
            assert event["type"] == f.event and run_part == event["run_id"] and seq_part.startswith(f"{event['seq']}-")
        interleaved = [f.run_id for f in whole]
        assert interleaved != sorted(interleaved, key=interleaved.index), "the two runs ran at the same time"
        for cut in sorted({1, len(whole) // 3, len(whole) // 2, len(whole) - 1}):
            assert whole[:cut] + read_feed(a, whole[cut - 1].id) == whole
        admin_start, admin_opened, admin_after = _from_the_earliest(admin, (first, second, bobs))
        admin_view = [Frame(admin_opened, "run.started", per_run[admin_start][0]), *admin_after]
        assert {f.run_id for f in admin_view} == {first, second, bobs}  # admin sees every run
        assert [f.data for f in admin_view if f.run_id == bobs] == per_run[bobs]


def _from_the_earliest(client: httpx.Client, runs: tuple[str, ...]) -> tuple[str, str, list[Frame]]:
    """Which of `runs` started first in the feed's journal, the feed id of its `run.started`, and the feed resumed
    from it. The feed is read once from the first accepted run's start (the usual earliest): a run whose
    `run.started` is not among those frames started before it, and the feed is read again from there (each read
    ends with the feed's idle time, so reading once per run cost that many idle waits)."""
    candidate = runs[0]
    while True:
        opened = _first_frame_id(client, candidate)
        after = read_feed(client, opened)
        started = {f.run_id for f in after if f.event == "run.started"}
        earlier = [r for r in runs if r != candidate and r not in started]
        if not earlier:
            return candidate, opened, after
        candidate = earlier[0]


def _first_frame_id(client: httpx.Client, run_id: str) -> str:
    """The feed id of a run's `run.started` (its RunStarted is sequence 2; it makes one stream event)."""
    events = client.get(f"/v1/runs/{run_id}/events").json()["events"]
    (started,) = [e["sequence"] for e in events if e["event_type"] == "RunStarted"]
    return f"{run_id}:{started}-1"


@pytest.mark.slow
def test_a_connection_dropped_mid_run_resumes_live(served: Served) -> None:
    srv = served.server
    with srv.client(gateway_token("alice", RW, ["ws"])) as a:
        with connect_sse(a, "GET", "/v1/workspaces/ws/events") as warm:
            assert warm.response.status_code == 200
        got: list[Frame] = []
        tokens = 0
        with connect_sse(a, "GET", "/v1/workspaces/ws/events") as source:
            run_id = start_run(a)
            release(served)
            for sse in source.iter_sse():
                tokens += sse.event == "token"
                if sse.event != "token":
                    got.append(Frame(sse.id, sse.event, sse.data))
                if sse.event == "tool_call":
                    break  # the connection drops in the middle of the run
        assert tokens > 0, "live tokens come on the feed"
        assert wait_for_status(a, run_id) in ("running", "succeeded")
        rest = read_feed(a, got[-1].id, until={run_id})
        assert [f.data for f in got + rest if f.run_id == run_id] == run_stream(a, run_id)
        assert len({f.id for f in got + rest}) == len(got + rest)


def wait_for_status(client: httpx.Client, run_id: str) -> str:
    return str(client.get(f"/v1/runs/{run_id}").json()["status"])


@pytest.mark.slow
def test_an_id_the_feed_no_longer_holds_starts_with_a_reset(served: Served) -> None:
    srv = served.server
    with srv.client() as c:
        frames = read_feed(c, "00000000-0000-4000-8000-000000000000:3-1")
        assert frames[0].event == "feed.reset"
        reset = json.loads(frames[0].data)
        assert reset["type"] == "feed.reset" and reset["last_event_id"].endswith(":3-1")
        assert c.get("/v1/workspaces/nope/events", headers={"accept": "text/event-stream"}).status_code == 404
    with srv.client(gateway_token("eve", RW, ["other"])) as e:
        assert e.get("/v1/workspaces/ws/events").status_code == 404
    with srv.client(gateway_token("eve", "runs:write", ["ws"])) as e:
        assert e.get("/v1/workspaces/ws/events").status_code == 403


@pytest.mark.slow
def test_runs_another_process_writes_appear_in_the_feed(served: Served) -> None:
    srv = served.server
    with srv.client() as c:  # the local token: the CLI's runs are subject `local`'s
        with connect_sse(c, "GET", "/v1/workspaces/ws/events") as warm:
            assert warm.response.status_code == 200
        release(served)
        done = subprocess.run(
            [sys.executable, "-m", "bearagent", "run", "-w", str(served.root), "--json", "read the notes"],
            env=isolated_env(served.home),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        run_id = json.loads(done.stdout)["run_id"]
        frames = read_feed(c, _first_frame_id(c, run_id), until={run_id})
        assert frames and frames[-1].event == "run.succeeded" and {f.run_id for f in frames} == {run_id}
        assert [f.data for f in frames] == run_stream(c, run_id)[1:]
