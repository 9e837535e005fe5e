"""Context accounting: how many tokens a model request will take, and how many the model's window holds.

The size of a request (system prompt, messages, tool specs) is estimated before it is sent: with tiktoken's
`o200k_base` encoding when tiktoken is installed (an optional dependency: `pip install tiktoken`), otherwise at
`CHARS_PER_TOKEN` characters per token. Either way the estimate is corrected by what the provider said: after a
call, the ratio of the input tokens it reported to the estimate of that same request scales the next estimate of
the run (`Calibration`), so a model with another tokenizer is measured by its own counts.

The window of a model entry (`context_window`) comes from, in order: the entry's `context_window:` key; what an
OpenAI-compatible server reports in its `/v1/models` listing (llama.cpp's `meta.n_ctx_train`, vLLM's
`max_model_len`, `context_length`, asked once per provider, on the first request that needs it); the defaults of
well-known model names (`default_context_window`). Unknown: no threshold, only an overflow error compacts.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from bearagent.domain._base import thaw_json_mapping
from bearagent.domain.messages import Message, TextPart, ToolCallPart
from bearagent.domain.models import ModelRequest, ToolDescriptor

CHARS_PER_TOKEN = 3.5
"""Characters per token without a tokenizer: below OpenAI's rule of thumb of 4 for English prose, because code,
JSON and paths run denser, and an estimate that errs high compacts a little early rather than overflowing."""
MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens each message costs beyond its content (role and framing), as the OpenAI chat format counts them."""
MIN_CORRECTION, MAX_CORRECTION = 0.25, 4.0
"""Bounds of the correction a provider's count may apply: a usage figure far outside them is not a tokenizer's
difference (a server that counts cached tokens apart, a scripted figure) and is not trusted that far."""

# (pattern over the lowercased model name without its `vendor/` prefix, window in tokens), first match wins
_WINDOWS: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(pattern), window)
    for pattern, window in (
        (r"^claude-(?:2\.0|instant)", 100_000),
        (r"^claude-", 200_000),
        (r"^gpt-4\.1", 1_047_576),
        (r"^gpt-4o|^chatgpt-4o|^gpt-4-turbo|^gpt-4-\d{4}-preview", 128_000),
        (r"^gpt-4-32k", 32_768),
        (r"^gpt-4(?:$|-)", 8_192),
        (r"^gpt-3\.5-turbo", 16_385),
        (r"^gpt-5", 400_000),
        (r"^gpt-oss", 131_072),
        (r"^o1-mini", 128_000),
        (r"^o[134](?:$|-)", 200_000),
        (r"^(?:meta-)?llama-?3\.[1-3]|^llama-?4", 131_072),
        (r"^(?:meta-)?llama-?3", 8_192),
        (r"^(?:meta-)?llama-?2", 4_096),
        (r"^qwen3", 32_768),
        (r"^qwen-?2\.5", 32_768),
        (r"^qwq", 131_072),
        (r"^mistral-large|^mistral-small|^mistral-nemo|^codestral", 131_072),
        (r"^mistral|^mixtral", 32_768),
        (r"^gemma-?3", 131_072),
        (r"^gemma", 8_192),
        (r"^deepseek", 65_536),
        (r"^phi-?4", 16_384),
    )
)


def default_context_window(model_name: str) -> int | None:
    """The context window of a well-known model name (`claude-sonnet-4-5`, `gpt-4o-mini`, `o3`,
    `meta-llama/Llama-3.1-8B-Instruct`, `qwen2.5-coder:7b`), or None for a name this table does not know."""
    name = model_name.strip().lower().rsplit("/", 1)[-1]
    for pattern, window in _WINDOWS:
        if pattern.search(name):
            return window
    return None


@runtime_checkable
class ContextWindowSource(Protocol):
    """A provider that can say its model's window (the OpenAI adapters ask the server's model listing)."""

    async def discover_context_window(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class ContextWindow:
    tokens: int | None
    source: str | None
    """`config` (the entry's `context_window`), `server` (the model listing), `default` (the name table)."""


async def resolve_context_window(configured: int | None, provider: object, model_name: str) -> ContextWindow:
    """The window of a plan's model: configured, else discovered from the provider (it asks once and remembers),
    else the default of its name."""
    if configured is not None:
        return ContextWindow(configured, "config")
    if isinstance(provider, ContextWindowSource):
        discovered = await provider.discover_context_window()
        if discovered is not None:
            return ContextWindow(discovered, "server")
    default = default_context_window(model_name)
    return ContextWindow(default, "default" if default is not None else None)


class _Counter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class _CharCounter:
    name = f"chars/{CHARS_PER_TOKEN:g}"

    def count(self, text: str) -> int:
        return int(len(text) / CHARS_PER_TOKEN + 0.999)


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


class _TiktokenCounter:
    def __init__(self, encoding: _Encoding, name: str) -> None:
        self._encoding = encoding
        self.name = f"tiktoken:{name}"

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))


_counter: _Counter | None = None


