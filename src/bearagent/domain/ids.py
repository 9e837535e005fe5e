"""Typed UUID4 identifiers. A `RunId` is not an `EventId`: the type checker and model validation both say so."""

from __future__ import annotations

import os
import re
import threading
import uuid
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, TypeVar

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

CANONICAL_V4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")
"""The canonical text of a version-4 UUID (lowercase, hyphenated): what `str()` of an id gives."""
_V4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))  # the variant and version bits
_V4_SET = (0x8000 << 48) | (4 << 76)  # RFC 4122 variant, version 4 (as `uuid.UUID(version=4)` sets them)
_is_canonical_v4 = CANONICAL_V4.match
_UNKNOWN = uuid.SafeUUID.unknown  # read once: an enum member's lookup goes through a descriptor every time
_new_object = object.__new__
_set = object.__setattr__  # `UUID.__setattr__` refuses every assignment


_POOL_BYTES = 4096  # 256 ids


class _RandomPool:
    """`os.urandom` read 4 KiB at a time and handed out 16 bytes at a time: one system call for 256 ids instead of
    one each (~2 us each on a small VM, where system calls are dear). The bytes are the same CSPRNG's. A forked
    child drops its parent's pool (`os.register_at_fork`), so two processes never hand out the same bytes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bytes = b""
        self._at = 0

    def take(self) -> int:
        with self._lock:
            at = self._at
            if at >= len(self._bytes):
                self._bytes, at = os.urandom(_POOL_BYTES), 0
            self._at = at + 16
            return int.from_bytes(self._bytes[at : at + 16], "big")

    def drop(self) -> None:
        self._lock = threading.Lock()  # a lock held by another thread at the fork stays held in the child
        self._bytes, self._at = b"", 0


_pool = _RandomPool()
_random_128 = _pool.take
os.register_at_fork(after_in_child=_pool.drop)


class TypedId(uuid.UUID):
    """Base of every typed id: a version-4 UUID that only equals ids of its own kind.

    Its canonical text is kept in a slot (`_text`, None until `str()` first formats it); no instance has a
    `__dict__` (an id is made for every id of every event read: one object, not two, for the collector to track).
    Subclasses declare `__slots__ = ()`."""

    __slots__ = ("_text",)
    kind: ClassVar[str] = "id"
    _text: str | None

    def __init__(self, value: str | uuid.UUID) -> None:
        if type(value) is str and _is_canonical_v4(value):  # the text every id is written as: no UUID parse
            _set(self, "_text", value)  # what str() gives; `int` is read from it when first asked for
            return
        _set(self, "_text", None)
        if isinstance(value, TypedId) and type(value) is not type(self):
            raise TypeError(f"expected {type(self).__name__}, got {type(value).__name__}")
        text = str(value) if isinstance(value, uuid.UUID) else value
        if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"{type(self).__name__} takes a UUID string, got {type(text).__name__}")
        try:
            super().__init__(text)
        except ValueError:
            raise ValueError(f"{type(self).__name__}: {text!r} is not a UUID") from None
        if self.version != 4 or self.variant != uuid.RFC_4122:
            raise ValueError(f"{type(self).__name__}: {text!r} is not a version-4 UUID")

    @classmethod
    def new(cls) -> Self:
        return cls._random()

    @classmethod
    def _random(cls) -> Self:
        """A new random id: `uuid.uuid4()`'s bits (16 bytes of `os.urandom`), set in place instead of printed and
        parsed back."""
        return cls._of_int((_random_128() & _V4_CLEAR) | _V4_SET)

    @classmethod
    def _of_int(cls, value: int) -> Self:
        """An id of this kind holding the 128-bit value of a version-4 UUID that is valid already (a new one, or
        another id's): what `__init__` stores, without parsing text."""
        made = _new_object(cls)
        _set(made, "int", value)
        _set(made, "is_safe", _UNKNOWN)
        _set(made, "_text", None)
        return made

    @classmethod
    def _of_canonical(cls, text: str) -> Self:
        """An id of this kind from text that matched `CANONICAL_V4` already: what `__init__` does for such text,
        without the call through the type."""
        made = _new_object(cls)
        _set(made, "_text", text)
        return made

    if not TYPE_CHECKING:  # (hidden from the type checker, which would take any attribute of an id for valid)

        def __getattr__(self, name: str) -> Any:
            """`int` and `is_safe` of an id made from its canonical text (the common case: every id read from a
            row, a payload or a request), which only a comparison, a hash or a UUID method needs: the 128-bit value
            is read from the text when first asked for, not when the id is made."""
            if name == "int" or name == "is_safe":
                text = self._text
                if text is not None:
                    _set(self, "int", int(text.replace("-", ""), 16))
                    _set(self, "is_safe", _UNKNOWN)
                    return object.__getattribute__(self, name)
            elif name == "_text":  # an id unpickled by `UUID.__setstate__`, which sets `int` only
                _set(self, "_text", None)
                return None
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TypedId):
            if type(other) is not type(self):
                return False
            mine, theirs = self._text, other._text
            if mine is not None and theirs is not None:
                return mine == theirs  # canonical texts: equal exactly when the UUIDs are
            return self.int == other.int
        if isinstance(other, uuid.UUID):
            # A bare UUID is no kind of id. Returning NotImplemented here let `UUID.__eq__` answer True, which made
            # RunId(x) == UUID(x) == EventId(x) while the hashes differ (breaking sets and dicts).
            return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.int))

    def __repr__(self) -> str:
        return f"{type(self).__name__}('{self}')"

    def __str__(self) -> str:
        """The canonical text, formatted once per id (an event's ids are written to its row, its payload and the
        stream, each by `str`)."""
        text = self._text
        if text is None:
            text = super().__str__()
            _set(self, "_text", text)
        return text

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls._validate,
            serialization=core_schema.plain_serializer_function_ser_schema(str, when_used="always"),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"type": "string", "format": "uuid", "description": f"{cls.__name__} (UUID version 4)"}

    @classmethod
    def _validate(cls, value: object) -> Self:
        if type(value) is str and _is_canonical_v4(value):  # the common input: an id's canonical text
            made = _new_object(cls)
            _set(made, "_text", value)
            return made
        if isinstance(value, cls):
            return value
        if isinstance(value, TypedId):
            raise ValueError(f"expected {cls.__name__}, got {type(value).__name__}")
        if isinstance(value, (str, uuid.UUID)):
            return cls(value)
        raise ValueError(f"{cls.__name__} must be a UUID string, got {type(value).__name__}")


