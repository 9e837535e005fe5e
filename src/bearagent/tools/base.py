"""Shared machinery of the native tools: a JSON Schema validator compiled once per tool (its fast path first,
`jsonschema` only when the fast path cannot decide), failure helpers, artifact hashing."""

from __future__ import annotations

import functools
import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, cast

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.errors import MAX_MESSAGE_CHARS, BearAgentError, ErrorCategory, ErrorInfo
from bearagent.domain.ids import ArtifactId, ToolCallId
from bearagent.domain.tools import Artifact, ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.fast_schema import compile_fast_check, plainly_valid_schema


def tool_error(
    category: ErrorCategory, specific: str, message: str, **details: str | int | bool | None
) -> BearAgentError:
    """A `BearAgentError` a tool raises; the gate turns it into a failed `ToolResult` the model reads."""
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return BearAgentError(ErrorInfo(category=category, code=f"{category}.{specific}", message=message, details=details))


class SchemaValidator:
    """A JSON Schema (draft 2020-12) compiled once per tool spec; reports the first error with its field path.

    The schema is checked at construction; `jsonschema` is imported only for a schema outside the fast subset, and
    its validator is built on the first arguments the fast check does not accept."""

    def __init__(self, tool_name: str, schema: Mapping[str, object]) -> None:
        self._tool = tool_name
        plain = cast(dict[str, Any], _thaw(schema))
        if not plainly_valid_schema(plain):
            _check_schema(json.dumps(plain, sort_keys=True))
        self._schema = plain
        self._validator: Any = None
        self._fast = compile_fast_check(plain)

    def validate(self, arguments: Mapping[str, JsonValue]) -> None:
        if self._fast is not None and self._fast(arguments):
            return
        if self._validator is None:
            from jsonschema import Draft202012Validator

            self._validator = Draft202012Validator(self._schema)
        instance = _thaw(arguments)
        error = cast(Any, next(iter(self._validator.iter_errors(instance)), None))
        if error is None:
            return
        where = "/".join(str(p) for p in cast(list[object], list(error.absolute_path))) or "(arguments)"
        message = cast(str, error.message)
        if len(message) > 300:
            message = message[:300] + "…"
        raise tool_error(
            "validation",
            "invalid_arguments",
            f"Invalid arguments for {self._tool}: {where}: {message}. Fix the arguments to match the tool's input schema.",
            field=where,
        )


@functools.lru_cache(maxsize=1024)
def _check_schema(schema_json: str) -> None:
    """Check a schema against the metaschema once per distinct schema (a run's plan builds its runtime tools anew,
    and the check was half the cost of planning); an invalid one raises every time (errors are not cached)."""
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(json.loads(schema_json))


def _thaw(value: object) -> object:
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in cast(Mapping[object, object], value).items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in cast(list[object], value)]
    return value


class NativeTool(ABC):
    """Base of every native tool: `prepare` = schema validation + `normalise`; `execute` runs `run` and turns a
    raised `BearAgentError` into a failed result (so the tool behaves even when called outside the gate)."""

    def __init__(self, spec: ToolSpec) -> None:
        self._spec = spec
        self._validator = SchemaValidator(spec.name, spec.input_schema)

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def prepare(self, arguments: JsonMapping, context: ToolContext) -> JsonMapping:
        self._validator.validate(arguments)
        working = dict(arguments)
        normalised = self.normalise(working, context)
        if normalised is working and working == arguments:
            return arguments  # unchanged: already bounded and frozen by ToolRequest
        return frozen_json(normalised)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        """Fill defaults and clamp limits; the arguments are already schema-valid."""
        return arguments

    async def execute(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        try:
            return await self.run(arguments, context)
        except BearAgentError as exc:
            return self.failed(context, exc.info)

    @abstractmethod
    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult: ...

    # ----- result helpers -----

    def ok(
        self,
        context: ToolContext,
        content: str,
        data: Mapping[str, object] | None = None,
        *,
        artifacts: tuple[Artifact, ...] = (),
        truncated: bool = False,
    ) -> ToolResult:
        return ToolResult(
            tool_call_id=call_id(context),
            tool_name=self._spec.name,
            status="succeeded",
            content=content,
            data=frozen_json(data) if data is not None else None,
            artifacts=artifacts,
            truncated=truncated,
        )

    def failed(self, context: ToolContext, error: ErrorInfo, data: Mapping[str, object] | None = None) -> ToolResult:
        return ToolResult(
            tool_call_id=call_id(context),
            tool_name=self._spec.name,
            status="failed",
            content=error.message,
            data=frozen_json(data) if data is not None else None,
            error=error,
        )


def call_id(context: ToolContext) -> ToolCallId:
    return context.tool_call_id or context.ids.new(ToolCallId)


def text_artifact(context: ToolContext, rel: str, payload: bytes) -> Artifact:
    return Artifact(
        artifact_id=context.ids.new(ArtifactId),
        path=rel,
        kind="text",
        encoding="utf-8",
        size_bytes=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
    )


def int_arg(arguments: Mapping[str, JsonValue], key: str, default: int) -> int:
    value = arguments.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def str_arg(arguments: Mapping[str, JsonValue], key: str, default: str = "") -> str:
    value = arguments.get(key, default)
    return value if isinstance(value, str) else default
