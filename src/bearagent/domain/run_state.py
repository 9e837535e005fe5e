"""Mutable twins of `RunProjection` and `ActivityProjection`, built for the reducer's hot path.

The reducer folds thousands of events per second (every append, every replay), so its working state is plain
Python: ids as canonical text, JSON forms of datetimes and errors computed once when set, typed ids made once.
`to_json()` gives exactly the JSON of the projection model and `to_projection()` the frozen model itself, without
re-validating what the reducer already checked.

Its length is the two twins' field lists written out three times each (attributes, `to_json`, `to_projection`):
spelled out on purpose, because a generic loop over the fields costs the hot path what this module exists to
save.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Self, TypeVar, cast

from pydantic import BaseModel

from bearagent.domain._base import JsonValue
from bearagent.domain.budgets import BudgetLimits, BudgetUsage
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import ActivityId, ModelCallId, RunId, SessionId, ToolCallId
from bearagent.domain.run_events import RunOwner, RunRequest
from bearagent.domain.state import (
    ActivityKind,
    ActivityProjection,
    ActivityStatus,
    PendingApproval,
    RunProjection,
    RunStatus,
)

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_setattr = object.__setattr__
_new_object = object.__new__  # what `cls.__new__` is for a pydantic model (BaseModel defines none), looked up once
_FIELD_NAMES: dict[type[BaseModel], frozenset[str]] = {}
ModelT = TypeVar("ModelT", bound=BaseModel)


def canonical_id(value: str) -> str:
    """The canonical (lowercase, hyphenated) text of a UUID, fast for text that already is canonical."""
    if _UUID_RE.match(value):
        return value
    return str(uuid.UUID(value))


def iso(dt: datetime) -> str:
    """The JSON text of a UTC datetime as pydantic writes it (`...Z`). Formatting one costs ~0.7 us and each time
    is written several times (an activity's time and its event's row; a commit's events often share one), so the
    last text is kept by identity, and UTC times' texts by value for a while."""
    global _last_iso
    last = _last_iso
    if last[0] is dt:
        return last[1]
    if type(dt) is datetime and dt.tzinfo is UTC:  # exactly these: equal ones format alike
        text = _iso_texts.get(dt)
        if text is None:
            text = dt.isoformat()[:-6] + "Z"
            if len(_iso_texts) >= _ISO_KEPT:
                _iso_texts.clear()
            _iso_texts[dt] = text
    else:
        text = dt.isoformat()
        if text.endswith("+00:00"):
            text = text[:-6] + "Z"
    _last_iso = (dt, text)  # one tuple, replaced whole: safe to read from any thread
    return text


_last_iso: tuple[object, str] = (object(), "")
_ISO_KEPT = 256
_iso_texts: dict[datetime, str] = {}
"""Texts of UTC datetimes by value, cleared when full."""
# the texts `iso()` writes: whole or microsecond seconds (never .000000, which `isoformat` leaves out), and a Z
_ISO_TEXT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(?!000000)\d{6})?Z\Z")


def parse_time(text: str) -> datetime:
    """`datetime.fromisoformat(text)`, and if `text` is exactly what `iso()` writes for the result (UTC, a Z, whole
    or microsecond seconds), `iso()` is told so and need not format it: for a loop that parses stored times and
    hands them to the reducer, which keeps their JSON form."""
    global _last_iso
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is UTC and _ISO_TEXT.match(text) is not None:
        _last_iso = (dt, text)
    return dt


def _dt(value: object) -> datetime | None:
    return None if value is None else datetime.fromisoformat(cast(str, value))


def _error_json(error: ErrorInfo | None) -> dict[str, JsonValue] | None:
    return None if error is None else cast(dict[str, JsonValue], error.model_dump(mode="json"))


def error_of(value: object) -> ErrorInfo | None:
    """The `ErrorInfo` of its JSON form (validated); None stays None."""
    return None if value is None else ErrorInfo.model_validate(value)


def trusted_model(cls: type[ModelT], values: dict[str, Any]) -> ModelT:
    """Build a frozen model from complete, already-valid field values (what `model_construct` does, minus its
    per-field default handling). Only for values the reducer produced; every field must be given."""
    model = _new_object(cls)
    _setattr(model, "__dict__", values)
    fields = _FIELD_NAMES.get(cls)
    if fields is None:
        fields = _FIELD_NAMES[cls] = frozenset(cls.__pydantic_fields__)
    _setattr(model, "__pydantic_fields_set__", set(fields))
    _setattr(model, "__pydantic_extra__", None)
    _setattr(model, "__pydantic_private__", None)
    return model


