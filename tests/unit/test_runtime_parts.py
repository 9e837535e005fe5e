"""Units of the runtime: retry policy, context builder, bounding tool results, history from the log."""

from __future__ import annotations

import random
from datetime import date
from pathlib import Path

from bearagent.domain.budgets import TokenUsage
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.pricing import cost_microusd
from bearagent.domain.specs import ModelPrice
from bearagent.runtime.context import ContextBuilder, ContextParts, bound_for_model
from bearagent.runtime.retry import RetryPolicy


def test_retry_only_retryable_errors_and_at_most_max_attempts() -> None:
    policy = RetryPolicy(max_attempts=3, base_delay_s=1.0, jitter=0.0)
    overloaded = ErrorInfo.of("overloaded", "busy", "busy", retryable=True)
    assert policy.delay_for(ErrorInfo.of("authentication", "bad_key", "no"), 1) is None
    assert policy.delay_for(overloaded, 1) == 1.0
    assert policy.delay_for(overloaded, 2) == 2.0
    assert policy.delay_for(overloaded, 3) is None


def test_retry_honours_retry_after_but_not_beyond_the_cap() -> None:
    policy = RetryPolicy(max_attempts=5, max_delay_s=30.0)
    soon = ErrorInfo.of("rate_limit", "exceeded", "slow down", retryable=True, retry_after_s=7.0)
    late = ErrorInfo.of("rate_limit", "exceeded", "slow down", retryable=True, retry_after_s=120.0)
    assert policy.delay_for(soon, 1) == 7.0
    assert policy.delay_for(late, 1) is None


def test_retry_jitter_stays_within_its_band() -> None:
    policy = RetryPolicy(max_attempts=10, base_delay_s=2.0, jitter=0.25, rng=random.Random(7))
    error = ErrorInfo.of("server", "error", "boom", retryable=True)
    delays = [policy.delay_for(error, 2) for _ in range(50)]
    assert all(d is not None and 3.0 <= d <= 5.0 for d in delays)
    assert len(set(delays)) > 1


def test_system_prompt_sections_come_in_a_fixed_order() -> None:
    parts = ContextParts(
        agent_name="build",
        agent_prompt="You build things.",
        workspace_root=Path("/ws"),
        today=date(2026, 11, 29),
        project_instructions="Use tabs.",
        project_instructions_source="AGENTS.md",
        skill_catalog="- review: reviews code",
        system_reminder="stay focused",
        unavailable_servers=("time: timed out after 20s",),
    )
    prompt = ContextBuilder().system_prompt(parts)
    order = [
        prompt.index("You build things."),
        prompt.index("# Project instructions (AGENTS.md)"),
        prompt.index("# Skills"),
        prompt.index("# Environment"),
        prompt.index("# Unavailable tool servers"),
    ]
    assert order == sorted(order)
    assert "2026-11-29" in prompt
    assert "stay focused" not in prompt  # the reminder is re-injected per request, not part of the prompt
    reminder = ContextBuilder.reminder_message("stay focused")
    assert reminder is not None and reminder.role == "user"
    assert "<system-reminder>" in reminder.text
    assert ContextBuilder.reminder_message("  ") is None
    assert len(ContextBuilder.prompt_hash(prompt)) == 64


def test_tool_results_are_bounded_for_the_model_with_a_visible_note() -> None:
    short = "x" * 100
    assert bound_for_model(short, limit=1_000) == short
    cut = bound_for_model("y" * 5_000, limit=1_000)
    assert len(cut) < 1_200
    assert "characters cut for the model; the full result is in the run log" in cut


def test_cost_rounds_up_and_is_zero_without_a_price() -> None:
    usage = TokenUsage(input_tokens=3, output_tokens=1)
    assert cost_microusd(usage, None) == 0
    assert cost_microusd(usage, ModelPrice(input_usd_per_mtok=0.25, output_usd_per_mtok=2.0)) == 3


def test_remaining_budget_is_what_the_usage_leaves_never_negative() -> None:
    from bearagent.domain.budgets import BudgetLimits, BudgetUsage

    limits = BudgetLimits(
        max_model_iterations=5, max_tool_calls=3, max_tokens=100, max_cost_microusd=50, max_wall_time_ms=1_000
    )
    usage = BudgetUsage(
        model_iterations=2, tool_calls=4, input_tokens=60, output_tokens=20, cost_microusd=10, wall_time_ms=1_500
    )
    left = limits.remaining(usage)
    assert left == BudgetLimits(
        max_model_iterations=3, max_tool_calls=0, max_tokens=20, max_cost_microusd=40, max_wall_time_ms=1
    )
