"""The event envelope: one immutable, versioned fact about a run."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from pydantic import Field, field_validator

from bearagent.domain._base import DomainModel, JsonObject
from bearagent.domain.ids import CausationId, CorrelationId, EventId, RunId

EVENT_TYPE_RE = re.compile(r"^[A-Z][A-Za-z0-9]{1,63}$")


class Event(DomainModel):
    event_id: EventId
    run_id: RunId
    sequence: int = Field(ge=1)
    event_type: str = Field(min_length=2, max_length=64)
    schema_version: int = Field(ge=1, le=1_000)
    occurred_at: datetime
    causation_id: CausationId | None = None
    correlation_id: CorrelationId | None = None
    payload: JsonObject

    @field_validator("event_type")
    @classmethod
    def _check_type(cls, value: str) -> str:
        if not EVENT_TYPE_RE.match(value):
            raise ValueError(f"event_type {value!r} must be PascalCase letters and digits")
        return value

    @field_validator("occurred_at")
    @classmethod
    def _normalise_utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("occurred_at must carry a time zone")
        return value.astimezone(UTC)
