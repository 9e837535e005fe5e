"""What the two OpenAI adapters (Chat Completions, Responses) share: the client, its errors, the request options,
tool arguments on the wire and how an answer ends. The `openai` SDK is imported only when a client is made or an
error is read."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypeVar

from bearagent.domain._base import thaw_json_mapping
from bearagent.domain.messages import ToolCallPart
from bearagent.domain.models import StopReason
from bearagent.providers._failures import failure_from_sdk
from bearagent.providers._sdk import SdkAdapter
from bearagent.providers.errors import ProviderFailure
from bearagent.providers.kit import ModelCall
from bearagent.providers.model_listing import ListingWindow

if TYPE_CHECKING:
    from openai import AsyncOpenAI

StateT = TypeVar("StateT")


def arguments_json(part: ToolCallPart) -> str:
    """A tool call's arguments as the JSON text both OpenAI APIs carry."""
    return json.dumps(thaw_json_mapping(part.arguments), ensure_ascii=False)


def openai_finish(call: ModelCall, *, has_calls: bool, refusal: str, ended: bool) -> None:
    """Tool calls first, then a refusal, then a normal end (`ended`: the API's own "done" status), else other."""
    stop: StopReason
    if has_calls:
        stop = "tool_use"
    elif refusal:
        stop = "refusal"
    elif ended:
        stop = "end_turn"
    else:
        stop = "other"
    call.finish(stop, refusal=refusal or None)


class OpenAIAdapter(SdkAdapter["AsyncOpenAI", StateT]):
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

    def make_client(self) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        return AsyncOpenAI(**self.client_options())

    def options(self, call: ModelCall, tools: list[dict[str, object]]) -> dict[str, Any]:
        """The optional request fields: tools, the output-token limit and temperature, each only when set."""
        options: dict[str, Any] = {}
        if tools:
            options["tools"] = tools
        limit = call.max_output_tokens
        if limit is not None:
            options[self.max_tokens_field] = limit
        temperature = call.temperature
        if temperature is not None:
            options["temperature"] = temperature
        return options

    def sdk_failure(self, exc: BaseException) -> ProviderFailure | None:
        import openai

        return failure_from_sdk(
            exc,
            timeout_error=openai.APITimeoutError,
            connection_error=openai.APIConnectionError,
            status_error=openai.APIStatusError,
            api_error=openai.APIError,
            request_id_header=self.request_id_header,
        )