class _Lifecycle:
    """What a run and an activity share: when it started and ended and why it failed, each attribute carrying its
    JSON form (computed once, when set) for `to_json()`."""

    __slots__ = ("_ended_at", "_ended_iso", "_error", "_error_json", "_started_at", "_started_iso")

    @property
    def started_at(self) -> datetime | None:
        return self._started_at

    @started_at.setter
    def started_at(self, value: datetime | None) -> None:
        self._started_at = value
        self._started_iso = None if value is None else iso(value)

    @property
    def ended_at(self) -> datetime | None:
        return self._ended_at

    @ended_at.setter
    def ended_at(self, value: datetime | None) -> None:
        self._ended_at = value
        self._ended_iso = None if value is None else iso(value)

    @property
    def error(self) -> ErrorInfo | None:
        return self._error

    @error.setter
    def error(self, value: ErrorInfo | None) -> None:
        self._error = value
        self._error_json = _error_json(value)

    def copy(self) -> Self:
        """A shallow copy (every slot, this base's and the class's)."""
        cls = type(self)
        other = cls.__new__(cls)
        for name in (*_Lifecycle.__slots__, *cls.__slots__):
            _setattr(other, name, getattr(self, name))
        return other

    def _set_lifecycle(self, data: Mapping[str, JsonValue]) -> None:
        """Set started_at, ended_at and error from their JSON form (`to_json()`)."""
        self.started_at = _dt(data["started_at"])
        self.ended_at = _dt(data["ended_at"])
        self.error = error_of(data.get("error"))


