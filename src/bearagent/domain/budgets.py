"""The five run budgets and the usage counters checked against them."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from pydantic import Field

from bearagent.domain._base import DomainModel

BUDGETS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "max_model_iterations": ("model iterations", "Most model calls in the run."),
        "max_tool_calls": ("tool calls", "Most tool calls in the run."),
        "max_tokens": ("tokens", "Most input + output tokens in the run."),
        "max_cost_microusd": ("micro-USD of cost", "Most cost in micro-USD (needs `price:` on the model entry)."),
        "max_wall_time_ms": ("ms of wall time", "Most wall-clock time in milliseconds."),
    }
)
"""The one list of budgets: field -> (unit in messages, help of its `--max-*` flag). Config keys, CLI flags and the
reducer's budget errors are all made from it; `BudgetLimits` has exactly these fields (a test checks)."""

BUDGET_FIELDS: tuple[str, ...] = tuple(BUDGETS)


class BudgetLimits(DomainModel):
    """Hard limits for one run, checked before any new model or tool activity is admitted."""

    max_model_iterations: int = Field(default=50, ge=0, le=100_000)
    max_tool_calls: int = Field(default=200, ge=0, le=1_000_000)
    max_tokens: int = Field(default=2_000_000, ge=0, le=10_000_000_000)
    max_cost_microusd: int = Field(default=5_000_000, ge=0, le=10_000_000_000_000)
    max_wall_time_ms: int = Field(default=1_800_000, ge=0, le=7 * 24 * 3_600_000)

    def intersect(self, other: BudgetLimits) -> BudgetLimits:
        """The tighter of two limits, field by field (a child never gets more than its parent)."""
        return BudgetLimits(
            max_model_iterations=min(self.max_model_iterations, other.max_model_iterations),
            max_tool_calls=min(self.max_tool_calls, other.max_tool_calls),
            max_tokens=min(self.max_tokens, other.max_tokens),
            max_cost_microusd=min(self.max_cost_microusd, other.max_cost_microusd),
            max_wall_time_ms=min(self.max_wall_time_ms, other.max_wall_time_ms),
        )

    def above(self, requested: Mapping[str, int]) -> list[str]:
        """The fields of `requested` that ask for more than this ceiling, as `field N (ceiling M)`: a workspace or
        an API caller may lower budgets, never raise them above the user's or the server operator's."""
        return [
            f"{name} {value} (ceiling {getattr(self, name)})"
            for name, value in requested.items()
            if name in BUDGETS and value > getattr(self, name)
        ]

    def remaining(self, usage: BudgetUsage) -> BudgetLimits:
        """What is left after `usage` (never negative; at least 1 ms of wall time): a child run's budget is carved
        out of this."""
        return BudgetLimits(
            max_model_iterations=max(0, self.max_model_iterations - usage.model_iterations),
            max_tool_calls=max(0, self.max_tool_calls - usage.tool_calls),
            max_tokens=max(0, self.max_tokens - usage.total_tokens),
            max_cost_microusd=max(0, self.max_cost_microusd - usage.cost_microusd),
            max_wall_time_ms=max(1, self.max_wall_time_ms - usage.wall_time_ms),
        )


class TokenUsage(DomainModel):
    """Tokens one model call consumed, as the provider reported them."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class BudgetUsage(DomainModel):
    """What a run has consumed so far; `total_tokens` is what `max_tokens` limits."""

    model_iterations: int = Field(default=0, ge=0)
    tool_calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost_microusd: int = Field(default=0, ge=0)
    wall_time_ms: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens
