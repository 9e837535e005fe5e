"""A2A v1.0 on a real `bearagent serve` process, driven by the official `a2a-sdk` client: the agent card, a message
streamed to completion (the model's text as chunks of the answer artifact), a blocking message continuing the same context, a task that waits for an approval
(input-required) answered by a message, a working task cancelled, and a token without access to a workspace getting
the same 404 as the rest of the API."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import jwt
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory, create_client
from a2a.client.client import Client
from a2a.client.errors import A2AClientError
from a2a.helpers.proto_helpers import new_text_message
from a2a.types.a2a_pb2 import (
    AgentInterface,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from tests.server.test_http_api import JWT_SECRET, TOKEN, Server, start
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

pytestmark = pytest.mark.timeout(180)  # a real server process and its runs

AGENTS = {"main": agent_md("Answers questions about the notes.", mode="primary", tools="[Read, Write]")}
CHAT = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "The notes say hello."
  - text: "second answer"
"""
GATE = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Written."
"""
SLOW = """
turns:
  - text: "slow answer"
    wait_for_file: never-created
    wait_timeout_ms: 120000
"""
LEGACY = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "legacy answer"
"""
WORDS = """
turns:
  - text: "one two three four five six"
    delta_delay_ms: 120
"""
ACTION = """---
description: Summarise the notes.
agent: main
---
Summarise notes.md.
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("a2a")
    chat = scripted_workspace(tmp / "chat", CHAT, agents=AGENTS)
    (chat / "notes.md").write_text("hello\n")
    (chat / ".bearagent" / "actions").mkdir()
    (chat / ".bearagent" / "actions" / "summary.md").write_text(ACTION)
    gate = scripted_workspace(tmp / "gate", GATE, agents=AGENTS, config=CONFIG + "permission_mode: default\n")
    slow = scripted_workspace(tmp / "slow", SLOW, agents=AGENTS)
    legacy = scripted_workspace(tmp / "legacy", LEGACY, agents=AGENTS)
    words = scripted_workspace(tmp / "words", WORDS, agents=AGENTS)
    (legacy / "notes.md").write_text("hello\n")
    config = f"""
workspaces:
  - {{id: chat, path: {chat}}}
  - {{id: gate, path: {gate}}}
  - {{id: slow, path: {slow}}}
  - {{id: legacy, path: {legacy}}}
  - {{id: words, path: {words}}}
auth:
  jwt: {{key: {JWT_SECRET}, algorithms: [HS256]}}
