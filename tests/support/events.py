"""Build run events for tests: `EventFactory` keeps a run's sequence, a manual clock and deterministic ids.

    f = EventFactory()
    events = [f.run_created(limits), f.run_started(), *f.model_call(420, 28), *f.tool_call("Read"), f.run_succeeded()]

Each helper makes the NEXT event of the run (sequence + 1, clock + `step`). When a test expects an event to be
rejected, call `f.rejected()` afterwards so the next event reuses its sequence.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import (
    ActivityId,
    CausationId,
    CorrelationId,
    DeterministicIdGenerator,
    EventId,
    IdGenerator,
    ModelCallId,
    RunId,
    SessionId,
    ToolCallId,
)
from bearagent.domain.run_events import (
    ModelCallCompletedV1,
    ModelCallFailedV2,
    ModelCallRequestedV1,
    ModelCallStartedV1,
    RunCancelledV1,
    RunCreatedV1,
    RunEventPayload,
    RunFailedV2,
    RunStartedV1,
    RunSucceededV1,
    ToolCallCompletedV1,
    ToolCallFailedV1,
    ToolCallRequestedV1,
    ToolCallStartedV1,
    event_type_of,
)

SEED_START = datetime(2026, 8, 18, 2, 0, 0, tzinfo=UTC)


class ManualClock:
    """A `Clock` that only moves when told to."""

    def __init__(self, start: datetime = SEED_START) -> None:
        self._now = start
        self._mono = 0.0

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, delta: timedelta) -> None:
        self._now += delta
        self._mono += delta.total_seconds()


class EventFactory:
    def __init__(
        self,
        run_id: RunId | None = None,
        *,
        ids: IdGenerator | None = None,
        clock: ManualClock | None = None,
        step: timedelta = timedelta(seconds=1),
    ) -> None:
        self.ids: IdGenerator = ids if ids is not None else DeterministicIdGenerator()
        self.run_id = run_id if run_id is not None else self.ids.new(RunId)
        self.clock = clock if clock is not None else ManualClock()
        self.step = step
        self.sequence = 0
        self.correlation_id = self.ids.new(CorrelationId)
        self.activity_id: ActivityId | None = None
        self.model_call_id: ModelCallId | None = None
        self.tool_call_id: ToolCallId | None = None

    # ---- envelope ------------------------------------------------------------------------------------------

    def event(
        self,
        payload: RunEventPayload,
        *,
        sequence: int | None = None,
        at: datetime | None = None,
        event_id: EventId | None = None,
    ) -> Event:
        """The next event carrying `payload` (its type and version come from the payload class)."""
        event_type, version = event_type_of(payload)
        if sequence is None:
            self.sequence += 1
            sequence = self.sequence
        if at is None:
            if sequence > 1:
                self.clock.advance(self.step)
            at = self.clock.now()
        return Event(
            event_id=event_id if event_id is not None else self.ids.new(EventId),
            run_id=self.run_id,
            sequence=sequence,
            event_type=event_type,
            schema_version=version,
            occurred_at=at,
            causation_id=self.ids.new(CausationId),
            correlation_id=self.correlation_id,
            payload=payload.model_dump(mode="json"),
        )

    def rejected(self) -> None:
        """The last event was refused: the next one takes its sequence again."""
        self.sequence -= 1

    # ---- run lifecycle -------------------------------------------------------------------------------------

    def run_created(self, limits: BudgetLimits | None = None, *, session_id: SessionId | None = None) -> Event:
        return self.event(RunCreatedV1(session_id=session_id, budget_limits=limits or BudgetLimits()))

    def run_started(self) -> Event:
        return self.event(RunStartedV1())

    def run_succeeded(self) -> Event:
        return self.event(RunSucceededV1())

    def run_failed(self, code: str = "crashed", message: str = "the run failed") -> Event:
        return self.event(RunFailedV2(error=ErrorInfo.of("internal", code, message)))

    def run_cancelled(self, reason: str = "user pressed ctrl-c") -> Event:
        return self.event(RunCancelledV1(reason=reason))

    # ---- model activity ------------------------------------------------------------------------------------

    def model_requested(self, activity_id: ActivityId | None = None, model_call_id: ModelCallId | None = None) -> Event:
        self.activity_id = activity_id if activity_id is not None else self.ids.new(ActivityId)
        self.model_call_id = model_call_id if model_call_id is not None else self.ids.new(ModelCallId)
        return self.event(ModelCallRequestedV1(activity_id=self.activity_id, model_call_id=self.model_call_id))

    def model_started(self) -> Event:
        assert self.activity_id is not None and self.model_call_id is not None
        return self.event(ModelCallStartedV1(activity_id=self.activity_id, model_call_id=self.model_call_id))

    def model_completed(self, input_tokens: int = 0, output_tokens: int = 0, cost_microusd: int = 0) -> Event:
        assert self.activity_id is not None and self.model_call_id is not None
        return self.event(
            ModelCallCompletedV1(
                activity_id=self.activity_id,
                model_call_id=self.model_call_id,
                usage=TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens),
                cost_microusd=cost_microusd,
            )
        )

    def model_failed(self, input_tokens: int = 0, output_tokens: int = 0, cost_microusd: int = 0) -> Event:
        assert self.activity_id is not None and self.model_call_id is not None
        return self.event(
            ModelCallFailedV2(
                activity_id=self.activity_id,
                model_call_id=self.model_call_id,
                usage=TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens),
                cost_microusd=cost_microusd,
                error=ErrorInfo.of("server", "unavailable", "provider returned 503", retryable=True),
            )
        )

    def model_call(self, input_tokens: int = 0, output_tokens: int = 0, cost_microusd: int = 0) -> list[Event]:
        """Requested, Started, Completed."""
        return [
            self.model_requested(),
            self.model_started(),
            self.model_completed(input_tokens, output_tokens, cost_microusd),
        ]

    # ---- tool activity -------------------------------------------------------------------------------------

    def tool_requested(
        self, tool_name: str = "Read", activity_id: ActivityId | None = None, tool_call_id: ToolCallId | None = None
    ) -> Event:
        self.activity_id = activity_id if activity_id is not None else self.ids.new(ActivityId)
        self.tool_call_id = tool_call_id if tool_call_id is not None else self.ids.new(ToolCallId)
        return self.event(
            ToolCallRequestedV1(activity_id=self.activity_id, tool_call_id=self.tool_call_id, tool_name=tool_name)
        )

    def tool_started(self) -> Event:
        assert self.activity_id is not None and self.tool_call_id is not None
        return self.event(ToolCallStartedV1(activity_id=self.activity_id, tool_call_id=self.tool_call_id))

    def tool_completed(self) -> Event:
        assert self.activity_id is not None and self.tool_call_id is not None
        return self.event(ToolCallCompletedV1(activity_id=self.activity_id, tool_call_id=self.tool_call_id))

    def tool_failed(self) -> Event:
        assert self.activity_id is not None and self.tool_call_id is not None
        return self.event(ToolCallFailedV1(activity_id=self.activity_id, tool_call_id=self.tool_call_id))

    def tool_call(self, tool_name: str = "Read") -> list[Event]:
        """Requested, Started, Completed."""
        return [self.tool_requested(tool_name), self.tool_started(), self.tool_completed()]


# ---- seed 001's worked example ---------------------------------------------------------------------------------

SEED_RUN_ID = RunId("11111111-1111-4111-8111-111111111111")
SEED_SESSION_ID = SessionId("22222222-2222-4222-8222-222222222222")
SEED_LIMITS = BudgetLimits(
    max_model_iterations=3, max_tokens=5000, max_cost_microusd=1000, max_wall_time_ms=60000, max_tool_calls=2
)
M1 = ActivityId("30000000-0000-4000-8000-000000000001")
T1 = ActivityId("30000000-0000-4000-8000-000000000002")
M2 = ActivityId("30000000-0000-4000-8000-000000000003")
T2 = ActivityId("30000000-0000-4000-8000-000000000004")
M3 = ActivityId("30000000-0000-4000-8000-000000000005")
MC1 = ModelCallId("40000000-0000-4000-8000-000000000001")
MC2 = ModelCallId("40000000-0000-4000-8000-000000000002")
MC3 = ModelCallId("40000000-0000-4000-8000-000000000003")
TC1 = ToolCallId("50000000-0000-4000-8000-000000000001")
TC2 = ToolCallId("50000000-0000-4000-8000-000000000002")


class SeedStep:
    """One row of seed 001's table: the event and what the run/activity look like after it."""

    def __init__(
        self,
        event: Event,
        run_status: str,
        *,
        activity: ActivityId | None = None,
        activity_status: str | None = None,
        model_iterations: int,
        tool_calls: int,
        total_tokens: int,
    ) -> None:
        self.event = event
        self.run_status = run_status
        self.activity = activity
        self.activity_status = activity_status
        self.model_iterations = model_iterations
        self.tool_calls = tool_calls
        self.total_tokens = total_tokens


