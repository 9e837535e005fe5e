"""The scripted provider: replays a YAML script of model turns (tests, the quickstart, offline demos).

```yaml
turns:                         # one item per model call, consumed in order
  - text: "Reading the file."  # optional assistant text, streamed as several deltas
    tool_calls:                # optional; arguments are JSON objects; id is the provider call id (optional)
      - {name: Read, arguments: {file_path: docs/project.md}}
  - text: "Done."
    usage: {input_tokens: 180, output_tokens: 12}   # optional; default: deterministic from text lengths
  - error: {category: rate_limit, message: "slow down", retryable: true, retry_after_s: 0.01}
  - refusal: "I can't help with that."             # a refusal ending (stop_reason refusal)
    delay_ms: 50                                     # wait before answering
    delta_delay_ms: 20                               # wait before each streamed delta (a slow stream)
  - text: "Answered once released."
    wait_for_file: release     # wait (polling) until this file exists (relative to the script's folder) ...
    wait_timeout_ms: 60000     # ... at most this long (default 60000, at most 600000); then the call fails
```

One provider instance is one conversation: it keeps its position in the script, and every model call (including a
failed one and its retries) consumes the next turn. A request that carries the conversation's place
(`ModelRequest.conversation_calls`: the first call of a later run of a session, a resumed run or a `/compact`, counted
from the log) moves it to that turn, so a conversation continued by another process picks up where the log says. Asking for more turns than the script holds fails with an
error naming the script and its number of turns; the script never loops. A script that does not parse, or has a
wrong key or value, fails when it is loaded, naming the file, the line and the fix.

`wait_for_file` lets a test hold a turn until it says so (it creates the file), instead of a fixed `delay_ms` that a
loaded machine can outrun. The module is a little over 400 lines: parsing and replay of one format stay together.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import json
import math
import re
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import yaml

from bearagent.config.safe_yaml import yaml_bounds_problem
from bearagent.domain._base import JsonBoundsError, JsonValue, thaw_json_mapping, validate_json_object
from bearagent.domain.budgets import TokenUsage
from bearagent.domain.errors import ERROR_CATEGORIES, BearAgentError, ErrorCategory, ErrorInfo
from bearagent.domain.ids import IdGenerator, ToolCallId, Uuid4IdGenerator
from bearagent.domain.messages import TextPart, ToolCallPart
from bearagent.domain.models import (
    MAX_RECORDED_NAME_CHARS,
    MAX_REFUSAL_CHARS,
    ModelCompleted,
    ModelEvent,
    ModelRequest,
    ModelToolCall,
    StopReason,
    bounded_text,
    text_deltas,
)
from bearagent.providers.errors import ProviderStreamError

TURN_KEYS = (
    "text",
    "tool_calls",
    "usage",
    "error",
    "refusal",
    "delay_ms",
    "delta_delay_ms",
    "wait_for_file",
    "wait_timeout_ms",
    "model",
)
DEFAULT_WAIT_TIMEOUT_MS = 60_000
MAX_WAIT_TIMEOUT_MS = 600_000
WAIT_POLL_S = 0.02
KEPT_REQUESTS = 100
TOOL_CALL_KEYS = ("name", "arguments", "id")
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
ERROR_KEYS = ("category", "code", "message", "retryable", "retry_after_s")
NATURALLY_RETRYABLE = frozenset({"rate_limit", "overloaded", "server", "timeout", "network", "truncated_stream"})
_WORD_RE = re.compile(r"\s*\S+\s*|\s+")


class ScriptError(BearAgentError):
    """A script file that cannot be used (unreadable, not YAML, wrong shape)."""


@dataclass(frozen=True, slots=True)
class ScriptedToolCall:
    name: str
    arguments: Mapping[str, JsonValue]
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptedTurn:
    line: int
    text: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    usage: TokenUsage | None = None
    error: ErrorInfo | None = None
    refusal: str | None = None
    delay_ms: int = 0
    delta_delay_ms: int = 0
    wait_for_file: Path | None = None
    wait_timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS
    model: str | None = None


@dataclass(frozen=True, slots=True)
class Script:
    path: Path
    turns: tuple[ScriptedTurn, ...]


def _fail(path: Path, line: int | None, what: str, fix: str) -> ScriptError:
    where = f"{path}" + (f", line {line}" if line is not None else "")
    return ScriptError(
        ErrorInfo.of("configuration", "script_invalid", f"{where}: {what}. {fix}", file=str(path)[:1024], line=line)
    )


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _value(node: yaml.Node) -> object:
    loader = yaml.SafeLoader("")
    try:
        return cast(object, loader.construct_document(node))  # pyright: ignore[reportUnknownMemberType]
    finally:
        loader.dispose()  # pyright: ignore[reportUnknownMemberType]


def _mapping(path: Path, node: yaml.Node, where: str, allowed: tuple[str, ...]) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        raise _fail(
            path, _line(node), f"{where} must be a mapping", f"Write it as `key: value` lines ({', '.join(allowed)})."
        )
    out: dict[str, yaml.Node] = {}
    for key_node, value_node in cast(list[tuple[yaml.Node, yaml.Node]], node.value):
        key = _value(key_node)
        if not isinstance(key, str) or key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" Did you mean `{close[0]}`?" if close else ""
            raise _fail(
                path,
                _line(key_node),
                f"unknown key `{key}` in {where}",
                f"Allowed keys: {', '.join(allowed)}.{hint}",
            )
        out[key] = value_node
    return out


def _int(path: Path, node: yaml.Node, where: str) -> int:
    value = _value(node)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(path, _line(node), f"{where} must be a whole number >= 0, got {value!r}", "Fix the number.")
    return value


def _str(path: Path, node: yaml.Node, where: str) -> str:
    value = _value(node)
    if not isinstance(value, str):
        raise _fail(path, _line(node), f"{where} must be a string, got {type(value).__name__}", "Quote the text.")
    return value


def _tool_call(path: Path, node: yaml.Node, where: str) -> ScriptedToolCall:
    fields = _mapping(path, node, where, TOOL_CALL_KEYS)
    if "name" not in fields:
        raise _fail(path, _line(node), f"{where} has no `name`", "Give the tool's name, e.g. `name: Read`.")
    name = _str(path, fields["name"], f"{where}.name")
    if not name:
        raise _fail(path, _line(fields["name"]), f"{where}.name is empty", "Give the tool's name.")
    arguments: dict[str, JsonValue] = {}
    if "arguments" in fields:
        raw = _value(fields["arguments"])
        if raw is None:
            raw = cast(object, {})
        try:
            arguments = validate_json_object(raw, where=f"{where}.arguments")
        except JsonBoundsError as exc:
            raise _fail(
                path,
                _line(fields["arguments"]),
                str(exc),
                "Tool arguments must be a JSON object, e.g. `{path: a.txt}`.",
            ) from None
    call_id = _str(path, fields["id"], f"{where}.id") if "id" in fields else None
    return ScriptedToolCall(name=name, arguments=arguments, call_id=call_id)


def _error(path: Path, node: yaml.Node, where: str) -> ErrorInfo:
    fields = _mapping(path, node, where, ERROR_KEYS)
    if "category" not in fields or "message" not in fields:
        raise _fail(
            path, _line(node), f"{where} needs `category` and `message`", "e.g. `{category: server, message: boom}`."
        )
    category = _str(path, fields["category"], f"{where}.category")
    if category not in ERROR_CATEGORIES:
        close = difflib.get_close_matches(category, sorted(ERROR_CATEGORIES), n=1)
        hint = f" Did you mean `{close[0]}`?" if close else ""
        raise _fail(
            path,
            _line(fields["category"]),
            f"unknown error category `{category}`",
            f"Use one of: {', '.join(sorted(ERROR_CATEGORIES))}.{hint}",
        )
    message = _str(path, fields["message"], f"{where}.message") or "scripted failure"
    code = _str(path, fields["code"], f"{where}.code") if "code" in fields else f"{category}.scripted"
    if "." not in code:
        code = f"{category}.{code}"
    retryable = category in NATURALLY_RETRYABLE
    if "retryable" in fields:
        flag = _value(fields["retryable"])
        if not isinstance(flag, bool):
            raise _fail(path, _line(fields["retryable"]), f"{where}.retryable must be true or false", "Fix the value.")
        retryable = flag
    retry_after: float | None = None
    if "retry_after_s" in fields:
        raw = _value(fields["retry_after_s"])
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw < 0:
            raise _fail(path, _line(fields["retry_after_s"]), f"{where}.retry_after_s must be >= 0", "Fix the number.")
        retry_after = float(raw)
    try:
        return ErrorInfo(
            category=cast(ErrorCategory, category),
            code=code,
            message=message,
            retryable=retryable,
            retry_after_s=retry_after,
        )
    except ValueError as exc:
        raise _fail(path, _line(node), f"{where} is not a valid error: {exc}", "Fix the error entry.") from None


def _turn(path: Path, node: yaml.Node, index: int) -> ScriptedTurn:
    where = f"turns[{index}]"
    fields = _mapping(path, node, where, TURN_KEYS)
    text = _str(path, fields["text"], f"{where}.text") if "text" in fields else ""
    calls: list[ScriptedToolCall] = []
    if "tool_calls" in fields:
        calls_node = fields["tool_calls"]
        if not isinstance(calls_node, yaml.SequenceNode):
            raise _fail(
                path,
                _line(calls_node),
                f"{where}.tool_calls must be a list",
                "Write `- {name: ..., arguments: {...}}` items.",
            )
        for i, item in enumerate(cast(list[yaml.Node], calls_node.value)):
            calls.append(_tool_call(path, item, f"{where}.tool_calls[{i}]"))
    usage: TokenUsage | None = None
    if "usage" in fields:
        usage_fields = _mapping(path, fields["usage"], f"{where}.usage", USAGE_KEYS)
        usage = TokenUsage(**{k: _int(path, v, f"{where}.usage.{k}") for k, v in usage_fields.items()})
    error = _error(path, fields["error"], f"{where}.error") if "error" in fields else None
    refusal = _str(path, fields["refusal"], f"{where}.refusal") if "refusal" in fields else None
    delay = _int(path, fields["delay_ms"], f"{where}.delay_ms") if "delay_ms" in fields else 0
    delta_delay = _int(path, fields["delta_delay_ms"], f"{where}.delta_delay_ms") if "delta_delay_ms" in fields else 0
    wait_for: Path | None = None
    if "wait_for_file" in fields:
        name = _str(path, fields["wait_for_file"], f"{where}.wait_for_file")
        if not name:
            raise _fail(path, _line(fields["wait_for_file"]), f"{where}.wait_for_file is empty", "Name a file.")
        wait_for = path.parent / name  # an absolute name stays absolute
    wait_timeout = DEFAULT_WAIT_TIMEOUT_MS
    if "wait_timeout_ms" in fields:
        wait_timeout = _int(path, fields["wait_timeout_ms"], f"{where}.wait_timeout_ms")
        if wait_for is None or wait_timeout > MAX_WAIT_TIMEOUT_MS:
            raise _fail(
                path,
                _line(fields["wait_timeout_ms"]),
                f"{where}.wait_timeout_ms must come with `wait_for_file` and be at most {MAX_WAIT_TIMEOUT_MS}",
                "Add `wait_for_file:` to the turn, or lower the number.",
            )
    model = _str(path, fields["model"], f"{where}.model") if "model" in fields else None
    if not (text or calls or error or refusal is not None):
        raise _fail(
            path, _line(node), f"{where} is empty", "Give it `text`, `tool_calls`, `refusal` or `error` (or delete it)."
        )
    return ScriptedTurn(
        line=_line(node),
        text=text,
        tool_calls=tuple(calls),
        usage=usage,
        error=error,
        refusal=refusal,
        delay_ms=delay,
        delta_delay_ms=delta_delay,
        wait_for_file=wait_for,
        wait_timeout_ms=wait_timeout,
        model=model,
    )


def parse_script(text: str, path: Path) -> Script:
    """Parse script text (`path` is used in messages). Raises `ScriptError` naming the file and line."""
    bounds = yaml_bounds_problem(text)
    if bounds is not None:
        raise _fail(path, bounds[2], f"the script cannot be loaded: {bounds[1]}", "Shorten the script.")
    try:
        root = cast("yaml.Node | None", yaml.compose(text, Loader=yaml.SafeLoader))  # pyright: ignore[reportUnknownMemberType]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = int(mark.line) + 1 if mark is not None else None
        raise _fail(path, line, f"not valid YAML ({exc.problem or exc})", "Fix the YAML syntax there.") from None
    except yaml.YAMLError as exc:
        raise _fail(path, None, f"not valid YAML ({exc})", "Fix the YAML syntax.") from None
    if root is None:
        raise _fail(path, None, "the script is empty", "Add a `turns:` list (see docs/providers.md).")
    top = _mapping(path, root, "the script", ("turns",))
    if "turns" not in top:
        raise _fail(path, _line(root), "the script has no `turns:` list", "Add `turns:` with one item per model call.")
    turns_node = top["turns"]
    if not isinstance(turns_node, yaml.SequenceNode) or not turns_node.value:
        raise _fail(path, _line(turns_node), "`turns` must be a non-empty list", "Add `- text: ...` items.")
    turns = tuple(_turn(path, item, i) for i, item in enumerate(cast(list[yaml.Node], turns_node.value)))
    return Script(path=path, turns=turns)


def load_script(path: Path) -> Script:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _fail(
            path, None, "script file not found", "Check the model entry's `script:` path (relative to its config.yaml)."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(
            path, None, f"cannot read the script ({exc})", "Check the file's permissions and encoding."
        ) from None
    return _parsed(text, path)


@functools.lru_cache(maxsize=8)
def _parsed(text: str, path: Path) -> Script:
    """`parse_script`, kept for the last texts read: a server builds a provider for every session, and parsing the
    YAML again for each cost ~15 ms (a `Script` is immutable; an edited file is a new text, so it is parsed again;
    a script that fails is not kept)."""
    return parse_script(text, path)


def _tokens(chars: int) -> int:
    return max(1, math.ceil(chars / 4))


def default_usage(request: ModelRequest, turn: ScriptedTurn) -> TokenUsage:
    """Deterministic stand-in usage: one token per 4 characters of input / output (at least 1 each)."""
    chars = 0
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                chars += len(part.text)
            elif isinstance(part, ToolCallPart):
                chars += len(part.name) + len(json.dumps(thaw_json_mapping(part.arguments)))
            else:
                chars += len(part.content)
    out = len(turn.text) + len(turn.refusal or "")
    for call in turn.tool_calls:
        out += len(call.name) + len(json.dumps(thaw_json_mapping(call.arguments)))
    return TokenUsage(input_tokens=_tokens(chars), output_tokens=_tokens(out))


def split_deltas(text: str) -> list[str]:
    """Word-sized pieces that join back to `text` exactly."""
    return _WORD_RE.findall(text) or ([text] if text else [])


class ScriptedProvider:
    """Replays a `Script`. One instance is one conversation: it remembers how many turns it has used."""

    def __init__(self, script: Script, *, entry_ref: str = "scripted", ids: IdGenerator | None = None) -> None:
        self.script = script
        self.entry_ref = entry_ref
        self.ids: IdGenerator = ids or Uuid4IdGenerator()
        self._position = 0
        self.requests: deque[ModelRequest] = deque(maxlen=KEPT_REQUESTS)
        """The last requests it was sent (what a test or a demo checks the model was shown)."""

    @classmethod
    def from_file(cls, path: Path, *, entry_ref: str = "scripted", ids: IdGenerator | None = None) -> ScriptedProvider:
        return cls(load_script(path), entry_ref=entry_ref, ids=ids)

    @property
    def turns_used(self) -> int:
        return self._position

    @property
    def turns_left(self) -> int:
        return len(self.script.turns) - self._position

    def _next_turn(self) -> tuple[int, ScriptedTurn]:
        index = self._position
        total = len(self.script.turns)
        if index >= total:
            raise ProviderStreamError(
                ErrorInfo.of(
                    "configuration",
                    "script_exhausted",
                    f"The scripted model {self.entry_ref} ran out of turns: {self.script.path} holds {total} "
                    f"turn{'s' if total != 1 else ''} and this is model call {index + 1}. Each model call (retries "
                    "included) consumes one turn: add turns to the script, or end the last turn without tool calls "
                    "so the run finishes.",
                    file=str(self.script.path)[:1024],
                    turns=total,
                )
            )
        self._position += 1
        return index, self.script.turns[index]

    async def _wait_for_file(self, turn: ScriptedTurn) -> None:
        """Poll (cancellably) until the turn's file exists; past its timeout the model call fails, not retryable."""
        assert turn.wait_for_file is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + turn.wait_timeout_ms / 1000
        while not turn.wait_for_file.exists():
            if loop.time() >= deadline:
                raise ProviderStreamError(
                    ErrorInfo.of(
                        "configuration",
                        "script_wait_timeout",
                        f"The scripted model {self.entry_ref} waited {turn.wait_timeout_ms} ms for "
                        f"{turn.wait_for_file} ({self.script.path}, line {turn.line}) and it never appeared: "
                        "create that file to release the turn, or raise the turn's `wait_timeout_ms`.",
                        file=str(self.script.path)[:1024],
                        line=turn.line,
                    )
                )
            await asyncio.sleep(WAIT_POLL_S)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        if request.conversation_calls is not None:  # the log's place of the conversation, not this process's memory
            self._position = min(request.conversation_calls, len(self.script.turns))
        index, turn = self._next_turn()
        if turn.delay_ms:
            await asyncio.sleep(turn.delay_ms / 1000)
        if turn.wait_for_file is not None:
            await self._wait_for_file(turn)
        usage = turn.usage or default_usage(request, turn)
        request_id = f"scripted-{index + 1}"
        for piece in split_deltas(turn.text):
            if turn.delta_delay_ms:
                await asyncio.sleep(turn.delta_delay_ms / 1000)
            for delta in text_deltas(piece):  # a script may hold what a model could send: lone surrogates too
                yield delta
        if turn.error is not None:
            raise ProviderStreamError(
                turn.error, partial_text=turn.text, usage=usage, provider_request_id=request_id, model=turn.model
            )
        for i, call in enumerate(turn.tool_calls):
            yield ModelToolCall.from_model(
                self.ids.new(ToolCallId),
                call.call_id or f"call_scripted_{index + 1}_{i + 1}",
                call.name,
                call.arguments,
            )
        stop: StopReason = "tool_use" if turn.tool_calls else "refusal" if turn.refusal is not None else "end_turn"
        yield ModelCompleted(
            provider_request_id=request_id,
            model=bounded_text(turn.model or request.model, MAX_RECORDED_NAME_CHARS),
            stop_reason=stop,
            usage=usage,
            refusal=bounded_text(turn.refusal, MAX_REFUSAL_CHARS) if turn.refusal is not None else None,
        )
