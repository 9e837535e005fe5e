"""The search services WebSearch can use without a plugin: Brave Search, Tavily, SearXNG (its JSON API) and Exa,
chosen by the user's `web_search:` config section, each speaking its documented HTTP API through httpx (imported on
the first search). Keys come from environment variables, like model keys, and never reach Bash.

`web_search_settings(config, env)` turns the merged config into the `ToolContext.settings` entry the tool reads;
`backend_from_settings` builds the backend for one call (or raises an error naming the config key to set).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

from bearagent.domain._base import JsonValue
from bearagent.tools.base import tool_error
from bearagent.tools.search_hit import SearchHit

WEB_SEARCH_SETTING = "bearagent.web_search"
"""ToolContext.settings key: `{provider, base_url, api_key, api_key_env, max_results}` of the configured service."""
MAX_RESPONSE_BYTES = 2 * 1_048_576
REQUEST_TIMEOUT_S = 30.0
DEFAULT_MAX_RESULTS = 10
MAX_RESULTS_CAP = 20


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    base_url: str | None
    """The official endpoint; None for SearXNG, which is self-hosted (`web_search.base_url` is required)."""
    key_env: str | None
    """The conventional key variable; None: no key (SearXNG, unless `api_key_env` is set)."""


PROVIDERS: Mapping[str, Provider] = {
    "brave": Provider("brave", "https://api.search.brave.com", "BRAVE_API_KEY"),
    "tavily": Provider("tavily", "https://api.tavily.com", "TAVILY_API_KEY"),
    "searxng": Provider("searxng", None, None),
    "exa": Provider("exa", "https://api.exa.ai", "EXA_API_KEY"),
}
_HOW = (
    "Set `web_search: {provider: brave}` (or tavily, exa; or `{provider: searxng, base_url: https://your.searxng}`) "
    "in ~/.config/bearagent/config.yaml and export the key variable (BRAVE_API_KEY, TAVILY_API_KEY, EXA_API_KEY); "
    "see docs/tools.md#websearch."
)


def web_search_settings(config: Mapping[str, object], env: Mapping[str, str]) -> dict[str, JsonValue]:
    """The settings entry for the merged `web_search:` section (empty when no provider is set): the key is read
    from its variable here, once per plan, so a tool call never looks at the process environment."""
    provider = config.get("provider")
    if not isinstance(provider, str) or not provider:
        return {}
    known = PROVIDERS.get(provider)
    key_env = config.get("api_key_env")
    if not isinstance(key_env, str) or not key_env:
        key_env = known.key_env if known is not None else None
    base_url = config.get("base_url")
    if not isinstance(base_url, str) or not base_url:
        base_url = known.base_url if known is not None else None
    max_results = config.get("max_results")
    entry: dict[str, JsonValue] = {
        "provider": provider,
        "base_url": base_url,
        "api_key_env": key_env,
        "api_key": env.get(key_env, "") if key_env else "",
        "max_results": max_results if isinstance(max_results, int) and not isinstance(max_results, bool) else None,
    }
    return {WEB_SEARCH_SETTING: entry}


def key_variable(config: Mapping[str, object]) -> str | None:
    """The variable the configured service reads its key from (kept out of Bash's environment)."""
    key_env = config.get("api_key_env")
    if isinstance(key_env, str) and key_env:
        return key_env
    known = PROVIDERS.get(str(config.get("provider", "")))
    return known.key_env if known is not None else None


@dataclass(frozen=True, slots=True)
class HttpSearchBackend:
    """One configured search service (a `WebSearchBackend`)."""

    provider: str
    base_url: str
    api_key: str
    api_key_env: str | None
    max_results: int

    async def search(
        self,
        query: str,
        *,
        max_results: int,
        allowed_domains: Sequence[str] = (),
        blocked_domains: Sequence[str] = (),
    ) -> Sequence[SearchHit]:
        count = max(1, min(max_results, self.max_results))
        # ask for more when results will be filtered here (Brave and SearXNG have no domain parameters)
        wanted = MAX_RESULTS_CAP if (allowed_domains or blocked_domains) else count
        method, url, params, headers, body = self._request(query, wanted, allowed_domains, blocked_domains)
        data = await self._fetch(method, url, params, headers, body)
        hits = [h for h in _parse(self.provider, data) if _domain_ok(h.url, allowed_domains, blocked_domains)]
        return hits[:count]

    def _request(
        self, query: str, count: int, allowed: Sequence[str], blocked: Sequence[str]
    ) -> tuple[str, str, dict[str, str], dict[str, str], dict[str, Any] | None]:
        base = self.base_url.rstrip("/")
        headers = {"Accept": "application/json", "User-Agent": "BearAgent-WebSearch"}
        if self.provider == "brave":
            headers["X-Subscription-Token"] = self.api_key
            return "GET", f"{base}/res/v1/web/search", {"q": query, "count": str(count)}, headers, None
        if self.provider == "searxng":
            if self.api_key:
                headers["Authorization"] = f"Bearer {self.api_key}"
            return "GET", f"{base}/search", {"q": query, "format": "json"}, headers, None
        if self.provider == "tavily":
            headers["Authorization"] = f"Bearer {self.api_key}"
            body: dict[str, Any] = {"query": query, "max_results": count, "search_depth": "basic"}
            if allowed:
                body["include_domains"] = list(allowed)
            if blocked:
                body["exclude_domains"] = list(blocked)
            return "POST", f"{base}/search", {}, headers, body
        headers["x-api-key"] = self.api_key  # exa
        body = {"query": query, "numResults": count, "contents": {"text": {"maxCharacters": 500}}}
        if allowed:
            body["includeDomains"] = list(allowed)
        if blocked:
            body["excludeDomains"] = list(blocked)
        return "POST", f"{base}/search", {}, headers, body

    async def _fetch(
        self, method: str, url: str, params: dict[str, str], headers: dict[str, str], body: dict[str, Any] | None
    ) -> object:
        import httpx

        host = urlsplit(url).hostname or url
        try:
            client = httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S, follow_redirects=False, trust_env=False)
            async with client, client.stream(method, url, params=params or None, headers=headers, json=body) as answer:
                chunks: list[bytes] = []
                size = 0
                async for chunk in answer.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise tool_error(
                            "network",
                            "search_response_too_large",
                            f"The {self.provider} search service at {host} sent more than {MAX_RESPONSE_BYTES} "
                            "bytes; the answer was dropped. Check web_search.base_url.",
                        )
                    chunks.append(chunk)
                status = answer.status_code
        except httpx.HTTPError as exc:
            raise tool_error(
                "network",
                "search_unreachable",
                f"The {self.provider} search service at {host} could not be reached ({type(exc).__name__}). Check "
                "web_search.base_url and your network, then try again.",
            ) from None
        if status in (401, 403):
            raise tool_error(
                "authentication",
                "search_key_rejected",
                f"The {self.provider} search service rejected the key (HTTP {status}). Check the key in "
                f"{self.api_key_env or 'web_search.api_key_env'}.",
                status=status,
            )
        if status == 429:
            raise tool_error(
                "rate_limit",
                "search_rate_limited",
                f"The {self.provider} search service is rate-limiting requests (HTTP 429). Wait, or check your plan.",
                status=status,
            )
        if status >= 300:
            raise tool_error(
                "network",
                "search_failed",
                f"The {self.provider} search service at {host} answered HTTP {status}. Check web_search.base_url "
                "and try again later.",
                status=status,
            )
        try:
            return json.loads(b"".join(chunks))
        except ValueError:
            raise tool_error(
                "network",
                "search_bad_response",
                f"The {self.provider} search service at {host} did not answer JSON. Check web_search.base_url "
                "(SearXNG needs `json` in `search.formats` of its settings.yml).",
            ) from None