"""
    started = start(tmp, config=config)
    try:
        yield started, gate
    finally:
        started.proc.terminate()
        started.proc.wait(timeout=15)


def _run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))  # pyright: ignore[reportArgumentType]


@asynccontextmanager
async def _client(base: str, path: str, *, token: str = TOKEN, streaming: bool = True) -> AsyncGenerator[Client]:
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60) as http:
        client = await create_client(f"{base}{path}", ClientConfig(httpx_client=http, streaming=streaming))
        yield client


async def _first(stream: AsyncIterator[StreamResponse]) -> StreamResponse:
    async for event in stream:
        return event
    raise AssertionError("the stream was empty")


def _ask(text: str, *, context_id: str | None = None, task_id: str | None = None) -> SendMessageRequest:
    return SendMessageRequest(
        message=new_text_message(text, context_id=context_id, task_id=task_id, role=Role.ROLE_USER)
    )


def _final_text(task: Any) -> str:
    return "".join(p.text for a in task.artifacts for p in a.parts)


@pytest.mark.slow
def test_the_card_then_a_streamed_task_to_completion_and_a_blocking_one_in_the_same_context(server: Any) -> None:
    started, _gate = server
    assert isinstance(started, Server)

    async def go() -> tuple[Any, list[StreamResponse], Any, Any, Any]:
        async with httpx.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}) as http:
            card = (await http.get(f"{started.base}/a2a/chat/.well-known/agent-card.json")).json()
            root_card = (await http.get(f"{started.base}/.well-known/agent-card.json")).json()
            assert root_card["supportedInterfaces"] == card["supportedInterfaces"]
        async with _client(started.base, "/a2a/chat") as client:
            events = [e async for e in client.send_message(_ask("What do the notes say?"))]
        first = events[0].task
        async with _client(started.base, "/a2a/chat", streaming=False) as client:
            blocking = [e async for e in client.send_message(_ask("And again?", context_id=first.context_id))]
            fetched = await client.get_task(GetTaskRequest(id=first.id))
            listed = await client.list_tasks(ListTasksRequest(context_id=first.context_id))
        return card, events, blocking[0].task, fetched, listed

    card, events, second, fetched, listed = _run(go())
    assert card["description"] == "Answers questions about the notes."
    assert card["capabilities"]["streaming"] is True
    assert {s["id"] for s in card["skills"]} == {"main", "action:summary"}
    assert card["supportedInterfaces"][0]["url"].endswith("/a2a/chat")

    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[-1] == "status_update", kinds
    task = events[0].task
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
    notes = [p.text for e in events if e.HasField("status_update") for p in e.status_update.status.message.parts]
    assert "calling Read" in notes
    answers = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    assert [p.text for p in answers[-1].parts] == ["The notes say hello."]
    assert kinds.index("artifact_update") < len(kinds) - 1  # the answer comes before the final status

    assert second.context_id == task.context_id and second.id != task.id
    assert second.status.state == TaskState.TASK_STATE_COMPLETED and _final_text(second) == "second answer"
    assert fetched.id == task.id and fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert _final_text(fetched) == "The notes say hello."
    assert {t.id for t in listed.tasks} == {task.id, second.id}


def test_the_model_text_streams_as_chunks_of_the_answer_artifact(server: Any) -> None:
    started, _gate = server

    async def go() -> list[StreamResponse]:
        async with _client(started.base, "/a2a/words") as client:
            return [e async for e in client.send_message(_ask("Count."))]

    events = _run(go())
    updates = [e.artifact_update for e in events if e.HasField("artifact_update")]
    chunks, final = updates[:-1], updates[-1]
    assert len(chunks) >= 3, [(u.append, [p.text for p in u.artifact.parts]) for u in updates]
    assert not chunks[0].append and all(u.append for u in chunks[1:])  # one model call: started, then appended
    assert {u.artifact.artifact_id for u in updates} == {final.artifact.artifact_id}
    assert "".join(p.text for u in chunks for p in u.artifact.parts) == "one two three four five six"
    assert final.last_chunk and not final.append and final.artifact.parts[0].text == "one two three four five six"
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    assert states[-1] == TaskState.TASK_STATE_COMPLETED


def test_an_approval_is_input_required_and_a_message_to_the_task_answers_it(server: Any) -> None:
    started, gate = server

    async def go() -> tuple[Any, Any]:
        async with _client(started.base, "/a2a/gate", streaming=False) as client:
            asked = (await _first(client.send_message(_ask("Write the file.")))).task
            answered = (await _first(client.send_message(_ask("allow", task_id=asked.id)))).task
            return asked, answered

    asked, answered = _run(go())
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "Write needs approval" in asked.status.message.parts[0].text
    assert answered.id == asked.id and answered.status.state == TaskState.TASK_STATE_COMPLETED
    assert _final_text(answered) == "Written."
    assert (gate / "out.txt").read_text() == "made\n"


def test_a_working_task_is_cancelled_and_an_ended_one_cannot_be(server: Any) -> None:
    started, _gate = server

    async def go() -> tuple[Any, Any, str]:
        async with _client(started.base, "/a2a/slow", streaming=False) as client:
            request = _ask("Take your time.")
            request.configuration.return_immediately = True
            submitted = (await _first(client.send_message(request))).task
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # until its worker started it
                now = await client.get_task(GetTaskRequest(id=submitted.id))
                if now.status.state == TaskState.TASK_STATE_WORKING:
                    break
                await asyncio.sleep(0.1)
            cancelled = await client.cancel_task(CancelTaskRequest(id=submitted.id))
            with pytest.raises(TaskNotCancelableError) as again:
                await client.cancel_task(CancelTaskRequest(id=submitted.id))
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="00000000-0000-4000-8000-000000000000"))
            return submitted, cancelled, str(again.value)

    submitted, cancelled, again = _run(go())
    assert submitted.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    assert cancelled.id == submitted.id and cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert "cancelled already" in again


def test_a_token_without_the_workspace_gets_the_same_404_as_the_rest_of_the_api(server: Any) -> None:
    started, _gate = server
    claims = {"sub": "user:9", "scope": "runs:read runs:write", "workspaces": ["chat"], "exp": int(time.time()) + 600}
    token = jwt.encode(claims, JWT_SECRET, algorithm="HS256")
    with httpx.Client(base_url=started.base, headers={"authorization": f"Bearer {token}"}, timeout=30) as c:
        api = c.post("/v1/workspaces/gate/sessions", json={})
        card = c.get("/a2a/gate/.well-known/agent-card.json")
        rpc = c.post("/a2a/gate", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}})
        assert api.status_code == card.status_code == rpc.status_code == 404
        assert api.json() == card.json() == rpc.json()
        assert c.get("/a2a/chat/.well-known/agent-card.json").status_code == 200
        unknown = c.post("/a2a/chat", json={"jsonrpc": "2.0", "id": 2, "method": "Nope", "params": {}}).json()
        assert unknown["error"]["code"] == -32601
    with httpx.Client(base_url=started.base, timeout=30) as anonymous:
        assert anonymous.get("/a2a/chat/.well-known/agent-card.json").status_code == 401

    async def other_callers_task() -> None:  # the local token's task is not this caller's: TaskNotFound
        async with _client(started.base, "/a2a/chat", streaming=False) as mine:
            request = _ask("Mine.")
            request.configuration.return_immediately = True
            task = (await _first(mine.send_message(request))).task
        async with _client(started.base, "/a2a/chat", token=token, streaming=False) as theirs:
            with pytest.raises((TaskNotFoundError, A2AClientError)):
                await theirs.get_task(GetTaskRequest(id=task.id))

    _run(other_callers_task())


def test_a_v0_3_client_gets_the_v0_3_method_names_and_shapes(server: Any) -> None:
    """The SDK's own v0.3 transport (`message/stream`, `tasks/get`), picked by a card interface of version 0.3."""
    started, _gate = server

    async def go() -> tuple[list[StreamResponse], Any]:
        async with httpx.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
            card = await A2ACardResolver(http, f"{started.base}/a2a/legacy").get_agent_card()
            url = card.supported_interfaces[0].url
            del card.supported_interfaces[:]
            card.supported_interfaces.append(
                AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3")
            )
            client = ClientFactory(ClientConfig(httpx_client=http)).create(card)
            events = [e async for e in client.send_message(_ask("What do the notes say?"))]
            task_id = next(e for e in events if e.HasField("task")).task.id
            return events, await client.get_task(GetTaskRequest(id=task_id))

    events, fetched = _run(go())
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED and _final_text(fetched) == "legacy answer"
    with httpx.Client(base_url=started.base, headers={"authorization": f"Bearer {TOKEN}"}, timeout=30) as c:
        raw = c.post(
            "/a2a/legacy", json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": fetched.id}}
        )
        body = raw.json()["result"]
        assert body["kind"] == "task" and body["status"]["state"] == "completed"
        assert body["artifacts"][0]["parts"] == [{"kind": "text", "text": "legacy answer"}]