class RunState(_Lifecycle):
    """The run the reducer works on. Datetime and error attributes keep their JSON form up to date."""

    __slots__ = (
        "_created_at",
        "_created_iso",
        "_limits_json",
        "_typed",
        "_typed_active",
        "_typed_json",
        "_wall_origin_json",
        "active_activity_id",
        "agent_name",
        "budget_limits",
        "cost_microusd",
        "effective_agent_name",
        "final_text",
        "goal",
        "input_tokens",
        "last_sequence",
        "model_iterations",
        "output_tokens",
        "owner",
        "parent_run_id",
        "pending_approval",
        "request",
        "run_id",
        "session_id",
        "status",
        "stop_reason",
        "switch_count",
        "tool_calls",
        "trigger_type",
        "wall_origin",
        "wall_time_ms",
    )

    def __init__(self, run_id: str, *, budget_limits: BudgetLimits, created_at: datetime) -> None:
        self.run_id = run_id
        self.session_id: str | None = None
        self.parent_run_id: str | None = None
        self.status: RunStatus = "queued"
        self.budget_limits = budget_limits
        self._limits_json: dict[str, JsonValue] = dict(budget_limits.model_dump(mode="json"))
        self.model_iterations = 0
        self.tool_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_microusd = 0
        self.wall_time_ms = 0
        self.last_sequence = 1
        self.active_activity_id: str | None = None
        self.agent_name: str | None = None
        self.effective_agent_name: str | None = None
        self.switch_count = 0
        self.trigger_type = "message"
        self.goal: str | None = None
        self.created_at = created_at
        self.started_at = None
        self.ended_at = None
        self.error = None
        self.final_text: str | None = None
        self.stop_reason: str | None = None
        self.owner: dict[str, JsonValue] | None = None
        """JSON of the `RunOwner` holding the run."""
        self.wall_origin: datetime | None = None
        self._wall_origin_json: tuple[datetime | None, str | None] = (None, None)
        self.pending_approval: dict[str, JsonValue] | None = None
        """JSON of the `PendingApproval` a waiting run waits for."""
        self.request: dict[str, JsonValue] | None = None
        """JSON of the run's `RunRequest` (RunCreated v3)."""
        self._typed: tuple[RunId, SessionId | None, RunId | None] | None = None
        self._typed_active: tuple[str, ActivityId] | None = None
        self._typed_json: dict[int, tuple[object, BaseModel]] = {}
        """The models of `owner`, `pending_approval` and `request` as last built, each beside the JSON it was built
        from: those attributes are replaced, never changed in place, so a model is rebuilt only for new JSON."""

    # created_at carries its JSON form along, like the attributes of `_Lifecycle`
    @property
    def created_at(self) -> datetime:
        return self._created_at

    @created_at.setter
    def created_at(self, value: datetime) -> None:
        self._created_at = value
        self._created_iso = iso(value)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self, *, with_goal: bool = True) -> dict[str, JsonValue]:
        """Exactly the JSON shape of `RunProjection.model_dump(mode="json")`; `with_goal=False` leaves out the goal
        (up to 1 MiB, written once), so a store need not rewrite it on every append."""
        data = self._json()
        if not with_goal:
            del data["goal"]
        return data

    def _json(self) -> dict[str, JsonValue]:
        return {
            "run_id": self.run_id,
            "session_id": self.session_id,
            "parent_run_id": self.parent_run_id,
            "status": self.status,
            "budget_limits": self._limits_json,
            "usage": {
                "model_iterations": self.model_iterations,
                "tool_calls": self.tool_calls,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost_microusd": self.cost_microusd,
                "wall_time_ms": self.wall_time_ms,
            },
            "last_sequence": self.last_sequence,
            "active_activity_id": self.active_activity_id,
            "agent_name": self.agent_name,
            "effective_agent_name": self.effective_agent_name,
            "switch_count": self.switch_count,
            "trigger_type": self.trigger_type,
            "goal": self.goal,
            "created_at": self._created_iso,
            "started_at": self._started_iso,
            "ended_at": self._ended_iso,
            "error": self._error_json,
            "final_text": self.final_text,
            "stop_reason": self.stop_reason,
            "owner": self.owner,
            "wall_origin": self._wall_origin_text(),
            "pending_approval": self.pending_approval,
            "request": self.request,
        }

    def _wall_origin_text(self) -> str | None:
        """The JSON form of `wall_origin` (a plain attribute: the reducer reads it for every event), formatted once
        per value."""
        origin = self.wall_origin
        cached = self._wall_origin_json
        if cached[0] is not origin:
            cached = self._wall_origin_json = (origin, None if origin is None else iso(origin))
        return cached[1]

    @classmethod
    def from_json(cls, data: Mapping[str, JsonValue]) -> RunState:
        limits = BudgetLimits.model_validate(data["budget_limits"])
        state = cls(cast(str, data["run_id"]), budget_limits=limits, created_at=cast(datetime, _dt(data["created_at"])))
        usage = cast(Mapping[str, int], data["usage"])
        state.session_id = cast(str | None, data["session_id"])
        state.parent_run_id = cast(str | None, data["parent_run_id"])
        state.status = cast(RunStatus, data["status"])
        state.model_iterations = usage["model_iterations"]
        state.tool_calls = usage["tool_calls"]
        state.input_tokens = usage["input_tokens"]
        state.output_tokens = usage["output_tokens"]
        state.cost_microusd = usage["cost_microusd"]
        state.wall_time_ms = usage["wall_time_ms"]
        state.last_sequence = cast(int, data["last_sequence"])
        state.active_activity_id = cast(str | None, data["active_activity_id"])
        state.agent_name = cast(str | None, data["agent_name"])
        state.effective_agent_name = cast(str | None, data["effective_agent_name"])
        state.switch_count = cast(int, data["switch_count"])
        state.trigger_type = cast(str, data["trigger_type"])
        state.goal = cast(str | None, data["goal"])
        state._set_lifecycle(data)
        state.final_text = cast(str | None, data["final_text"])
        state.stop_reason = cast(str | None, data.get("stop_reason"))
        state.owner = cast(dict[str, JsonValue] | None, data.get("owner"))
        state.wall_origin = _dt(data.get("wall_origin"))
        state.pending_approval = cast(dict[str, JsonValue] | None, data.get("pending_approval"))
        state.request = cast(dict[str, JsonValue] | None, data.get("request"))
        return state

    @classmethod
    def from_projection(cls, run: RunProjection) -> RunState:
        return cls.from_json(cast(Mapping[str, JsonValue], run.model_dump(mode="json")))

    def to_projection(self) -> RunProjection:
        """The frozen projection, built without re-validating what the reducer already checked."""
        typed = self._typed
        if typed is None:
            typed = self._typed = (
                RunId(self.run_id),
                None if self.session_id is None else SessionId(self.session_id),
                None if self.parent_run_id is None else RunId(self.parent_run_id),
            )
        active: ActivityId | None = None
        if self.active_activity_id is not None:
            cached = self._typed_active
            if cached is None or cached[0] != self.active_activity_id:
                cached = self._typed_active = (self.active_activity_id, ActivityId(self.active_activity_id))
            active = cached[1]
        usage = trusted_model(
            BudgetUsage,
            {
                "model_iterations": self.model_iterations,
                "tool_calls": self.tool_calls,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost_microusd": self.cost_microusd,
                "wall_time_ms": self.wall_time_ms,
            },
        )
        return trusted_model(
            RunProjection,
            {
                "run_id": typed[0],
                "session_id": typed[1],
                "parent_run_id": typed[2],
                "status": self.status,
                "budget_limits": self.budget_limits,
                "usage": usage,
                "last_sequence": self.last_sequence,
                "active_activity_id": active,
                "agent_name": self.agent_name,
                "effective_agent_name": self.effective_agent_name,
                "switch_count": self.switch_count,
                "trigger_type": self.trigger_type,
                "goal": self.goal,
                "created_at": self._created_at,
                "started_at": self._started_at,
                "ended_at": self._ended_at,
                "error": self._error,
                "final_text": self.final_text,
                "stop_reason": self.stop_reason,
                "owner": self._model_of(0, self.owner, RunOwner),
                "wall_origin": self.wall_origin,
                "pending_approval": self._model_of(1, self.pending_approval, PendingApproval),
                "request": self._model_of(2, self.request, RunRequest),
            },
        )

    def _model_of(self, slot: int, data: dict[str, JsonValue] | None, cls: type[ModelT]) -> ModelT | None:
        if data is None:
            return None
        cached = self._typed_json.get(slot)
        if cached is not None and cached[0] is data:
            return cast(ModelT, cached[1])
        model = cls.model_validate(data)
        self._typed_json[slot] = (data, model)
        return model