def backend_from_settings(settings: Mapping[str, object]) -> HttpSearchBackend:
    """The configured service; a tool error naming the config key (or key variable) to set when there is none."""
    raw = settings.get(WEB_SEARCH_SETTING)
    entry: Mapping[str, object] = cast(Mapping[str, object], raw) if isinstance(raw, Mapping) else {}
    provider = entry.get("provider")
    if not isinstance(provider, str) or not provider:
        raise tool_error("configuration", "web_search_unconfigured", f"WebSearch has no search service. {_HOW}")
    if provider not in PROVIDERS:
        raise tool_error(
            "configuration",
            "web_search_provider",
            f"web_search.provider {provider[:50]!r} is not a search service BearAgent knows. Use one of: "
            f"{', '.join(PROVIDERS)}.",
        )
    base_url = entry.get("base_url")
    if not isinstance(base_url, str) or not base_url:
        raise tool_error(
            "configuration",
            "web_search_base_url",
            f"web_search.provider {provider!r} needs web_search.base_url, the address of your instance "
            "(e.g. http://127.0.0.1:8888).",
        )
    if urlsplit(base_url).scheme not in ("http", "https"):
        raise tool_error(
            "configuration",
            "web_search_base_url",
            f"web_search.base_url {base_url[:100]!r} is not an http(s) URL. Write e.g. https://search.example.org.",
        )
    key_env = entry.get("api_key_env")
    key = entry.get("api_key")
    if PROVIDERS[provider].key_env is not None and not (isinstance(key, str) and key):
        raise tool_error(
            "configuration",
            "web_search_key_missing",
            f"WebSearch uses {provider}, but the variable {key_env} that holds its key is not set. Export "
            f"{key_env}, or set web_search.api_key_env to the variable that holds it.",
        )
    limit = entry.get("max_results")
    return HttpSearchBackend(
        provider=provider,
        base_url=base_url,
        api_key=key if isinstance(key, str) else "",
        api_key_env=key_env if isinstance(key_env, str) else None,
        max_results=max(1, min(limit, MAX_RESULTS_CAP)) if isinstance(limit, int) else DEFAULT_MAX_RESULTS,
    )


