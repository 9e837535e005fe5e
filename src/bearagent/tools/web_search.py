"""`WebSearch{query, allowed_domains?, blocked_domains?}`: the search service a plugin gives (a `WebSearchBackend`),
else the one the user configured (`web_search:`, `tools/search_backends.py`); without either, a call fails with
an error naming the config key to set."""

from __future__ import annotations

from collections.abc import Mapping

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg
from bearagent.tools.search_hit import WebSearchBackend

MAX_RESULTS = 10
MAX_HITS = 20


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
    def __init__(self, backend: WebSearchBackend | None = None) -> None:
        super().__init__(SPEC)
        self._backend = backend

    @property
    def backend(self) -> WebSearchBackend | None:
        """The plugin's backend; None: the service of the user's `web_search:` config."""
        return self._backend

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        return {
            "query": str_arg(arguments, "query").strip(),
            "allowed_domains": _strings(arguments.get("allowed_domains")),
            "blocked_domains": _strings(arguments.get("blocked_domains")),
        }

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        query = str_arg(arguments, "query")
        backend = self._backend
        limit = MAX_RESULTS
        provider = "plugin"
        if backend is None:
            from bearagent.tools.search_backends import backend_from_settings

            configured = backend_from_settings(context.settings)
            backend, limit, provider = configured, configured.max_results, configured.provider
        hits = list(
            await backend.search(
                query,
                max_results=limit,
                allowed_domains=_strings(arguments.get("allowed_domains")),
                blocked_domains=_strings(arguments.get("blocked_domains")),
            )
        )[: min(limit, MAX_HITS)]
        results = [
            {
                "title": " ".join(h.title.split())[:300],
                "url": h.url[:2000],
                "snippet": " ".join(h.snippet.split())[:600],
            }
            for h in hits
        ]
        if not results:
            content = f"No web results for {query!r}."
        else:
            content = (
                f"Web results for {query!r} (cite what you use as [title](url); use WebFetch to read a page):\n\n"
                + "\n\n".join(
                    f"{i}. [{r['title']}]({r['url']})" + (f"\n   {r['snippet']}" if r["snippet"] else "")
                    for i, r in enumerate(results, 1)
                )
            )
        return self.ok(context, content, {"query": query, "provider": provider, "results": results})