class ActivityState(_Lifecycle):
    """One model or tool call the reducer works on."""

    __slots__ = (
        "_requested_at",
        "_requested_iso",
        "activity_id",
        "kind",
        "last_sequence",
        "model_call_id",
        "name",
        "requested_sequence",
        "run_id",
        "status",
        "tool_call_id",
    )

    def __init__(
        self,
        run_id: str,
        activity_id: str,
        kind: ActivityKind,
        *,
        requested_sequence: int,
        requested_at: datetime,
        model_call_id: str | None = None,
        tool_call_id: str | None = None,
        name: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.activity_id = activity_id
        self.kind: ActivityKind = kind
        self.status: ActivityStatus = "pending"
        self.model_call_id = model_call_id
        self.tool_call_id = tool_call_id
        self.name = name
        self.requested_sequence = requested_sequence
        self.last_sequence = requested_sequence
        self.requested_at = requested_at
        # what the setters of `_Lifecycle` store for None, without a call each (an activity is made per call)
        self._started_at = self._started_iso = self._ended_at = self._ended_iso = None
        self._error = self._error_json = None

    @property
    def requested_at(self) -> datetime:
        return self._requested_at

    @requested_at.setter
    def requested_at(self, value: datetime) -> None:
        self._requested_at = value
        self._requested_iso = iso(value)

    def to_json(self) -> dict[str, JsonValue]:
        """Exactly the JSON shape of `ActivityProjection.model_dump(mode="json")`."""
        return {
            "run_id": self.run_id,
            "activity_id": self.activity_id,
            "kind": self.kind,
            "status": self.status,
            "model_call_id": self.model_call_id,
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "requested_sequence": self.requested_sequence,
            "last_sequence": self.last_sequence,
            "requested_at": self._requested_iso,
            "started_at": self._started_iso,
            "ended_at": self._ended_iso,
            "error": self._error_json,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, JsonValue]) -> ActivityState:
        state = cls(
            cast(str, data["run_id"]),
            cast(str, data["activity_id"]),
            cast(ActivityKind, data["kind"]),
            requested_sequence=cast(int, data["requested_sequence"]),
            requested_at=cast(datetime, _dt(data["requested_at"])),
            model_call_id=cast(str | None, data["model_call_id"]),
            tool_call_id=cast(str | None, data["tool_call_id"]),
            name=cast(str | None, data["name"]),
        )
        state.status = cast(ActivityStatus, data["status"])
        state.last_sequence = cast(int, data["last_sequence"])
        state._set_lifecycle(data)
        return state

    @classmethod
    def from_projection(cls, activity: ActivityProjection) -> ActivityState:
        return cls.from_json(cast(Mapping[str, JsonValue], activity.model_dump(mode="json")))

    def to_projection(self) -> ActivityProjection:
        return trusted_model(
            ActivityProjection,
            {
                "run_id": RunId(self.run_id),
                "activity_id": ActivityId(self.activity_id),
                "kind": self.kind,
                "status": self.status,
                "model_call_id": None if self.model_call_id is None else ModelCallId(self.model_call_id),
                "tool_call_id": None if self.tool_call_id is None else ToolCallId(self.tool_call_id),
                "name": self.name,
                "requested_sequence": self.requested_sequence,
                "last_sequence": self.last_sequence,
                "requested_at": self._requested_at,
                "started_at": self._started_at,
                "ended_at": self._ended_at,
                "error": self._error,
            },
        )