def _the_counter() -> _Counter:
    """tiktoken's o200k_base when it is installed and its encoding loads (it may need its file once), else the
    character estimate; chosen once per process."""
    global _counter
    if _counter is None:
        try:
            import tiktoken  # pyright: ignore[reportMissingImports]

            _counter = _TiktokenCounter(tiktoken.get_encoding("o200k_base"), "o200k_base")  # pyright: ignore
        except Exception:  # not installed, or its encoding file cannot be had: estimate by characters
            _counter = _CharCounter()
    return _counter


def _message_text(message: Message) -> str:
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ToolCallPart):
            pieces.append(part.name)
            pieces.append(json.dumps(thaw_json_mapping(part.arguments), ensure_ascii=False))
        else:
            pieces.append(part.name)
            pieces.append(part.content)
    return "\n".join(pieces)


def _tools_text(tools: Sequence[ToolDescriptor]) -> str:
    return "\n".join(
        f"{tool.name}\n{tool.description}\n{json.dumps(thaw_json_mapping(tool.input_schema), ensure_ascii=False)}"
        for tool in tools
    )


_COUNTED: dict[int, tuple[weakref.ReferenceType[Message], int]] = {}
"""Tokens of each message counted so far, while it lives: messages are frozen, and a run's every request holds its
whole history again, so counting each message once keeps an estimate's cost flat in the history's length."""


def _message_tokens(counter: _Counter, message: Message) -> int:
    key = id(message)
    hit = _COUNTED.get(key)
    if hit is not None and hit[0]() is message:
        return hit[1]
    tokens = counter.count(_message_text(message)) + MESSAGE_OVERHEAD_TOKENS

    def forget(ref: weakref.ReferenceType[Message]) -> None:
        entry = _COUNTED.get(key)
        if entry is not None and entry[0] is ref:
            del _COUNTED[key]

    _COUNTED[key] = (weakref.ref(message, forget), tokens)
    return tokens


def raw_estimate(messages: Sequence[Message], tools: Sequence[ToolDescriptor] = ()) -> int:
    """Tokens of these messages and tool specs by the counter alone (no correction)."""
    counter = _the_counter()
    total = sum(_message_tokens(counter, m) for m in messages)
    return total + (counter.count(_tools_text(tools)) if tools else 0)


def estimator_name() -> str:
    return _the_counter().name


@dataclass(slots=True)
class Calibration:
    """The correction of one run's estimates: the provider's input tokens over the raw estimate of the same
    request, from the run's last call that reported usage."""

    factor: float = 1.0
    corrected: bool = False
    last_raw: int = 0
    """The raw estimate of the last request sent (what the provider's figure is compared with)."""
    _history: list[Message] = field(default_factory=list[Message], init=False, repr=False, compare=False)
    _running: list[int] = field(default_factory=list[int], init=False, repr=False, compare=False)
    """The messages of the last request estimated, and the running sum of their tokens: a run's next request holds
    the same message objects again, so only the ones after the first that differs are counted."""
    _tools: Sequence[ToolDescriptor] | None = field(default=None, init=False, repr=False, compare=False)
    _tools_tokens: int = field(default=0, init=False, repr=False, compare=False)

    def estimate(self, request: ModelRequest) -> tuple[int, int]:
        """(raw, corrected) tokens of `request` (the same figure `raw_estimate` gives); remembers the raw figure for
        `observe`."""
        raw = self._messages_tokens(request.messages) + self._tools_estimate(request.tools)
        self.last_raw = raw
        return raw, self.apply(raw)

    def _messages_tokens(self, messages: Sequence[Message]) -> int:
        history, running = self._history, self._running
        same = 0
        for mine, theirs in zip(history, messages, strict=False):  # the shorter decides
            if mine is not theirs:
                break
            same += 1
        del history[same:], running[same:]
        counter = _the_counter()
        total = running[-1] if running else 0
        for message in messages[same:]:
            total += _message_tokens(counter, message)
            history.append(message)
            running.append(total)
        return total

    def _tools_estimate(self, tools: Sequence[ToolDescriptor]) -> int:
        if not tools:
            return 0
        if tools is not self._tools:
            self._tools, self._tools_tokens = tools, _the_counter().count(_tools_text(tools))
        return self._tools_tokens

    def apply(self, raw: int) -> int:
        return int(raw * self.factor + 0.5)

    def observe(self, input_tokens: int) -> None:
        """The provider reported `input_tokens` for the request estimated last."""
        if input_tokens > 0 and self.last_raw > 0:
            self.factor = min(MAX_CORRECTION, max(MIN_CORRECTION, input_tokens / self.last_raw))
            self.corrected = True

    @property
    def label(self) -> str:
        name = estimator_name()
        return f"{name} ×{self.factor:.2f}" if self.corrected else name


@dataclass(slots=True)
class ContextState:
    """What one run knows about its context: the calibration of its estimates, the window of its current plan's
    model (resolved again after an agent switch), and how many messages compactions removed (`shift`) before the
    first message of this run."""

    calibration: Calibration = field(default_factory=Calibration)
    window: ContextWindow | None = None
    window_for: object = None
    """The plan `window` was resolved for."""
    shift: int = 0
