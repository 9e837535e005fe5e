"""What the adapters send: tool-call history, provider call ids, tool results and projected tool names, for all
three protocols, read back from the replay server's record of the request body."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import pytest
from tests.support.providers import CANARY_KEY, collect, make_provider
from tests.support.replay_server import RecordedRequest, ReplayServer

from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message, ToolCallPart, ToolResultPart
from bearagent.domain.models import ModelRequest, ToolDescriptor

OURS_1 = ToolCallId("50000000-0000-4000-8000-000000000001")
OURS_2 = ToolCallId("50000000-0000-4000-8000-000000000002")
TEXT_FIXTURE = {
    "openai_chat": "openai_chat/stream_text.sse",
    "openai_responses": "openai_responses/stream_text.sse",
    "anthropic_messages": "anthropic_messages/stream_text.sse",
}


def history_request() -> ModelRequest:
    """system, user, assistant(text + two parallel calls: one with a provider id, one without), two tool results
    (the second an error), then the user again. One tool name needs projecting."""
    call_1 = ToolCallPart(
        tool_call_id=OURS_1, provider_call_id="call_provider_A", name="mcp.time.now", arguments={"tz": "UTC"}
    )
    call_2 = ToolCallPart(tool_call_id=OURS_2, provider_call_id=None, name="Read", arguments={"file_path": "a.md"})
    return ModelRequest(
        model="test-model",
        messages=(
            Message.system("You are terse."),
            Message.user("What time is it, and what is in a.md?"),
            Message.assistant("Checking both.", (call_1, call_2)),
            Message.tool(
                ToolResultPart(
                    tool_call_id=OURS_1, provider_call_id="call_provider_A", name="mcp.time.now", content="12:00"
                )
            ),
            Message.tool(ToolResultPart(tool_call_id=OURS_2, name="Read", content="no such file", is_error=True)),
            Message.user("Thanks. Summarise."),
        ),
        tools=(
            ToolDescriptor(name="mcp.time.now", description="Current time.", input_schema={"type": "object"}),
            ToolDescriptor(
                name="Read",
                description="Read a file.",
                input_schema={"type": "object", "properties": {"file_path": {"type": "string"}}},
            ),
        ),
        max_output_tokens=321,
        temperature=0.5,
    )


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


def _send(replay: ReplayServer, protocol: str) -> RecordedRequest:
    fixture = replay.fixtures[("local", TEXT_FIXTURE[protocol])]
    before = len(replay.requests)
    outcome = collect(make_provider(protocol, replay.base_url(fixture)), history_request())
    assert outcome.error is None, outcome.error
    recorded = replay.requests[before:]
    assert len(recorded) == 1
    return recorded[0]


@pytest.mark.network_local
def test_chat_completions_request_carries_history_ids_and_results(replay: ReplayServer) -> None:
    request = _send(replay, "openai_chat")
    body = request.json()
    assert request.headers["authorization"] == f"Bearer {CANARY_KEY}"
    assert body["model"] == "test-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 321
    assert body["temperature"] == 0.5
    messages = cast(list[dict[str, object]], body["messages"])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assistant = messages[2]
    assert assistant["content"] == "Checking both."
    assert assistant["tool_calls"] == [
        {
            "id": "call_provider_A",
            "type": "function",
            "function": {"name": "mcp_time_now", "arguments": '{"tz": "UTC"}'},
        },
        {"id": str(OURS_2), "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "a.md"}'}},
    ]
    assert messages[3] == {"role": "tool", "tool_call_id": "call_provider_A", "content": "12:00"}
    assert messages[4] == {"role": "tool", "tool_call_id": str(OURS_2), "content": "Error: no such file"}
    tools = cast(list[dict[str, dict[str, object]]], body["tools"])
    assert [t["function"]["name"] for t in tools] == ["mcp_time_now", "Read"]
    assert tools[1]["function"]["parameters"] == {"type": "object", "properties": {"file_path": {"type": "string"}}}


@pytest.mark.network_local
def test_responses_request_carries_function_call_items_and_outputs(replay: ReplayServer) -> None:
    request = _send(replay, "openai_responses")
    body = request.json()
    assert body["max_output_tokens"] == 321
    assert body["store"] is False
    items = cast(list[dict[str, object]], body["input"])
    assert items == [
        {"type": "message", "role": "system", "content": "You are terse."},
        {"type": "message", "role": "user", "content": "What time is it, and what is in a.md?"},
        {"type": "message", "role": "assistant", "content": "Checking both."},
        {"type": "function_call", "call_id": "call_provider_A", "name": "mcp_time_now", "arguments": '{"tz": "UTC"}'},
        {"type": "function_call", "call_id": str(OURS_2), "name": "Read", "arguments": '{"file_path": "a.md"}'},
        {"type": "function_call_output", "call_id": "call_provider_A", "output": "12:00"},
        {"type": "function_call_output", "call_id": str(OURS_2), "output": "Error: no such file"},
        {"type": "message", "role": "user", "content": "Thanks. Summarise."},
    ]
    tools = cast(list[dict[str, object]], body["tools"])
    assert [t["name"] for t in tools] == ["mcp_time_now", "Read"]
    assert all(t["type"] == "function" for t in tools)


@pytest.mark.network_local
def test_anthropic_request_carries_tool_use_and_merged_tool_results(replay: ReplayServer) -> None:
    request = _send(replay, "anthropic_messages")
    body = request.json()
    # anthropic 2.x sends the key as a bearer token (older versions used x-api-key)
    assert CANARY_KEY in (request.headers.get("x-api-key", ""), request.headers.get("authorization", "")[7:])
    assert body["system"] == "You are terse."
    assert body["max_tokens"] == 321
    messages = cast(list[dict[str, object]], body["messages"])
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "call_provider_A", "name": "mcp_time_now", "input": {"tz": "UTC"}},
        {"type": "tool_use", "id": str(OURS_2), "name": "Read", "input": {"file_path": "a.md"}},
    ]
    # both results and the next user text travel in one user turn, results first
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_provider_A", "content": "12:00"},
        {"type": "tool_result", "tool_use_id": str(OURS_2), "content": "no such file", "is_error": True},
        {"type": "text", "text": "Thanks. Summarise."},
    ]
    tools = cast(list[dict[str, object]], body["tools"])
    assert [t["name"] for t in tools] == ["mcp_time_now", "Read"]
    assert tools[0]["input_schema"] == {"type": "object"}


@pytest.mark.network_local
def test_a_tool_result_without_provider_id_reuses_the_id_the_call_was_sent_with(replay: ReplayServer) -> None:
    """The runtime may store the provider id only on the call; the result then finds it through our id."""
    call = ToolCallPart(tool_call_id=OURS_1, provider_call_id="call_only_on_call", name="Read", arguments={})
    request = ModelRequest(
        model="test-model",
        messages=(
            Message.user("go"),
            Message.assistant("", (call,)),
            Message.tool(ToolResultPart(tool_call_id=OURS_1, name="Read", content="ok")),
        ),
    )
    fixture = replay.fixtures[("local", TEXT_FIXTURE["openai_chat"])]
    before = len(replay.requests)
    assert collect(make_provider("openai_chat", replay.base_url(fixture)), request).error is None
    messages = cast(list[dict[str, object]], replay.requests[before].json()["messages"])
    assert messages[1]["content"] == ""  # never null: some OpenAI-compatible servers reject it
    assert messages[2]["tool_call_id"] == "call_only_on_call"


@pytest.mark.network_local
def test_the_model_answering_with_a_projected_name_is_mapped_back(replay: ReplayServer) -> None:
    fixture = replay.fixtures[("local", "openai_chat/stream_projected_names.sse")]
    request = history_request()
    outcome = collect(make_provider("openai_chat", replay.base_url(fixture)), request)
    assert [c.name for c in outcome.tool_calls] == ["mcp.time.now", "made_up_tool"]


@pytest.mark.network_local
@pytest.mark.parametrize(
    ("protocol", "fixture_name"),
    [
        ("openai_chat", "openai_chat/error_429_rate_limit.json"),
        ("openai_responses", "openai_responses/error_500_server_error.json"),
        ("anthropic_messages", "anthropic_messages/error_529_overloaded.json"),
    ],
)
def test_adapters_never_retry(replay: ReplayServer, protocol: str, fixture_name: str) -> None:
    """The SDKs would retry these (429/5xx/529) twice by default; the runtime owns retries, so: one request."""
    fixture = replay.fixtures[("local", fixture_name)]
    before = len(replay.requests)
    outcome = collect(make_provider(protocol, replay.base_url(fixture)), history_request())
    assert outcome.stream_error.info.retryable
    assert len(replay.requests) - before == 1
    assert replay.requests[-1].headers.get("x-stainless-retry-count") == "0"
