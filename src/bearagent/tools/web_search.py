"""`WebSearch{query, allowed_domains?, blocked_domains?}`: a port. The tool exists only when a plugin gives a
`WebSearchBackend`; without one it is absent from the tool list, not broken."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg

MAX_RESULTS = 10


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


SPEC = ToolSpec(
    name="WebSearch",
    description=(
        "Search the web. Returns titles, URLs and snippets; use WebFetch to read a page. `allowed_domains` / "
        "`blocked_domains` restrict the result domains."
    ),
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 2, "maxLength": 1000},
                "allowed_domains": {"type": "array", "items": {"type": "string"}, "maxItems": 50},
                "blocked_domains": {"type": "array", "items": {"type": "string"}, "maxItems": 50},
            },
            "required": ["query"],
            "additionalProperties": False,
        }
    ),
    side_effect="network",
    version="1",
    timeout_ms=60_000,
)


def _strings(value: JsonValue | None) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


class WebSearchTool(NativeTool):
    def __init__(self, backend: WebSearchBackend) -> None:
        super().__init__(SPEC)
        self._backend = backend

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        return {
            "query": str_arg(arguments, "query").strip(),
            "allowed_domains": _strings(arguments.get("allowed_domains")),
            "blocked_domains": _strings(arguments.get("blocked_domains")),
        }

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        query = str_arg(arguments, "query")
        hits = list(
            await self._backend.search(
                query,
                max_results=MAX_RESULTS,
                allowed_domains=_strings(arguments.get("allowed_domains")),
                blocked_domains=_strings(arguments.get("blocked_domains")),
            )
        )[:MAX_RESULTS]
        results = [{"title": h.title[:500], "url": h.url[:2000], "snippet": h.snippet[:2000]} for h in hits]
        if not results:
            content = f"No web results for {query!r}."
        else:
            content = "\n\n".join(
                f"{i}. [{r['title']}]({r['url']})" + (f"\n   {r['snippet']}" if r["snippet"] else "")
                for i, r in enumerate(results, 1)
            )
        return self.ok(context, content, {"query": query, "results": results})
