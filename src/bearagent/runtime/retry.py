"""Retry policy for model calls: bounded attempts, exponential backoff with jitter, `retry_after` honoured.

Adapters never retry; the loop asks this policy whether and when to try again, and records every attempt.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from bearagent.domain.errors import ErrorInfo


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    jitter: float = 0.25
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def delay_for(self, error: ErrorInfo, attempt: int) -> float | None:
        """Seconds to wait before attempt `attempt + 1`, or None when the error must not be retried.

        `attempt` is the 1-based number of the attempt that just failed. A server-given `retry_after_s` wins over
        the computed backoff (but is still capped by `max_delay_s`; a longer wait is not retried at all, like the
        OpenAI SDK does, so one slow server cannot hold a run hostage).
        """
        if not error.retryable or attempt >= self.max_attempts:
            return None
        if error.retry_after_s is not None:
            if error.retry_after_s > self.max_delay_s:
                return None
            return error.retry_after_s
        backoff = min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1)))
        spread = backoff * self.jitter
        return max(0.0, backoff + self.rng.uniform(-spread, spread))
