"""Errors that may be stored and shown: `ErrorInfo` is public data, `BearAgentError` carries it through Python.

Adapters see raw exceptions full of URLs, headers and request bodies. Only `ErrorInfo` leaves them: a stable
category, a code of that category, a short message, a retryable flag and a few bounded, non-secret details.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Literal, Self, TypeAlias, cast, get_args

from pydantic import Field, PlainSerializer, PlainValidator, WithJsonSchema, model_validator

from bearagent.domain._base import DomainModel

ErrorCategory: TypeAlias = Literal[
    "validation",
    "configuration",
    "authentication",
    "permission",
    "invalid_request",
    "not_found",
    "conflict",
    "context_overflow",
    "rate_limit",
    "quota",
    "overloaded",
    "server",
    "timeout",
    "network",
    "content_filter",
    "refusal",
    "max_output_tokens",
    "truncated_stream",
    "tool",
    "hook",
    "mcp",
    "storage",
    "budget",
    "cancelled",
    "internal",
]
ERROR_CATEGORIES: frozenset[str] = frozenset(get_args(ErrorCategory))

NEVER_RETRYABLE: frozenset[str] = frozenset(
    {
        "validation",
        "configuration",
        "authentication",
        "permission",
        "invalid_request",
        "context_overflow",
        "quota",
        "content_filter",
        "refusal",
        "max_output_tokens",
        "budget",
        "cancelled",
    }
)

SENSITIVE_KEY_FRAGMENTS: tuple[str, ...] = (
    "token",
    "authorization",
    "cookie",
    "password",
    "secret",
    "api_key",
    "apikey",
    "api-key",
    "credential",
)

MAX_MESSAGE_CHARS = 2_000
MAX_DETAIL_KEYS = 32
MAX_DETAIL_KEY_CHARS = 64
MAX_DETAIL_VALUE_CHARS = 1_024
_CODE_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")

DetailValue: TypeAlias = str | int | float | bool | None


def _validate_details(value: object) -> Mapping[str, DetailValue]:
    if not isinstance(value, Mapping):
        raise ValueError(f"details must be an object, got {type(value).__name__}")
    items = dict(cast(Mapping[object, object], value))
    if len(items) > MAX_DETAIL_KEYS:
        raise ValueError(f"details has {len(items)} keys; at most {MAX_DETAIL_KEYS} are allowed")
    out: dict[str, DetailValue] = {}
    for key, item in items.items():
        if not isinstance(key, str) or not key:
            raise ValueError("details keys must be non-empty strings")
        if len(key) > MAX_DETAIL_KEY_CHARS:
            raise ValueError(f"details key {key[:20]!r}... is longer than {MAX_DETAIL_KEY_CHARS} characters")
        lowered = key.lower()
        for fragment in SENSITIVE_KEY_FRAGMENTS:
            if fragment in lowered:
                raise ValueError(
                    f"details key {key!r} looks sensitive (contains {fragment!r}); secrets never go into errors"
                )
        if item is None or isinstance(item, (bool, int)):
            out[key] = item
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError(f"details[{key!r}] is a non-finite float")
            out[key] = item
        elif isinstance(item, str):
            if len(item) > MAX_DETAIL_VALUE_CHARS:
                raise ValueError(f"details[{key!r}] is longer than {MAX_DETAIL_VALUE_CHARS} characters")
            out[key] = item
        else:
            raise ValueError(
                f"details[{key!r}] has type {type(item).__name__}; only str, int, float, bool and null are allowed"
            )
    return MappingProxyType(out)


def bounded_details(value: object) -> Mapping[str, DetailValue]:
    """`value` checked as error details are (at most 32 keys of up to 64 characters, none that looks like it names a
    secret, scalar values of up to 1,024 characters); `ValueError` naming the first problem. Also the rule of a
    run's client `metadata` (`service/run_types.py`)."""
    return _validate_details(value)


def _dump_details(value: Mapping[str, DetailValue]) -> dict[str, DetailValue]:
    return dict(value)


ErrorDetails = Annotated[
    Mapping[str, DetailValue],
    PlainValidator(_validate_details),
    PlainSerializer(_dump_details),
    WithJsonSchema(
        {
            "type": "object",
            "maxProperties": MAX_DETAIL_KEYS,
            "additionalProperties": {"type": ["string", "integer", "number", "boolean", "null"]},
        }
    ),
]


class ErrorInfo(DomainModel):
    """A public, storable error: `code` is `<category>.<specific>`, e.g. `rate_limit.exceeded`."""

    category: ErrorCategory
    code: str = Field(min_length=3, max_length=128)
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    retryable: bool = False
    retry_after_s: float | None = Field(default=None, ge=0, le=86_400)
    details: ErrorDetails = Field(default_factory=lambda: MappingProxyType({}))

    @model_validator(mode="after")
    def _check_code_and_retry(self) -> Self:
        if not _CODE_RE.match(self.code):
            raise ValueError(f"code {self.code!r} must look like '<category>.<specific>' in lowercase")
        prefix = self.code.split(".", 1)[0]
        if prefix != self.category:
            raise ValueError(f"code {self.code!r} does not belong to category {self.category!r}")
        if self.retryable and self.category in NEVER_RETRYABLE:
            raise ValueError(f"category {self.category!r} is never retryable")
        if self.retry_after_s is not None and not self.retryable:
            raise ValueError("retry_after_s only makes sense on a retryable error")
        return self

    @classmethod
    def of(
        cls,
        category: ErrorCategory,
        specific: str,
        message: str,
        *,
        retryable: bool = False,
        retry_after_s: float | None = None,
        **details: DetailValue,
    ) -> ErrorInfo:
        """Shorthand: `ErrorInfo.of("tool", "timeout", "...")` gives code `tool.timeout`."""
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 1] + "…"
        return cls(
            category=category,
            code=f"{category}.{specific}",
            message=message,
            retryable=retryable,
            retry_after_s=retry_after_s,
            details=details,
        )


class BearAgentError(Exception):
    """An exception carrying a public `ErrorInfo`. Raise it `from` the original to keep `__cause__` locally."""

    def __init__(self, info: ErrorInfo, *, hint: str | None = None) -> None:
        super().__init__(info.message)
        self.info = info
        self.hint = hint

    @property
    def category(self) -> str:
        return self.info.category

    @property
    def code(self) -> str:
        return self.info.code
