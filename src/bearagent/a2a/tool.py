"""`a2a__<name>{prompt, context_id?, task_id?}`: delegate to a remote A2A agent (`specs.py`) through the official
`a2a-sdk` client, and answer with what the remote task produced.

The agent card is read from the configured URL; every interface it names must be on that URL's origin (a card cannot
send the prompt, or the configured headers, anywhere else). The message is sent streaming when the card says it
streams (its task's artifacts and status messages are gathered as they arrive), else blocking. The answer is bounded:
at most `max_response_chars` characters of text kept, at most `MAX_BYTES` read from the remote per call, the whole
call within `timeout_s`. When the call is cancelled (the run is cancelled, or the tool's timeout hits) the remote
task is cancelled too (`CancelTask`, within `CANCEL_WAIT_S`). The SDK is imported when a call runs; this module (and
httpx) only when a workspace configures `a2a_agents:`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from bearagent.a2a.specs import A2AAgentSpec
from bearagent.config.env import expand_env
from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.errors import BearAgentError
from bearagent.domain.tools import MAX_TOOL_CONTENT_CHARS, ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error

CARD_PATH = "/.well-known/agent-card.json"
MAX_BYTES = 20 * 1024 * 1024
"""The most bytes one call reads from the remote (its card, the answer, every streamed event together)."""
CANCEL_WAIT_S = 5.0
CONNECT_TIMEOUT_S = 30.0
MAX_PROMPT_CHARS = 200_000
_ENDED = {
    "TASK_STATE_COMPLETED": "completed",
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_CANCELED": "canceled",
    "TASK_STATE_REJECTED": "rejected",
    "TASK_STATE_INPUT_REQUIRED": "input-required",
    "TASK_STATE_AUTH_REQUIRED": "auth-required",
}


def tool_spec(agent: A2AAgentSpec) -> ToolSpec:
    host = urlsplit(agent.url).netloc if not agent.url.startswith("${") else "a configured URL"
    about = agent.description or f"The remote A2A agent {agent.name!r} at {host}."
    return ToolSpec(
        name=agent.tool_name,
        description=(
            f"Delegate a task to the remote agent {agent.name!r} (A2A). {about}\n"
            "It works on its own and answers with its result. Write `prompt` as a complete, self-contained task. "
            "The answer ends with the remote task's id and context id: pass `context_id` to continue that "
            "conversation; when the remote agent asks for input, answer it with `task_id` and your reply as `prompt`."
        )[:16_000],
        input_schema=frozen_json(
            {
                "type": "object",
                "properties": {
                    "prompt": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_PROMPT_CHARS,
                        "description": "The task for the remote agent.",
                    },
                    "context_id": {
                        "type": "string",
                        "maxLength": 200,
                        "description": "Continue an earlier conversation with this agent (its context id).",
                    },
                    "task_id": {
                        "type": "string",
                        "maxLength": 200,
                        "description": "Answer a remote task that is waiting for input.",
                    },
                },
                "required": ["prompt"],
                "additionalProperties": False,
            }
        ),
        side_effect="execute",  # the remote agent acts on its own; our gate sees only the delegation
        version="1",
        timeout_ms=int(agent.timeout_s * 1000) + int(CANCEL_WAIT_S * 1000) + 5_000,
        max_output_chars=min(agent.max_response_chars + 2_000, MAX_TOOL_CONTENT_CHARS),
    )


@dataclass
class _Gathered:
    """What the remote task said so far: its ids, state, the text of its artifacts and its last status message."""

    limit: int
    task_id: str = ""
    context_id: str = ""
    state: str = ""
    artifacts: dict[str, str] = field(default_factory=lambda: {})
    status_text: str = ""
    message_text: str = ""
    cut: bool = False

    def _bounded(self, text: str, room: int) -> str:
        if len(text) > room:
            self.cut = True
            return text[: max(room, 0)]
        return text

    def _room(self, replacing: str = "") -> int:
        used = sum(len(t) for t in self.artifacts.values()) + len(self.message_text)
        return self.limit - used + len(self.artifacts.get(replacing, ""))

    def take(self, event: Any) -> None:
        kind = event.WhichOneof("payload")
        if kind == "task":
            task = event.task
            self.task_id, self.context_id = task.id or self.task_id, task.context_id or self.context_id
            self._status(task.status)
            for artifact in task.artifacts:
                key = artifact.artifact_id or artifact.name or str(len(self.artifacts))
                self.artifacts[key] = self._bounded(_parts_text(artifact.parts), self._room(key))
        elif kind == "status_update":
            update = event.status_update
            self.task_id, self.context_id = update.task_id or self.task_id, update.context_id or self.context_id
            self._status(update.status)
        elif kind == "artifact_update":
            update = event.artifact_update
            self.task_id, self.context_id = update.task_id or self.task_id, update.context_id or self.context_id
            artifact = update.artifact
            key = artifact.artifact_id or artifact.name or "answer"
            text = _parts_text(artifact.parts)
            if update.append and key in self.artifacts:
                self.artifacts[key] += self._bounded(text, self._room())
            else:
                self.artifacts[key] = self._bounded(text, self._room(key))
        elif kind == "message":
            message = event.message
            self.context_id = message.context_id or self.context_id
            self.task_id = message.task_id or self.task_id
            self.message_text += self._bounded(_parts_text(message.parts), self._room())
            self.state = self.state or "TASK_STATE_COMPLETED"

    def _status(self, status: Any) -> None:
        self.state = _state_name(status.state)
        if status.HasField("message"):
            self.status_text = _parts_text(status.message.parts)[:4_000]

    @property
    def text(self) -> str:
        return "\n\n".join(t for t in (*self.artifacts.values(), self.message_text) if t)


def _state_name(state: int) -> str:
    from a2a.types.a2a_pb2 import TaskState

    return TaskState.Name(state)


def _parts_text(parts: Any) -> str:
    texts: list[str] = []
    for part in parts:
        if part.HasField("text"):
            texts.append(part.text)
        else:
            texts.append("[a part that is not text was left out]")
    return "\n".join(texts)


class RemoteAgentTool(NativeTool):
    """The tool of one `a2a_agents:` entry; `env` expands its `${VAR}`s at the call."""

    def __init__(
        self, agent: A2AAgentSpec, env: Mapping[str, str], transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        super().__init__(tool_spec(agent))
        self.agent = agent
        self._env = env
        self._transport = transport

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        if not str_arg(arguments, "prompt").strip():
            raise tool_error("validation", "empty_prompt", f"{self.spec.name}: `prompt` is empty; write the task.")
        return arguments

    def _target(self) -> tuple[str, str, dict[str, str]]:
        where = f"a2a_agents.{self.agent.name}"
        url = expand_env(self.agent.url, self._env, where=f"{where}.url").strip()
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise tool_error("configuration", "a2a_url", f"{where}.url is not an http(s) URL: {url[:200]!r}")
        if parts.username or parts.password:
            raise tool_error(
                "configuration", "a2a_url", f"{where}.url carries credentials; put them in `headers` instead"
            )
        headers = {k: expand_env(v, self._env, where=f"{where}.headers.{k}") for k, v in self.agent.headers.items()}
        if url.rstrip("/").endswith(CARD_PATH):
            base, card = url.rstrip("/")[: -len(CARD_PATH)], CARD_PATH
        else:
            base, card = url.rstrip("/"), CARD_PATH
        return base, card, headers

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        try:
            from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
            from a2a.helpers.proto_helpers import new_text_message
            from a2a.types.a2a_pb2 import Role, SendMessageRequest
        except ImportError:
            raise tool_error(
                "configuration",
                "a2a_sdk_missing",
                "Delegating to an A2A agent needs the a2a-sdk package: pip install 'bearagent[a2a]'.",
            ) from None

        base, card_path, headers = self._target()
        name = self.agent.name
        gathered = _Gathered(self.agent.max_response_chars)
        transport = _Bounded(self._transport or httpx.AsyncHTTPTransport(), MAX_BYTES)
        timeout = httpx.Timeout(CONNECT_TIMEOUT_S, read=self.agent.timeout_s)
        async with httpx.AsyncClient(
            headers=headers, timeout=timeout, transport=transport, trust_env=False, follow_redirects=False
        ) as http:
            client: Any = None
            try:
                async with asyncio.timeout(self.agent.timeout_s):
                    card = await A2ACardResolver(http, base, agent_card_path=card_path).get_agent_card()
                    _check_interfaces(name, base, card)
                    config = ClientConfig(httpx_client=http, streaming=bool(card.capabilities.streaming))
                    client = ClientFactory(config).create(card)
                    message = new_text_message(
                        str_arg(arguments, "prompt"),
                        context_id=str_arg(arguments, "context_id") or None,
                        task_id=str_arg(arguments, "task_id") or None,
                        role=Role.ROLE_USER,
                    )
                    async for event in client.send_message(SendMessageRequest(message=message)):
                        gathered.take(event)
                        if _ENDED.get(gathered.state) is not None:
                            break
            except asyncio.CancelledError:
                await _cancel_remote(client, gathered)
                raise
            except TimeoutError:
                await _cancel_remote(client, gathered)
                raise tool_error(
                    "timeout",
                    "a2a_timeout",
                    f"The remote agent {name!r} did not answer within {self.agent.timeout_s:g} s; its task was "
                    "cancelled. Raise `timeout_s` of the entry, or give it a smaller task.",
                ) from None
            except BearAgentError:
                raise
            except Exception as exc:  # the SDK's errors, httpx's, a card that does not parse
                await _cancel_remote(client, gathered)
                raise tool_error(
                    "network",
                    "a2a_call",
                    f"Delegating to the remote agent {name!r} failed: {type(exc).__name__}: {str(exc)[:500]}",
                ) from None
        return self._answer(context, gathered)

    def _answer(self, context: ToolContext, gathered: _Gathered) -> ToolResult:
        name = self.agent.name
        state = _ENDED.get(gathered.state, gathered.state.removeprefix("TASK_STATE_").lower() or "unknown")
        ids = f"task_id {gathered.task_id or '-'}, context_id {gathered.context_id or '-'}"
        data = {"agent": name, "task_id": gathered.task_id, "context_id": gathered.context_id, "state": state}
        text = gathered.text
        if gathered.cut:
            text += f"\n[the answer was cut at {self.agent.max_response_chars} characters]"
        if state in ("failed", "rejected", "canceled"):
            detail = gathered.status_text or text or "no reason given"
            raise tool_error(
                "tool", f"a2a_{state}", f"The remote agent {name!r}'s task {state}: {detail[:4_000]} ({ids})"
            )
        if state in ("input-required", "auth-required"):
            asked = gathered.status_text or "it did not say what"
            content = (
                (f"{text}\n\n" if text else "")
                + f"The remote agent {name!r} needs input ({state}): {asked}\nAnswer it by calling {self.spec.name} "
                + (f"with task_id {gathered.task_id} and your reply as prompt. ({ids})")
            )
            return self.ok(context, content, data, truncated=gathered.cut)
        if state != "completed":
            raise tool_error(
                "tool",
                "a2a_unfinished",
                f"The remote agent {name!r} stopped answering while its task was {state} ({ids}).",
            )
        content = (text or "(the remote agent answered with no text)") + f"\n\n[remote agent {name}: {ids}]"
        return self.ok(context, content, data, truncated=gathered.cut)


def _check_interfaces(name: str, base: str, card: Any) -> None:
    """Every interface the card names is on the configured URL's origin: a card is the remote's word, and the prompt
    and the configured headers go only where the user's config points."""
    origin = _origin(base)
    for interface in card.supported_interfaces:
        if _origin(interface.url) != origin:
            raise tool_error(
                "permission",
                "a2a_foreign_interface",
                f"The agent card of {name!r} names an endpoint on another origin ({interface.url[:200]!r}, not "
                f"{origin}); BearAgent sends the prompt only to the configured origin. Configure that URL instead.",
            )
    if not card.supported_interfaces:
        raise tool_error("tool", "a2a_card", f"The agent card of {name!r} names no interface to call.")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


