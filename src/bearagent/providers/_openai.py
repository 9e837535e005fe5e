"""What the two OpenAI adapters (Chat Completions, Responses) share: the client, its errors, the request options,
tool arguments on the wire and how an answer ends. The `openai` SDK is imported only when a client is made or an
error is read."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from bearagent.domain._base import thaw_json_mapping
from bearagent.domain.messages import ToolCallPart
from bearagent.domain.models import ModelEvent, ModelRequest, ModelToolCall, StopReason
from bearagent.providers._base import Accumulator, ProviderFailure, SdkProvider
from bearagent.providers._failures import failure_from_sdk
from bearagent.providers.model_listing import ListingWindow
from bearagent.providers.tool_names import ToolNameMap

if TYPE_CHECKING:
    from openai import AsyncOpenAI

"""`ModelCompleted.refusal`'s bound: a longer refusal is cut to it."""


def arguments_json(part: ToolCallPart) -> str:
    """A tool call's arguments as the JSON text both OpenAI APIs carry."""
    return json.dumps(thaw_json_mapping(part.arguments), ensure_ascii=False)


class OpenAIAccumulator(Accumulator):
    """Per-call state shared by the OpenAI protocols: refusal text comes in parts, beside the answer's text."""

    def __init__(self, provider: SdkProvider[Any], request: ModelRequest, names: ToolNameMap) -> None:
        super().__init__(provider, request, names)
        self.refusal_parts: list[str] = []

    def openai_completed(self, calls: list[ModelToolCall], refusal: str, *, ended: bool) -> list[ModelEvent]:
        """Tool calls first, then a refusal, then a normal end (`ended`: the API's own "done" status), else other."""
        stop: StopReason
        if calls:
            stop = "tool_use"
        elif refusal:
            stop = "refusal"
        elif ended:
            stop = "end_turn"
        else:
            stop = "other"
        return self.completed(calls, stop, refusal or None)


class OpenAIProvider(SdkProvider["AsyncOpenAI"]):
    """Base of the OpenAI adapters. `max_tokens_field` names the output-token limit in the request body."""

    request_id_header = "x-request-id"
    max_tokens_field: str
    _listing: ListingWindow | None = None

    async def discover_context_window(self) -> int | None:
        """The window the server's `/models` listing reports for this model, asked once per provider
        (`providers/model_listing.py`); None when it reports none."""
        if self._listing is None:
            settings = self.settings
            headers = {**settings.headers, "Authorization": f"Bearer {settings.api_key}"}
            self._listing = ListingWindow(settings.base_url, settings.model, headers)
        return await self._listing.get()

    def _new_client(self) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        return AsyncOpenAI(**self._client_options())

    def _options(self, request: ModelRequest, tools: list[dict[str, object]]) -> dict[str, Any]:
        """The optional request fields: tools, the output-token limit and temperature, each only when set."""
        options: dict[str, Any] = {}
        if tools:
            options["tools"] = tools
        limit = self.max_output_tokens(request)
        if limit is not None:
            options[self.max_tokens_field] = limit
        temperature = self.temperature(request)
        if temperature is not None:
            options["temperature"] = temperature
        return options

    def _failure(self, exc: BaseException) -> ProviderFailure | None:
        import openai

        return failure_from_sdk(
            exc,
            timeout_error=openai.APITimeoutError,
            connection_error=openai.APIConnectionError,
            status_error=openai.APIStatusError,
            api_error=openai.APIError,
            request_id_header=self.request_id_header,
        )