def _parse(provider: str, data: object) -> list[SearchHit]:
    """Titles, URLs and snippets from each service's documented response shape; anything else is skipped."""
    doc: Mapping[str, object] = cast(Mapping[str, object], data) if isinstance(data, Mapping) else {}
    if provider == "brave":
        web = doc.get("web")
        items = cast(Mapping[str, object], web).get("results") if isinstance(web, Mapping) else None
        snippet_keys = ("description",)
    else:
        items = doc.get("results")
        snippet_keys = ("content",) if provider in ("tavily", "searxng") else ("text", "summary", "highlights")
    hits: list[SearchHit] = []
    for item in cast(list[object], items) if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        fields = cast(Mapping[str, object], item)
        url = fields.get("url")
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
            continue
        title = fields.get("title")
        snippet = ""
        for key in snippet_keys:
            value = fields.get(key)
            if isinstance(value, list):
                value = " … ".join(v for v in cast(list[object], value) if isinstance(v, str))
            if isinstance(value, str) and value.strip():
                snippet = value
                break
        hits.append(SearchHit(title=title if isinstance(title, str) and title else url, url=url, snippet=snippet))
    return hits


def _domain_ok(url: str, allowed: Sequence[str], blocked: Sequence[str]) -> bool:
    host = (urlsplit(url).hostname or "").lower().rstrip(".")

    def under(domain: str) -> bool:
        d = domain.lower().strip().lstrip("*").lstrip(".").rstrip(".")
        return bool(d) and (host == d or host.endswith("." + d))

    if any(under(d) for d in blocked):
        return False
    return not allowed or any(under(d) for d in allowed)
