"""Every provider wire fixture through the right adapter and the real SDK.

BearAgent's own set (`tests/fixtures/providers/`) covers every scenario for all three protocols, so the default run
needs nothing outside the repository. The shared set (`BEARAGENT_SHARED_DIR` or `<repo>/../shared`) has the same
shape; when it is present it is replayed too, as an extra, and those tests are skipped (with where to put it) when it
is absent. The replay server serves each fixture in random 1-64 byte chunks; the adapter's events (text, tool calls,
stop reason, usage, request id) or its error (category, retryable, retry-after, partial text) must match the
manifest's `expect` exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import cast

import pytest
from tests.support.providers import CANARY_KEY, Outcome, collect, make_provider, simple_request
from tests.support.replay_server import (
    LOCAL_FIXTURES,
    SHARED_FIXTURES_MISSING,
    Fixture,
    ReplayServer,
    load_manifest,
    shared_fixtures_dir,
)

from bearagent.domain.budgets import TokenUsage
from bearagent.domain.messages import Message
from bearagent.domain.models import ModelRequest
from bearagent.domain.overflow import is_context_overflow

SHARED_DIR = shared_fixtures_dir()
ALL_FIXTURES: dict[tuple[str, str], Fixture] = {
    **{("local", k): v for k, v in load_manifest("local", LOCAL_FIXTURES).items()},
    **({("shared", k): v for k, v in load_manifest("shared", SHARED_DIR).items()} if SHARED_DIR is not None else {}),
}
PROTOCOLS = ("openai_chat", "openai_responses", "anthropic_messages")

# The scenarios the project's own set must cover, per protocol: text, tool call, parallel tool calls, usage (every
# successful fixture checks it), refusal, truncation (output limit, dropped connection, content filter) and error
# bodies, both in the stream and as HTTP statuses.
_EVERY_PROTOCOL = (
    "stream_text.sse",
    "nonstream_text.json",
    "stream_tool_call_split.sse",
    "nonstream_tool_call.json",
    "stream_text_then_tool_call.sse",
    "stream_parallel_tool_calls.sse",
    "stream_refusal.sse",
    "stream_max_tokens.sse",
    "stream_truncated.sse",
    "error_400_invalid_request.json",
    "error_400_context_length_exceeded.json",
    "error_429_rate_limit.json",
)
_OPENAI_ERRORS = ("error_401_invalid_api_key.json", "error_429_insufficient_quota.json", "error_500_server_error.json")
REQUIRED_LOCAL = {
    "openai_chat": (*_EVERY_PROTOCOL, *_OPENAI_ERRORS, "stream_content_filter.sse", "stream_error_midstream.sse"),
    "openai_responses": (
        *_EVERY_PROTOCOL,
        *_OPENAI_ERRORS,
        "stream_content_filter.sse",
        "stream_error_event.sse",
        "stream_failed.sse",
    ),
    "anthropic_messages": (
        *_EVERY_PROTOCOL,
        "error_401_authentication.json",
        "error_500_api_error.json",
        "error_529_overloaded.json",
        "stream_error_overloaded.sse",
    ),
}

# What each failing wire fixture (either set) must become (category), by file name.
ERROR_CATEGORY = {
    "error_400_invalid_request.json": "invalid_request",
    "error_400_context_length_exceeded.json": "context_overflow",
    # context overflow in the words of each server (domain/overflow.py): never invalid_request with another hint
    "error_400_llamacpp_context_size.json": "context_overflow",
    "error_400_llamacpp_python_context_window.json": "context_overflow",
    "error_400_vllm_context_length.json": "context_overflow",
    "error_400_vllm_legacy_context_length.json": "context_overflow",
    "error_400_ollama_context_length.json": "context_overflow",
    "error_500_ollama_llama_server_context_size.json": "context_overflow",
    "error_400_lmstudio_context_overflow.json": "context_overflow",
    "error_400_lmstudio_n_keep.json": "context_overflow",
    "error_400_max_tokens_exceed_context.json": "context_overflow",
    "error_401_invalid_api_key.json": "authentication",
    "error_401_authentication.json": "authentication",
    "error_429_rate_limit.json": "rate_limit",
    "error_429_insufficient_quota.json": "quota",
    "error_500_server_error.json": "server",
    "error_500_api_error.json": "server",
    "error_529_overloaded.json": "overloaded",
    "stream_error_midstream.sse": "server",
    "stream_error_event.sse": "server",
    "stream_failed.sse": "server",
    "stream_error_overloaded.sse": "overloaded",
    "stream_truncated.sse": "truncated_stream",
    "stream_max_tokens.sse": "max_output_tokens",
    "stream_content_filter.sse": "content_filter",
}
RETRYABLE = {"server", "overloaded", "rate_limit", "truncated_stream", "network", "timeout"}


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


def _run(replay: ReplayServer, fixture: Fixture) -> Outcome:
    provider = make_provider(fixture.protocol, replay.base_url(fixture), stream=fixture.is_stream)
    entry = cast(
        dict[str, object],
        json.loads(fixture.path.parent.parent.joinpath("manifest.json").read_text())["fixtures"][fixture.name],
    )
    tools = cast(list[str], entry.get("tools", []))
    # the output limit of the request the fixture answers: a length stop short of it is the context window filling
    example = cast(dict[str, object], entry.get("request_example") or {})
    limits = [example.get(k) for k in ("max_tokens", "max_output_tokens", "max_completion_tokens")]
    limit = next((v for v in limits if isinstance(v, int)), None)
    request: ModelRequest = simple_request(tools=tools, max_output_tokens=limit)
    outcome = collect(provider, request)
    _assert_no_secret(outcome)
    return outcome


def _assert_no_secret(outcome: Outcome) -> None:
    dumped = repr(outcome.events)
    if outcome.error is not None:
        dumped += outcome.error.info.model_dump_json() + str(outcome.error) + repr(outcome.error.__dict__)
    assert CANARY_KEY not in dumped


def _expected_request_id(fixture: Fixture) -> str | None:
    headers: Mapping[str, str] = fixture.headers
    if fixture.name.rsplit("/", 1)[-1].startswith("error_"):
        headers = cast(dict[str, str], json.loads(fixture.path.read_text())["headers"])
    return headers.get("x-request-id") or headers.get("request-id")


def _tool_calls_expected(fixture: Fixture) -> list[tuple[str, str, dict[str, object]]]:
    expect = fixture.expect
    if fixture.protocol == "openai_chat":
        raw = cast(list[dict[str, str]], expect.get("tool_calls") or [])
        return [(c["id"], c["name"], json.loads(c["arguments"])) for c in raw]
    if fixture.protocol == "openai_responses":
        raw = cast(list[dict[str, str]], expect.get("function_calls") or [])
        return [(c["call_id"], c["name"], json.loads(c["arguments"])) for c in raw]
    raw = cast(list[dict[str, str]], expect.get("tool_uses") or [])
    return [(c["id"], c["name"], json.loads(c["input_json"])) for c in raw]


def _usage_expected(fixture: Fixture) -> tuple[int, int, int, int]:
    """(input, output, cache read, cache write) as BearAgent counts them: input includes the cached tokens, which
    OpenAI's prompt/input_tokens already do and Anthropic's input_tokens do not."""
    usage = cast(dict[str, int], fixture.expect["usage"])
    if fixture.protocol == "openai_chat":
        return usage["prompt_tokens"], usage["completion_tokens"], usage.get("cached_tokens", 0), 0
    if fixture.protocol == "openai_responses":
        return usage["input_tokens"], usage["output_tokens"], usage.get("cached_tokens", 0), 0
    read, write = usage.get("cache_read_input_tokens", 0), usage.get("cache_creation_input_tokens", 0)
    return usage["input_tokens"] + read + write, usage["output_tokens"], read, write


def _usage_got(usage: TokenUsage) -> tuple[int, int, int, int]:
    return usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens


def _stop_expected(fixture: Fixture) -> str:
    expect = fixture.expect
    if expect.get("refusal") or expect.get("stop_reason") == "refusal":
        return "refusal"
    if _tool_calls_expected(fixture):
        return "tool_use"
    return "end_turn"


def _is_edge_case(fixture: Fixture) -> bool:
    """A local fixture whose `expect.bearagent` says what the adapter must produce (not a plain wire scenario)."""
    return "bearagent" in fixture.expect


LOCAL_WIRE = sorted(k for k, f in ALL_FIXTURES.items() if k[0] == "local" and not _is_edge_case(f))
LOCAL_EDGE = sorted(k for k, f in ALL_FIXTURES.items() if k[0] == "local" and _is_edge_case(f))
SHARED = sorted(k for k in ALL_FIXTURES if k[0] == "shared")
SHARED_PARAMS = [pytest.param(k, id=k[1]) for k in SHARED] or [
    pytest.param(None, id="shared-set-absent", marks=pytest.mark.skip(reason=SHARED_FIXTURES_MISSING))
]


def test_the_local_set_covers_every_scenario_of_every_protocol() -> None:
    local = [ALL_FIXTURES[k] for k in LOCAL_WIRE + LOCAL_EDGE]
    for protocol, required in REQUIRED_LOCAL.items():
        have = {f.name.split("/", 1)[1] for f in local if f.protocol == protocol and not _is_edge_case(f)}
        assert set(required) <= have, f"{protocol}: missing {sorted(set(required) - have)}"
    for fixture in local:
        assert fixture.name.split("/", 1)[0] == fixture.protocol, fixture.name
        assert fixture.path.is_file(), fixture.path
    on_disk = {p.relative_to(LOCAL_FIXTURES).as_posix() for p in LOCAL_FIXTURES.glob("*/*") if p.is_file()}
    assert on_disk == {f.name for f in local}, "every fixture file is in manifest.json and every entry has its file"


def test_the_shared_set_is_complete_and_the_local_set_has_each_of_its_scenarios() -> None:
    if SHARED_DIR is None:
        pytest.skip(SHARED_FIXTURES_MISSING)
    # a guard against silently serving nothing: the shared set has 48 fixtures over three protocols
    assert len(SHARED) == 48
    assert {ALL_FIXTURES[k].protocol for k in SHARED} == set(PROTOCOLS)
    # the project owns its test data: each shared scenario has a local fixture of the same name
    local_names = {k[1] for k in LOCAL_WIRE}
    assert [k[1] for k in SHARED if k[1] not in local_names] == []


def _check_wire_fixture(replay: ReplayServer, fixture: Fixture) -> None:
    outcome = _run(replay, fixture)
    file_name = fixture.name.rsplit("/", 1)[-1]
    expect = fixture.expect
    category = ERROR_CATEGORY.get(file_name)
    request_id = _expected_request_id(fixture)
    if category is not None:
        error = outcome.stream_error
        assert error.info.category == category, error.info
        assert outcome.completed is None
        assert error.info.retryable is cast(bool, expect.get("retryable", category in RETRYABLE))
        if "retry_after_s" in expect:
            assert error.info.retry_after_s == expect["retry_after_s"]
        if "code" in expect and expect["code"] is not None:
            assert error.info.details["provider_code"] == expect["code"]
        if "error_type" in expect:
            assert error.info.details["provider_error_type"] == expect["error_type"]
        if "error_message_contains" in expect:
            assert cast(str, expect["error_message_contains"]) in error.info.message
        partial = expect.get("text_before_error", expect.get("text"))
        if partial is not None:
            assert error.partial_text == partial
            assert outcome.text == partial  # the deltas went out before the failure
        if request_id is not None and category not in ("network",):
            assert (
                error.info.details.get("provider_request_id") == request_id or error.provider_request_id == request_id
            )
        if "usage" in expect and expect["usage"] is not None:
            assert _usage_got(error.usage) == _usage_expected(fixture)
        return
    assert outcome.error is None, outcome.error
    assert outcome.text == (expect.get("text") or "")
    calls = outcome.tool_calls
    expected_calls = _tool_calls_expected(fixture)
    assert [(c.provider_call_id, c.name, dict(c.arguments)) for c in calls] == expected_calls
    assert all(c.invalid_arguments is None for c in calls)
    assert len({c.tool_call_id for c in calls}) == len(calls)
    done = outcome.completed
    assert done is not None and outcome.events[-1] is done
    assert done.stop_reason == _stop_expected(fixture)
    assert _usage_got(done.usage) == _usage_expected(fixture)
    assert done.provider_request_id == request_id
    assert done.model is not None and done.model.startswith(("gpt-", "claude-"))
    if done.stop_reason == "refusal":
        assert done.refusal
        if "refusal" in expect:
            assert done.refusal == expect["refusal"]


@pytest.mark.network_local
@pytest.mark.parametrize("key", LOCAL_WIRE, ids=[k[1] for k in LOCAL_WIRE])
def test_wire_fixture(replay: ReplayServer, key: tuple[str, str]) -> None:
    _check_wire_fixture(replay, ALL_FIXTURES[key])


@pytest.mark.network_local
@pytest.mark.parametrize("key", SHARED_PARAMS)
def test_shared_fixture(replay: ReplayServer, key: tuple[str, str]) -> None:
    _check_wire_fixture(replay, ALL_FIXTURES[key])


@pytest.mark.network_local
@pytest.mark.parametrize("key", LOCAL_EDGE, ids=[k[1] for k in LOCAL_EDGE])
def test_local_edge_case_fixture(replay: ReplayServer, key: tuple[str, str]) -> None:
    fixture = ALL_FIXTURES[key]
    expect = cast(dict[str, object], fixture.expect["bearagent"])
    outcome = _run(replay, fixture)
    if "error" in expect:
        want = cast(dict[str, object], expect["error"])
        error = outcome.stream_error
        assert error.info.category == want["category"]
        assert error.info.retryable is want["retryable"]
        assert error.partial_text == want["partial_text"] == outcome.text
        return
    assert outcome.error is None, outcome.error
    assert outcome.text == expect["text"]
    want_calls = cast(list[dict[str, object]], expect["tool_calls"])
    assert len(outcome.tool_calls) == len(want_calls)
    for call, want_call in zip(outcome.tool_calls, want_calls, strict=True):
        assert call.name == want_call["name"]
        assert call.provider_call_id == want_call["provider_call_id"]
        if want_call.get("invalid"):
            assert dict(call.arguments) == {}
            assert call.invalid_arguments is not None
            assert "tool arguments" in call.invalid_arguments
        else:
            assert dict(call.arguments) == want_call["arguments"]
            assert call.invalid_arguments is None
    done = outcome.completed
    assert done is not None
    assert done.stop_reason == expect["stop_reason"]
    usage = cast(dict[str, int], expect["usage"])
    got = done.usage.model_dump()
    assert {k: got[k] for k in usage} == usage


@pytest.mark.network_local
def test_a_refusal_from_anthropic_is_a_final_answer_with_the_servers_explanation(replay: ReplayServer) -> None:
    fixture = ALL_FIXTURES[("local", "anthropic_messages/stream_refusal.sse")]
    outcome = _run(replay, fixture)
    done = outcome.completed
    assert done is not None and done.stop_reason == "refusal"
    assert outcome.text == "Here is a general overview of"  # the partial text still went out
    assert done.refusal == "This request was declined under the usage policy."


@pytest.mark.network_local
def test_history_request_still_parses_fixture(replay: ReplayServer) -> None:
    """A request with a full tool-call history is accepted by every adapter (the body is checked elsewhere)."""
    fixture = ALL_FIXTURES[("local", "openai_chat/stream_text.sse")]
    messages = (Message.system("Be brief."), Message.user("Hi"), Message.assistant("Hello!"), Message.user("Again"))
    outcome = collect(make_provider("openai_chat", replay.base_url(fixture)), simple_request(messages))
    assert outcome.error is None


@pytest.mark.network_local
def test_a_refusal_explanation_longer_than_the_limit_is_cut_not_an_error(replay: ReplayServer) -> None:
    fixture = ALL_FIXTURES[("local", "anthropic_messages/stream_refusal_long.sse")]
    outcome = _run(replay, fixture)
    done = outcome.completed
    assert outcome.error is None
    assert done is not None and done.stop_reason == "refusal"
    assert done.refusal is not None
    assert len(done.refusal) == 16_384
    assert done.refusal.startswith("This request was refused due to policy.")
    assert done.refusal.endswith("…")


# (input, output, cache read, cache write) the stream had reported when it failed: Anthropic counts the input in
# `message_start`, so a stream that breaks after it still says what the attempt cost; Chat Completions reports
# usage only in its last chunk, so a stream cut before it has none to give.
USAGE_BEFORE_FAILURE = {
    "anthropic_messages/stream_error_overloaded.sse": (24, 1, 0, 0),
    "anthropic_messages/stream_truncated.sse": (24, 1, 0, 0),
    "anthropic_messages/stream_disconnect.sse": (117, 1, 100, 5),
    "openai_chat/stream_truncated.sse": (0, 0, 0, 0),
}


@pytest.mark.network_local
@pytest.mark.parametrize("name", sorted(USAGE_BEFORE_FAILURE))
def test_a_failed_stream_carries_the_usage_it_reported_before_failing(replay: ReplayServer, name: str) -> None:
    outcome = _run(replay, ALL_FIXTURES[("local", name)])
    error = outcome.stream_error
    assert error.partial_text  # text had streamed: a retry restarts the answer, and the log records this usage
    assert _usage_got(error.usage) == USAGE_BEFORE_FAILURE[name]


def _expected_category(key: tuple[str, str]) -> object:
    """The category a local fixture must fail with: by file name, or its edge case's `expect.bearagent.error`."""
    edge = cast(dict[str, dict[str, object]], ALL_FIXTURES[key].expect.get("bearagent") or {})
    return ERROR_CATEGORY.get(key[1].rsplit("/", 1)[-1]) or (edge.get("error") or {}).get("category")


OVERFLOW_FIXTURES = sorted(k for k in LOCAL_WIRE + LOCAL_EDGE if _expected_category(k) == "context_overflow")


@pytest.mark.network_local
@pytest.mark.parametrize("key", OVERFLOW_FIXTURES, ids=[k[1] for k in OVERFLOW_FIXTURES])
def test_every_context_overflow_says_the_conversation_is_longer_than_the_window(
    replay: ReplayServer, key: tuple[str, str]
) -> None:
    """OpenAI, Anthropic, llama-server, llama-cpp-python, vLLM, Ollama, LM Studio: each server's overflow (refused
    request, or a window that filled while answering) is `context_overflow`, with the hint about the conversation's
    length, never the hint of a rejected request; `is_context_overflow` (what the loop asks) agrees."""
    error = _run(replay, ALL_FIXTURES[key]).stream_error
    assert error.info.category == "context_overflow" and not error.info.retryable
    assert "longer than the context window" in error.info.message and "start a new session" in error.info.message
    assert "Check the model entry's options" not in error.info.message
    assert is_context_overflow(error.info)