async def _cancel_remote(client: Any, gathered: _Gathered) -> None:
    """Cancel the remote task (a cancelled or timed-out call), within `CANCEL_WAIT_S`; its failure is not ours."""
    if client is None or not gathered.task_id or _ENDED.get(gathered.state) is not None:
        return
    from a2a.types.a2a_pb2 import CancelTaskRequest

    async def cancel() -> None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(CANCEL_WAIT_S):
                await client.cancel_task(CancelTaskRequest(id=gathered.task_id))

    task = asyncio.ensure_future(cancel())
    with contextlib.suppress(BaseException):
        await asyncio.shield(task)
    if not task.done():  # cancelled again while waiting: let the cancel finish on its own, bounded by its timeout
        await asyncio.wait({task}, timeout=CANCEL_WAIT_S)


class _Bounded(httpx.AsyncBaseTransport):
    """An httpx transport that stops reading after `limit` bytes in all (every response of one call together)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._left = limit
        self._limit = limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_Capped(self, response.stream),
            extensions=response.extensions,
            request=request,
        )

    def spend(self, size: int) -> None:
        self._left -= size
        if self._left < 0:
            raise httpx.ReadError(f"the remote agent sent more than {self._limit} bytes; the call was stopped")

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Capped(httpx.AsyncByteStream):
    def __init__(self, owner: _Bounded, stream: Any) -> None:
        self._owner = owner
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            self._owner.spend(len(chunk))
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()
