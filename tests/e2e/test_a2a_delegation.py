"""A BearAgent agent delegates to another BearAgent server through A2A (the client side, `bearagent/a2a/`): two real
`bearagent serve` processes; the first's workspace names the second under `a2a_agents:`, its scripted model calls
`a2a__helper`, and the tool talks to the second server with the official `a2a-sdk` client. The remote's streamed task
is the tool's result; cancelling the local run cancels the remote task; an untrusted workspace with the entry is
refused before anything is sent."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.server.test_http_api import BEARAGENT, TOKEN, Server, start, wait_for
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

pytestmark = pytest.mark.timeout(240)  # two real server processes and their runs

AGENTS = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
LOCAL_AGENTS = {"main": agent_md("Main agent.", mode="primary", tools="[Read, a2a__helper, a2a__slow]")}
REMOTE = """
turns:
  - text: "The answer is 42."
"""
REMOTE_SLOW = """
turns:
  - text: "never said"
    wait_for_file: never-created
    wait_timeout_ms: 120000
"""
LOCAL = """
turns:
  - text: "Asking the helper."
    tool_calls: [{name: a2a__helper, arguments: {prompt: "What is the answer?"}}]
  - text: "Relayed."
"""
LOCAL_SLOW = """
turns:
  - text: "Asking the slow helper."
    tool_calls: [{name: a2a__slow, arguments: {prompt: "Take your time."}}]
  - text: "never reached"
"""


def _entries(remote: str) -> str:
    return f"""
a2a_agents:
  helper:
    url: {remote}/a2a/answers
    headers: {{Authorization: "Bearer ${{HELPER_TOKEN}}"}}
    description: Knows the answer.
  slow:
    url: {remote}/a2a/slow/.well-known/agent-card.json
    headers: {{Authorization: "Bearer ${{HELPER_TOKEN}}"}}
