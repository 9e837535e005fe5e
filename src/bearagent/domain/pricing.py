"""Cost of a model call in micro-USD from the model entry's price (0 when no price is configured)."""

from __future__ import annotations

from bearagent.domain.budgets import TokenUsage
from bearagent.domain.specs import ModelPrice


def cost_microusd(usage: TokenUsage, price: ModelPrice | None) -> int:
    """USD per million tokens * tokens = micro-USD per token * tokens; rounded up so a budget is never undercounted."""
    if price is None:
        return 0
    exact = usage.input_tokens * price.input_usd_per_mtok + usage.output_tokens * price.output_usd_per_mtok
    whole = int(exact)
    return whole if whole == exact else whole + 1
