"""Cost of one model call in micro-USD, from the model entry's `price`.

`price: {input_usd_per_mtok, output_usd_per_mtok}` is USD per million tokens, which is exactly micro-USD per token.
Input tokens include cached ones (the entry has no cache price, so caching discounts are not modelled and the
figure errs high). The result is rounded up to a whole micro-USD. With no `price` configured the cost is 0, so a
`max_cost_microusd` budget never stops such a model: configure `price` to make the cost budget meaningful.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

from bearagent.domain.budgets import TokenUsage
from bearagent.domain.specs import ModelPrice


def cost_microusd(usage: TokenUsage, price: ModelPrice | None) -> int:
    """Micro-USD for `usage` at `price` (0 when `price` is None)."""
    if price is None:
        return 0
    total = Decimal(usage.input_tokens) * Decimal(str(price.input_usd_per_mtok)) + Decimal(
        usage.output_tokens
    ) * Decimal(str(price.output_usd_per_mtok))
    return int(total.to_integral_value(rounding=ROUND_CEILING))