def seed_001_steps() -> list[SeedStep]:
    """The 18 events of seed 001's read-then-write run (one second apart) with the expected state after each."""
    f = EventFactory(SEED_RUN_ID)
    steps: list[SeedStep] = []

    def step(
        event: Event, status: str, act: ActivityId | None, act_status: str | None, it: int, tc: int, tok: int
    ) -> None:
        steps.append(
            SeedStep(
                event,
                status,
                activity=act,
                activity_status=act_status,
                model_iterations=it,
                tool_calls=tc,
                total_tokens=tok,
            )
        )

    step(f.run_created(SEED_LIMITS, session_id=SEED_SESSION_ID), "queued", None, None, 0, 0, 0)
    step(f.run_started(), "running", None, None, 0, 0, 0)
    step(f.model_requested(M1, MC1), "running", M1, "pending", 1, 0, 0)
    step(f.model_started(), "running", M1, "running", 1, 0, 0)
    step(f.model_completed(420, 28, 0), "running", M1, "succeeded", 1, 0, 448)
    step(f.tool_requested("workspace.read", T1, TC1), "running", T1, "pending", 1, 1, 448)
    step(f.tool_started(), "running", T1, "running", 1, 1, 448)
    step(f.tool_completed(), "running", T1, "succeeded", 1, 1, 448)
    step(f.model_requested(M2, MC2), "running", M2, "pending", 2, 1, 448)
    step(f.model_started(), "running", M2, "running", 2, 1, 448)
    step(f.model_completed(620, 40, 0), "running", M2, "succeeded", 2, 1, 1108)
    step(f.tool_requested("workspace.write", T2, TC2), "running", T2, "pending", 2, 2, 1108)
    step(f.tool_started(), "running", T2, "running", 2, 2, 1108)
    step(f.tool_completed(), "running", T2, "succeeded", 2, 2, 1108)
    step(f.model_requested(M3, MC3), "running", M3, "pending", 3, 2, 1108)
    step(f.model_started(), "running", M3, "running", 3, 2, 1108)
    step(f.model_completed(180, 12, 0), "running", M3, "succeeded", 3, 2, 1300)
    step(f.run_succeeded(), "succeeded", None, None, 3, 2, 1300)
    return steps
