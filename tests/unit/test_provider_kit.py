"""The public provider kit: a `StreamingProvider` subclass gets streaming, tool calls, deadlines and error
classification the way the built-in adapters do. The API here is an in-memory list of events, so each test says
exactly what the "server" sent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

import httpx
import pytest

from bearagent.domain.ids import DeterministicIdGenerator
from bearagent.plugin import (
    BearAgentError,
    Message,
    ModelCall,
    ModelCompleted,
    ModelEntry,
    ModelEvent,
    ModelRequest,
    ModelToolCall,
    ProviderFailure,
    ProviderSettings,
    ProviderStreamError,
    StopReason,
    StreamingProvider,
    TextDelta,
    TokenUsage,
    ToolCallId,
    ToolCallPart,
    ToolDescriptor,
    ToolResultPart,
    provider_settings,
)
from bearagent.providers.factory import KEYLESS_PLACEHOLDER

KEY = "sk-kit-secret-0123456789"


@dataclass
class Client:
    closed: int = 0

    async def aclose(self) -> None:
        self.closed += 1


@dataclass
class Script:
    """What the fake API sends: events (dicts), an exception to raise after them, a delay before each."""

    events: Sequence[object] = ()
    raises: BaseException | None = None
    delay_s: float = 0.0
    log: list[str] = field(default_factory=list[str])
    closed: bool = False


class FakeProvider(StreamingProvider[Client]):
    """Events: {"t": text} | {"call": name, "args": ..., "id": ...} | {"delta": index, ...} | {"usage": (in, out)} |
    {"done": stop_reason or None, "refusal": ...} | {"error": type}."""

    def __init__(self, script: Script, settings: ProviderSettings) -> None:
        super().__init__(settings, ids=DeterministicIdGenerator())
        self.script = script
        self.clients: list[Client] = []
        self.seen: list[ModelCall] = []

    def make_client(self) -> Client:
        client = Client()
        self.clients.append(client)
        return client

    async def open_stream(self, client: Client, call: ModelCall) -> AsyncIterator[object]:
        self.seen.append(call)
        try:
            for event in self.script.events:
                if self.script.delay_s:
                    await asyncio.sleep(self.script.delay_s)
                self.script.log.append("sent")
                yield event
            if self.script.raises is not None:
                raise self.script.raises
        finally:
            self.script.closed = True

    def feed(self, event: object, call: ModelCall) -> None:
        assert isinstance(event, dict)
        e: dict[str, object] = event  # pyright: ignore[reportUnknownVariableType]
        if "t" in e:
            call.text(str(e["t"]))
        elif "call" in e:
            args = e.get("args")
            call.tool_call(str(e["call"]), args if isinstance(args, str) or args is None else {"x": 1}, call_id="c1")
        elif "delta" in e:
            index = e["delta"]
            assert isinstance(index, int)
            call.tool_call_delta(
                index,
                name=str(e["name"]) if "name" in e else None,
                arguments=str(e["args"]) if "args" in e else None,
                call_id=str(e["id"]) if "id" in e else None,
            )
        elif "usage" in e:
            used = e["usage"]
            assert isinstance(used, tuple)
            call.usage = TokenUsage(input_tokens=int(used[0]), output_tokens=int(used[1]))  # pyright: ignore[reportUnknownArgumentType]
        elif "done" in e:
            stop = e["done"]
            refusal = e.get("refusal")
            call.finish(cast(StopReason | None, stop), refusal=str(refusal) if refusal else None)
        elif "error" in e:
            raise call.error(ProviderFailure(kind="stream", message=f"boom {KEY}", error_type=str(e["error"])))
        self.script.log.append("fed")


def settings(*, stream: bool = True, timeout_s: float = 30.0) -> ProviderSettings:
    return ProviderSettings(
        entry_ref="workspace/fake",
        model="fake-1",
        base_url="https://fake.example",
        api_key=KEY,
        api_key_env="FAKE_API_KEY",
        timeout_s=timeout_s,
        max_output_tokens=321,
        stream=stream,
        provider_label="Fake",
    )


def request(*, tools: Sequence[str] = (), timeout_ms: int = 30_000) -> ModelRequest:
    return ModelRequest(
        model="fake-1",
        messages=(Message.user("hi"),),
        tools=tuple(ToolDescriptor(name=n, description=n, input_schema={"type": "object"}) for n in tools),
        timeout_ms=timeout_ms,
    )


@dataclass
class Seen:
    events: list[ModelEvent] = field(default_factory=list[ModelEvent])
    error: BearAgentError | None = None

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))


def run(provider: FakeProvider, req: ModelRequest | None = None) -> Seen:
    async def go() -> Seen:
        seen = Seen()
        try:
            async for event in provider.stream(req or request()):
                provider.script.log.append("yielded")
                seen.events.append(event)
        except BearAgentError as exc:
            seen.error = exc
        return seen

    return asyncio.run(go())


def test_text_streams_as_it_arrives_and_the_turn_completes() -> None:
    script = Script([{"t": "Hel"}, {"t": "lo"}, {"usage": (7, 2)}, {"done": None}])
    seen = run(FakeProvider(script, settings()))
    assert seen.error is None and seen.text == "Hello"
    assert script.log[:4] == ["sent", "fed", "yielded", "sent"]  # each delta goes out before the next event
    completed = seen.events[-1]
    assert isinstance(completed, ModelCompleted)
    assert (
        completed.stop_reason == "end_turn" and completed.usage.input_tokens == 7 and completed.usage.output_tokens == 2
    )
    assert script.closed


def test_streamed_tool_call_fragments_become_calls_with_internal_names() -> None:
    script = Script(
        [
            {"delta": 1, "name": "Read", "id": "p2"},
            {"delta": 0, "name": "mcp_time_now", "id": "p1", "args": '{"tz": '},
            {"delta": 0, "args": '"UTC"}'},
            {"delta": 1, "args": '{"file_path": "a.md"}'},
            {"done": None},
        ]
    )
    provider = FakeProvider(script, settings())
    seen = run(provider, request(tools=["mcp.time/now", "Read"]))
    assert provider.seen[0].wire_name("mcp.time/now") == "mcp_time_now"
    calls = [e for e in seen.events if isinstance(e, ModelToolCall)]
    assert [(c.name, c.provider_call_id, dict(c.arguments)) for c in calls] == [
        ("mcp.time/now", "p1", {"tz": "UTC"}),
        ("Read", "p2", {"file_path": "a.md"}),
    ]
    assert str(calls[0].tool_call_id) != str(calls[1].tool_call_id)
    completed = seen.events[-1]
    assert isinstance(completed, ModelCompleted) and completed.stop_reason == "tool_use"


def test_arguments_that_are_not_a_json_object_become_a_readable_invalid_call() -> None:
    seen = run(FakeProvider(Script([{"call": "Read", "args": "[1, 2"}, {"done": None}]), settings()))
    call = next(e for e in seen.events if isinstance(e, ModelToolCall))
    assert dict(call.arguments) == {} and call.invalid_arguments and "not valid JSON" in call.invalid_arguments


def test_a_stream_without_its_end_event_is_a_retryable_truncated_stream() -> None:
    seen = run(FakeProvider(Script([{"t": "half an ans"}]), settings()))
    assert isinstance(seen.error, ProviderStreamError)
    assert seen.error.info.code == "truncated_stream.no_terminal_event" and seen.error.info.retryable
    assert seen.error.partial_text == "half an ans" and seen.text == "half an ans"


def test_the_output_token_limit_fails_the_call_and_keeps_the_text() -> None:
    seen = run(FakeProvider(Script([{"t": "long answer"}, {"done": "max_output_tokens"}]), settings(stream=False)))
    assert isinstance(seen.error, ProviderStreamError) and seen.error.info.category == "max_output_tokens"
    assert "max_output_tokens=321" in seen.error.info.message and seen.error.partial_text == "long answer"
    assert seen.text == "long answer"  # emitted before the failure even when not streaming


def test_a_length_stop_short_of_the_limit_sent_is_a_context_overflow() -> None:
    """The API said "max tokens" after 5 of the 321 tokens allowed: the context window filled, not the limit."""
    script = Script([{"t": "half"}, {"usage": (4000, 5)}, {"done": "max_output_tokens"}])
    seen = run(FakeProvider(script, settings()))
    assert isinstance(seen.error, ProviderStreamError)
    assert seen.error.info.code == "context_overflow.during_output" and not seen.error.info.retryable
    assert seen.error.info.details["output_used"] == 5 and seen.error.info.details["output_limit"] == 321
    assert seen.error.partial_text == "half" and seen.error.usage.output_tokens == 5


def test_a_refusal_is_a_final_answer() -> None:
    seen = run(FakeProvider(Script([{"done": None, "refusal": "No."}]), settings()))
    completed = seen.events[-1]
    assert isinstance(completed, ModelCompleted) and completed.stop_reason == "refusal" and completed.refusal == "No."


def test_an_error_event_is_classified_and_secrets_are_redacted() -> None:
    seen = run(FakeProvider(Script([{"t": "a"}, {"error": "overloaded_error"}]), settings()))
    assert isinstance(seen.error, ProviderStreamError)
    assert seen.error.info.code == "overloaded.busy" and seen.error.info.retryable
    assert KEY not in seen.error.info.message and "Fake (model entry workspace/fake" in seen.error.info.message
    assert seen.error.partial_text == "a"


def test_httpx_status_errors_need_no_failure_override() -> None:
    response = httpx.Response(
        429,
        headers={"retry-after": "3", "x-request-id": "req-9"},
        json={"error": {"type": "rate_limit_error", "message": "slow down"}},
        request=httpx.Request("POST", "https://fake.example/v1"),
    )
    error = httpx.HTTPStatusError("429", request=response.request, response=response)
    seen = run(FakeProvider(Script([], raises=error), settings()))
    assert seen.error is not None
    info = seen.error.info
    assert info.code == "rate_limit.exceeded" and info.retryable and info.retry_after_s == 3
    assert "slow down" in info.message and info.details["provider_request_id"] == "req-9"
    unauthorized = httpx.Response(401, text="bad key", request=response.request)
    bad = httpx.HTTPStatusError("401", request=response.request, response=unauthorized)
    seen = run(FakeProvider(Script([], raises=bad), settings()))
    assert seen.error is not None and seen.error.info.code == "authentication.invalid_key"
    assert "FAKE_API_KEY" in seen.error.info.message


def test_connection_errors_and_timeouts_of_httpx_are_understood() -> None:
    seen = run(FakeProvider(Script([], raises=httpx.ConnectError("refused")), settings()))
    assert seen.error is not None and seen.error.info.code == "network.connection" and seen.error.info.retryable
    seen = run(FakeProvider(Script([], raises=httpx.ReadTimeout("slow")), settings()))
    # the client's own timeout is named after the limit in force: nothing had arrived yet
    assert seen.error is not None and seen.error.info.code == "timeout.first_byte"
    assert "`timeout_s`" in seen.error.info.message


def test_the_request_deadline_is_enforced_by_the_kit() -> None:
    script = Script([{"t": "a"}, {"t": "b"}, {"done": None}], delay_s=0.5)
    seen = run(FakeProvider(script, settings()), request(timeout_ms=200))
    assert seen.error is not None and seen.error.info.code == "timeout.deadline"
    assert "0.2s" in seen.error.info.message and script.closed


def test_the_entry_time_limits_are_enforced_by_the_kit() -> None:
    """`timeout_s` bounds the wait for the first event, `stream_idle_timeout_s` each wait after it, `max_stream_s`
    the whole call; a slow but steady stream outlives `timeout_s`."""
    steady = Script([{"t": "a"}, {"t": "b"}, {"t": "c"}, {"done": None}], delay_s=0.15)
    seen = run(FakeProvider(steady, settings(timeout_s=0.25)))
    assert seen.error is None and seen.text == "abc"
    late = run(FakeProvider(Script([{"t": "a"}, {"done": None}], delay_s=0.3), settings(timeout_s=0.1)))
    assert late.error is not None and late.error.info.code == "timeout.first_byte"
    stalls = Script([{"t": "a"}, {"t": "b"}, {"done": None}], delay_s=0.3)
    idle = run(FakeProvider(stalls, replace(settings(timeout_s=1.0), stream_idle_timeout_s=0.1)))
    assert isinstance(idle.error, ProviderStreamError) and idle.error.info.code == "timeout.stream_idle"
    assert idle.error.partial_text == "a"
    capped = run(FakeProvider(steady, replace(settings(timeout_s=1.0), max_stream_s=0.2)))
    assert capped.error is not None and capped.error.info.code == "timeout.max_stream"
    assert "`max_stream_s`" in capped.error.info.message


def test_an_unexpected_exception_is_an_internal_error_naming_the_plugin_as_the_place_to_report() -> None:
    seen = run(FakeProvider(Script([], raises=KeyError(f"token {KEY}")), settings()))
    assert seen.error is not None and seen.error.info.code == "internal.adapter" and not seen.error.info.retryable
    assert "KeyError" in seen.error.info.message and "plugin" in seen.error.info.message
    assert KEY not in seen.error.info.message


def test_not_streaming_delivers_the_whole_text_at_the_end() -> None:
    script = Script([{"t": "one "}, {"t": "two"}, {"done": None}])
    seen = run(FakeProvider(script, settings(stream=False)))
    assert seen.text == "one two"
    assert "yielded" not in script.log[: script.log.index("fed", 4) + 1]


def test_a_failed_answer_not_streamed_still_delivers_its_text_before_the_failure() -> None:
    """`stream: false`: the text read before an error event goes out before the failure, as for a cut answer."""
    seen = run(FakeProvider(Script([{"t": "partial"}, {"error": "overloaded_error"}]), settings(stream=False)))
    assert isinstance(seen.error, ProviderStreamError) and seen.error.info.code == "overloaded.busy"
    assert seen.text == "partial" and seen.error.partial_text == "partial"


class SlowClientProvider(FakeProvider):
    """Making the client blocks (as importing an SDK does on first use), or fails."""

    def __init__(self, script: Script, settings: ProviderSettings, *, block_s: float, fails: bool = False) -> None:
        super().__init__(script, settings)
        self.block_s = block_s
        self.fails = fails

    def make_client(self) -> Client:
        time.sleep(self.block_s)
        if self.fails:
            raise RuntimeError(f"no client for {KEY}")
        return super().make_client()


def test_making_the_client_does_not_count_against_timeout_s() -> None:
    script = Script([{"t": "a"}, {"done": None}], delay_s=0.02)  # the API answers well within timeout_s
    slow = SlowClientProvider(script, settings(timeout_s=0.1), block_s=0.3)
    seen = run(slow)
    assert seen.error is None and seen.text == "a"


def test_a_client_that_cannot_be_made_is_an_internal_error_without_the_key() -> None:
    broken = SlowClientProvider(Script([{"done": None}]), settings(), block_s=0.0, fails=True)
    seen = run(broken)
    assert isinstance(seen.error, ProviderStreamError) and seen.error.info.code == "internal.adapter"
    assert "RuntimeError" in seen.error.info.message and KEY not in seen.error.info.message
    assert broken.script.log == []


def test_closing_the_consumer_closes_the_api_stream_and_aclose_closes_the_client() -> None:
    script = Script([{"t": "a"}, {"t": "b"}, {"done": None}])
    provider = FakeProvider(script, settings())

    async def go() -> None:
        stream = cast(AsyncGenerator[ModelEvent, None], provider.stream(request()))
        first = await anext(stream)
        assert isinstance(first, TextDelta)
        await stream.aclose()
        assert script.closed
        await provider.aclose()

    asyncio.run(go())
    assert [c.closed for c in provider.clients] == [1]


def test_wire_call_ids_of_the_history_pair_calls_with_results() -> None:
    ids = DeterministicIdGenerator()
    ours = ids.new(ToolCallId)
    call_part = ToolCallPart(tool_call_id=ours, name="Read", arguments={})
    result_part = ToolResultPart(tool_call_id=ours, name="Read", content="x")
    theirs = ToolCallPart(tool_call_id=ids.new(ToolCallId), provider_call_id="call_9", name="Read", arguments={})
    req = ModelRequest(
        model="m",
        messages=(Message.user("hi"), Message.assistant(tool_calls=(call_part, theirs)), Message.tool(result_part)),
    )
    call = ModelCall(FakeProvider(Script(), settings()), req, 1.0)
    assert call.wire_call_id(call_part) == call.wire_call_id(result_part) == str(ours)
    assert call.wire_call_id(theirs) == "call_9"
    assert call.max_output_tokens == 321 and call.temperature is None


def entry(**fields: object) -> ModelEntry:
    data: dict[str, object] = {"name": "f", "provider": "fake", "model": "fake-1", "source": "config.yaml"}
    data.update(fields)
    return ModelEntry.model_validate(data)


def test_provider_settings_resolve_an_entry_like_the_built_ins() -> None:
    resolved = provider_settings(
        entry(api_key_env="FAKE_API_KEY", timeout_s=9, headers={"X-Team": "a"}),
        {"FAKE_API_KEY": "k-123"},
        label="Fake",
        default_base_url="https://fake.example/v1/",
    )
    assert resolved.base_url == "https://fake.example/v1" and resolved.api_key == "k-123"
    assert resolved.timeout_s == 9 and dict(resolved.headers) == {"X-Team": "a"} and resolved.provider_label == "Fake"
    local = provider_settings(entry(base_url="http://127.0.0.1:9/v1"), {}, label="Fake", default_key_env="FAKE_API_KEY")
    assert local.api_key == KEYLESS_PLACEHOLDER


@pytest.mark.parametrize(
    ("fields", "kwargs", "needle"),
    [
        ({}, {"default_base_url": "https://x", "default_key_env": "FAKE_API_KEY"}, "export FAKE_API_KEY"),
        ({"model": None}, {"default_base_url": "https://x"}, "`model:` is required for provider 'fake'"),
        ({}, {}, "`base_url:` is required for provider 'fake'"),
    ],
)
def test_provider_settings_errors_name_the_entry_and_the_fix(
    fields: dict[str, object], kwargs: dict[str, str], needle: str
) -> None:
    with pytest.raises(BearAgentError) as caught:
        provider_settings(entry(**fields), {}, label="Fake", **kwargs)
    assert needle in str(caught.value) and "model entry workspace/f (config.yaml)" in str(caught.value)
    assert caught.value.info.category == "configuration"
