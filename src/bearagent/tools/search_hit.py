"""What a web search gives (`SearchHit`) and the port of a search service (`WebSearchBackend`): a leaf that the
WebSearch tool and the built-in services (`search_backends`) both use (plugin authors import them from
`bearagent.plugin`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class SearchHit:
    title: str
    url: str
    snippet: str = ""


@runtime_checkable
class WebSearchBackend(Protocol):
    """A search provider. Raise `BearAgentError` (category network/rate_limit/...) on failure."""

    async def search(
        self,
        query: str,
        *,
        max_results: int,
        allowed_domains: Sequence[str] = (),
        blocked_domains: Sequence[str] = (),
    ) -> Sequence[SearchHit]: ...
