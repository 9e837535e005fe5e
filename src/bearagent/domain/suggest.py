"""The closest name to a mistyped one, for the "did you mean" of an error message. Pure (difflib only), so every
layer words its suggestions the same way."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate (case-insensitive exact match first, then difflib), or None."""
    pool = list(candidates)
    lowered = {c.lower(): c for c in pool}
    if word.lower() in lowered:
        return lowered[word.lower()]
    squashed = {c.lower().replace("_", "").replace("-", ""): c for c in pool}
    key = word.lower().replace("_", "").replace("-", "")
    if key in squashed:
        return squashed[key]
    close = difflib.get_close_matches(word, pool, n=1, cutoff=0.6)
    return close[0] if close else None


def suggestion(word: str, candidates: Iterable[str]) -> str:
    """`" (did you mean 'x'?)"` or an empty string."""
    guess = did_you_mean(word, candidates)
    return f" (did you mean {guess!r}?)" if guess else ""
