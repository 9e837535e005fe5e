"""A search of the run log (`bearagent runs search`, `GET /v1/workspaces/{ws}/runs?q=`): what is asked, what is
found, and the rules both stores apply alike (how many words, how many hits, how long a snippet).

The text searched is what people remember of a run: its prompt, the model's answers, tool calls' arguments and
results, errors (`runtime/search_text.py` picks it out of the events). The stores keep a full-text index of it
(SQLite FTS5, PostgreSQL `tsvector`), brought up to date with the log before each search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.state import RunStatus

MAX_QUERY_CHARS = 500
MAX_WORDS = 16
MAX_HITS = 200
DEFAULT_HITS = 20
SNIPPET_CHARS = 300

_WORD = re.compile(r"\w+", re.UNICODE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _invalid(code: str, message: str, fix: str) -> BearAgentError:
    return BearAgentError(ErrorInfo.of("validation", code, message), hint=fix)


@dataclass(frozen=True, slots=True)
class RunSearch:
    """What to look for: every word of `text` (case- and accent-insensitive, whole words), in runs matching the
    filters. Build it with `RunSearch.of`, which checks the bounds."""

    words: tuple[str, ...]
    agent: str | None = None
    status: RunStatus | None = None
    since: datetime | None = None
    session_id: SessionId | None = None
    caller: str | None = None
    """Only runs of sessions created by this caller (the server's tenant filter); None: every run."""
    limit: int = DEFAULT_HITS

    @classmethod
    def of(
        cls,
        text: str,
        *,
        agent: str | None = None,
        status: RunStatus | None = None,
        since: datetime | None = None,
        session_id: SessionId | None = None,
        caller: str | None = None,
        limit: int = DEFAULT_HITS,
    ) -> RunSearch:
        if len(text) > MAX_QUERY_CHARS:
            raise _invalid(
                "search_too_long",
                f"the search text has {len(text)} characters; at most {MAX_QUERY_CHARS} are searched",
                "search for fewer, more distinctive words",
            )
        words = tuple(dict.fromkeys(word.casefold() for word in _WORD.findall(text)))
        if not words:
            raise _invalid(
                "search_empty",
                f"the search text {text[:80]!r} has no word to look for",
                "give at least one word (letters or digits)",
            )
        if len(words) > MAX_WORDS:
            raise _invalid(
                "search_too_many_words",
                f"the search text has {len(words)} different words; at most {MAX_WORDS} are searched together",
                "drop the common ones",
            )
        if not 1 <= limit <= MAX_HITS:
            raise _invalid("search_limit", f"the search limit {limit} is out of range", f"give 1 to {MAX_HITS}")
        return cls(words, agent, status, since, session_id, caller, limit)


@dataclass(frozen=True, slots=True)
class RunSearchHit:
    """One run whose text holds every word: the run's row facts and the best-matching piece of its text."""

    run_id: RunId
    session_id: SessionId | None
    status: str
    agent_name: str | None
    created_at: datetime
    goal: str | None
    sequence: int
    """The event whose text matched best (`bearagent events RUN` shows it)."""
    event_type: str
    snippet: str
    """Up to `SNIPPET_CHARS` characters around the words, the words marked `[like this]`, control characters gone."""


def clean_snippet(text: str) -> str:
    """A snippet safe to print in a terminal or a page: no control or bidi characters, whitespace folded, bounded."""
    folded = " ".join(_CONTROL.sub(" ", text).split())
    if len(folded) > SNIPPET_CHARS:
        folded = folded[: SNIPPET_CHARS - 1] + "…"
    return folded
