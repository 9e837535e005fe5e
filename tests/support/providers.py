"""Helpers for provider tests: build adapters against the replay server and collect what they stream."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from bearagent.domain.errors import BearAgentError
from bearagent.domain.messages import Message
from bearagent.domain.models import ModelCompleted, ModelEvent, ModelRequest, ModelToolCall, TextDelta, ToolDescriptor
from bearagent.providers._base import ProviderSettings
from bearagent.providers.anthropic_messages import AnthropicMessagesProvider
from bearagent.providers.errors import ProviderStreamError
from bearagent.providers.openai_chat import OpenAIChatProvider
from bearagent.providers.openai_responses import OpenAIResponsesProvider

AnyProvider = OpenAIChatProvider | OpenAIResponsesProvider | AnthropicMessagesProvider
CANARY_KEY = "sk-canary-7f3e9a1b2c4d5e6f0a1b2c3d4e5f6a7b"


def make_provider(
    protocol: str,
    base_url: str,
    *,
    stream: bool = True,
    api_key: str = CANARY_KEY,
    timeout_s: float = 30.0,
    stream_idle_timeout_s: float | None = None,
    max_stream_s: float | None = None,
    headers: dict[str, str] | None = None,
) -> AnyProvider:
    settings = ProviderSettings(
        entry_ref="workspace/test",
        model="test-model",
        base_url=base_url,
        api_key=api_key,
        api_key_env="TEST_API_KEY",
        timeout_s=timeout_s,
        stream_idle_timeout_s=stream_idle_timeout_s,
        max_stream_s=max_stream_s,
        headers=headers or {},
        stream=stream,
        provider_label={"openai_chat": "OpenAI", "openai_responses": "OpenAI", "anthropic_messages": "Anthropic"}[
            protocol
        ],
    )
    if protocol == "openai_chat":
        return OpenAIChatProvider(settings)
    if protocol == "openai_responses":
        return OpenAIResponsesProvider(settings)
    return AnthropicMessagesProvider(settings)


@dataclass
class Outcome:
    events: list[ModelEvent] = field(default_factory=list[ModelEvent])
    error: BearAgentError | None = None

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))

    @property
    def tool_calls(self) -> list[ModelToolCall]:
        return [e for e in self.events if isinstance(e, ModelToolCall)]

    @property
    def completed(self) -> ModelCompleted | None:
        done = [e for e in self.events if isinstance(e, ModelCompleted)]
        return done[-1] if done else None

    @property
    def stream_error(self) -> ProviderStreamError:
        assert isinstance(self.error, ProviderStreamError), f"expected a ProviderStreamError, got {self.error!r}"
        return self.error


def simple_request(
    messages: Sequence[Message] | None = None,
    tools: Sequence[str] = (),
    *,
    timeout_ms: int = 30_000,
    max_output_tokens: int | None = None,
) -> ModelRequest:
    return ModelRequest(
        model="test-model",
        messages=tuple(messages or (Message.user("Give me a one-sentence fun fact about octopuses."),)),
        tools=tuple(
            ToolDescriptor(
                name=name,
                description=f"The {name} tool.",
                input_schema={"type": "object", "properties": {"location": {"type": "string"}}},
            )
            for name in tools
        ),
        timeout_ms=timeout_ms,
        max_output_tokens=max_output_tokens,
    )


async def collect_async(provider: AnyProvider, request: ModelRequest) -> Outcome:
    outcome = Outcome()
    try:
        async for event in provider.stream(request):
            outcome.events.append(event)
    except BearAgentError as exc:
        outcome.error = exc
    finally:
        await provider.aclose()
    return outcome


def collect(provider: AnyProvider, request: ModelRequest) -> Outcome:
    return asyncio.run(collect_async(provider, request))