class RunId(TypedId):
    __slots__ = ()
    kind = "run"


class EventId(TypedId):
    __slots__ = ()
    kind = "event"


class SessionId(TypedId):
    __slots__ = ()
    kind = "session"


class ActivityId(TypedId):
    __slots__ = ()
    kind = "activity"


class ModelCallId(TypedId):
    __slots__ = ()
    kind = "model_call"


class ToolCallId(TypedId):
    __slots__ = ()
    kind = "tool_call"


class ArtifactId(TypedId):
    __slots__ = ()
    kind = "artifact"


class CausationId(TypedId):
    __slots__ = ()
    kind = "causation"


class CorrelationId(TypedId):
    __slots__ = ()
    kind = "correlation"


class WorkspaceId(TypedId):
    __slots__ = ()
    kind = "workspace"


IdT = TypeVar("IdT", bound=TypedId)


def retyped(kind: type[IdT], other: TypedId) -> IdT:
    """The same UUID as `other`, as an id of `kind` (an event's id as the next event's causation): no text parsed."""
    text = other._text  # pyright: ignore[reportPrivateUsage]
    if text is not None:
        return kind._of_canonical(text)  # pyright: ignore[reportPrivateUsage]
    return kind._of_int(other.int)  # pyright: ignore[reportPrivateUsage]


def same_uuid(a: TypedId, b: TypedId) -> bool:
    """Whether two ids, of any kinds, hold the same UUID (an event's cause and the event before's id), compared by
    their canonical texts where both have one, else by value."""
    text_a, text_b = a._text, b._text  # pyright: ignore[reportPrivateUsage]
    if text_a is not None and text_b is not None:
        return text_a == text_b
    return a.int == b.int


class IdGenerator(Protocol):
    """Port: where new ids come from (random in production, ordered in tests)."""

    def new(self, kind: type[IdT]) -> IdT: ...


class Uuid4IdGenerator:
    """Production generator: random UUID4."""

    def new(self, kind: type[IdT]) -> IdT:
        return kind._random()  # pyright: ignore[reportPrivateUsage]


class DeterministicIdGenerator:
    """Test generator: `<prefix>-0000-4000-8000-<counter>`, one counter per id kind, so ids are predictable."""

    _PREFIXES: ClassVar[dict[str, int]] = {
        "run": 0x10000000,
        "session": 0x20000000,
        "activity": 0x30000000,
        "model_call": 0x40000000,
        "tool_call": 0x50000000,
        "artifact": 0x70000000,
        "event": 0x90000000,
        "causation": 0xA0000000,
        "correlation": 0xB0000000,
        "workspace": 0xC0000000,
    }

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}

    def new(self, kind: type[IdT]) -> IdT:
        count = self._counters.get(kind.kind, 0) + 1
        self._counters[kind.kind] = count
        prefix = self._PREFIXES.get(kind.kind, 0xF0000000)
        return kind(f"{prefix:08x}-0000-4000-8000-{count:012x}")