"""


def _env(home: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / "bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
        "NO_COLOR": "1",
    }


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server, Path]]:
    tmp = tmp_path_factory.mktemp("a2a-delegation")
    answers = scripted_workspace(tmp / "remote" / "answers", REMOTE, agents=AGENTS)
    slow = scripted_workspace(tmp / "remote" / "slow", REMOTE_SLOW, agents=AGENTS)
    remote = start(
        tmp / "remote",
        config=f"workspaces:\n  - {{id: answers, path: {answers}}}\n  - {{id: slow, path: {slow}}}\n",
    )
    local_tmp = tmp / "local"
    local_tmp.mkdir()
    config = CONFIG + "permission_mode: acceptEdits\n" + _entries(remote.base)
    work = scripted_workspace(local_tmp / "work", LOCAL, agents=LOCAL_AGENTS, config=config)
    waits = scripted_workspace(local_tmp / "waits", LOCAL_SLOW, agents=LOCAL_AGENTS, config=config)
    home = local_tmp / "home"
    (home / "bearagent").mkdir(parents=True)
    for root in (work, waits):  # the entries send a prompt and a key elsewhere: the user trusts them first
        listed = subprocess.run(
            [BEARAGENT, "trust", "-w", str(root), "--list"], env=_env(home), capture_output=True, text=True
        )
        assert "remote A2A agent 'helper'" in listed.stdout, listed.stdout + listed.stderr
        subprocess.run([BEARAGENT, "trust", "-w", str(root), "--yes"], env=_env(home), check=True, capture_output=True)
    local = start(
        local_tmp,
        config=f"workspaces:\n  - {{id: work, path: {work}}}\n  - {{id: waits, path: {waits}}}\n",
        env={"HELPER_TOKEN": TOKEN},
    )
    try:
        yield local, remote, tmp
    finally:
        for server in (local, remote):
            server.proc.terminate()
            server.proc.wait(timeout=15)


def _remote_tasks(remote: Server, ws: str) -> list[dict[str, Any]]:
    with remote.client() as c:
        body = c.post(f"/a2a/{ws}", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}).json()
    return body["result"]["tasks"]


def test_the_local_agent_delegates_and_the_remote_answer_is_the_tool_result(servers: Any) -> None:
    local, remote, _tmp = servers
    with local.client() as c:
        sid = c.post("/v1/workspaces/work/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "Ask the helper."}).json()["run_id"]
        run = wait_for(c, run_id)
        events = c.get(f"/v1/runs/{run_id}/events").json()["events"]
    assert run["final_text"] == "Relayed."
    done = [e for e in events if e["event_type"] == "ToolCallCompleted"]
    assert len(done) == 1, [(e["event_type"], e["payload"]) for e in events if "Tool" in e["event_type"]]
    result = done[0]["payload"]["result"]
    assert result["tool_name"] == "a2a__helper" and result["status"] == "succeeded"
    assert result["content"].startswith("The answer is 42.")
    tasks = _remote_tasks(remote, "answers")
    assert len(tasks) == 1 and tasks[0]["status"]["state"] == "TASK_STATE_COMPLETED"
    # the remote's task and context ids come back to the model (to continue, or to answer an input request)
    assert result["data"]["task_id"] == tasks[0]["id"] and result["data"]["context_id"] == tasks[0]["contextId"]
    assert tasks[0]["id"] in result["content"]


def test_cancelling_the_local_run_cancels_the_remote_task(servers: Any) -> None:
    local, remote, _tmp = servers
    with local.client() as c:
        sid = c.post("/v1/workspaces/waits/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "Ask the slow helper."}).json()["run_id"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the remote works on the delegated task
            tasks = _remote_tasks(remote, "slow")
            if tasks and tasks[0]["status"]["state"] == "TASK_STATE_WORKING":
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the remote task never started: {_remote_tasks(remote, 'slow')}")
        assert c.post(f"/v1/runs/{run_id}/cancel").status_code == 202
        wait_for(c, run_id, "cancelled")
    deadline, state = time.monotonic() + 30, ""
    while time.monotonic() < deadline:
        state = _remote_tasks(remote, "slow")[0]["status"]["state"]
        if state == "TASK_STATE_CANCELED":
            break
        time.sleep(0.1)
    assert state == "TASK_STATE_CANCELED"


def test_an_untrusted_workspace_with_a_remote_agent_is_refused_naming_bearagent_trust(servers: Any) -> None:
    _local, remote, tmp = servers
    home = tmp / "stranger-home"
    (home / "bearagent").mkdir(parents=True)
    root = scripted_workspace(
        tmp / "stranger",
        LOCAL,
        agents=LOCAL_AGENTS,
        config=CONFIG + "permission_mode: acceptEdits\n" + _entries(remote.base),
    )
    before = len(_remote_tasks(remote, "answers"))
    ran = subprocess.run(
        [BEARAGENT, "run", "-w", str(root), "Ask the helper."],
        env={**_env(home), "HELPER_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode != 0
    assert "bearagent trust" in ran.stderr and "a2a" in ran.stderr.lower(), ran.stderr
    assert len(_remote_tasks(remote, "answers")) == before  # nothing was sent


def test_a_missing_header_variable_fails_the_call_naming_it(servers: Any) -> None:
    local, _remote, tmp = servers
    del local
    home = tmp / "nokey-home"
    (home / "bearagent").mkdir(parents=True)
    root = scripted_workspace(
        tmp / "nokey", LOCAL, agents=LOCAL_AGENTS, config=CONFIG + "permission_mode: acceptEdits\n"
    )
    user_config = home / "bearagent" / "config.yaml"
    user_config.write_text(_entries("http://127.0.0.1:9"))  # the user's own entry: no trust needed
    ran = subprocess.run(
        [BEARAGENT, "run", "-w", str(root), "--stream-json", "Ask the helper."],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert "HELPER_TOKEN is not set" in ran.stdout
