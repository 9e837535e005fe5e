"""WebSearch's own backends (Brave Search, Tavily, SearXNG, Exa) against local 127.0.0.1 servers that check each
API's documented request (method, path, query parameters, auth header, JSON body) and answer its documented
response shape; bounded, cited results; the errors that name what to set."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.support.search_server import SearchServer, Seen, search_server
from tests.support.tools import context_for, native_gate, request

from bearagent.domain._base import JsonValue
from bearagent.domain.tools import ToolResult
from bearagent.tools.search_backends import MAX_RESPONSE_BYTES, WEB_SEARCH_SETTING, key_variable, web_search_settings


@pytest.fixture
def server() -> Iterator[SearchServer]:
    with search_server() as state:
        yield state


def search(root: Path, config: dict[str, object], env: dict[str, str], **arguments: object) -> ToolResult:
    settings: dict[str, JsonValue] = web_search_settings(config, env)
    context = context_for(root, **settings)
    return asyncio.run(native_gate().call(request("WebSearch", {"query": "bear facts", **arguments}), context))


def ok(payload: object) -> Callable[[Seen], tuple[int, bytes]]:
    return lambda _: (200, json.dumps(payload).encode())


def test_brave_request_and_response(server: SearchServer, tmp_path: Path) -> None:
    server.reply = ok(
        {
            "type": "search",
            "web": {
                "results": [
                    {"title": "Bears", "url": "https://bears.example/a", "description": "Facts <strong>about</strong>"},
                    {"title": "Not a link", "url": "javascript:alert(1)", "description": "dropped"},
                ]
            },
        }
    )
    result = search(tmp_path, {"provider": "brave", "base_url": server.url}, {"BRAVE_API_KEY": "brave-key"})
    assert result.status == "succeeded", result.content
    (seen,) = server.seen
    assert (seen.method, seen.path) == ("GET", "/res/v1/web/search")
    assert seen.query == {"q": ["bear facts"], "count": ["10"]}
    assert seen.headers["x-subscription-token"] == "brave-key" and seen.headers["accept"] == "application/json"
    assert "1. [Bears](https://bears.example/a)\n   Facts <strong>about</strong>" in result.content
    assert "cite" in result.content and "javascript" not in result.content
    assert result.data is not None and result.data["provider"] == "brave"
    assert [dict(r) for r in result.data["results"]] == [  # type: ignore[union-attr]
        {"title": "Bears", "url": "https://bears.example/a", "snippet": "Facts <strong>about</strong>"}
    ]


def test_tavily_request_and_response(server: SearchServer, tmp_path: Path) -> None:
    server.reply = ok(
        {
            "query": "bear facts",
            "results": [{"title": "T", "url": "https://docs.example/t", "content": "snippet", "score": 0.9}],
        }
    )
    config: dict[str, object] = {"provider": "tavily", "base_url": server.url, "max_results": 5}
    result = search(
        tmp_path, config, {"TAVILY_API_KEY": "tvly-key"}, allowed_domains=["docs.example"], blocked_domains=["x.com"]
    )
    assert result.status == "succeeded", result.content
    (seen,) = server.seen
    assert (seen.method, seen.path) == ("POST", "/search")
    assert seen.headers["authorization"] == "Bearer tvly-key" and "application/json" in seen.headers["content-type"]
    assert seen.body["query"] == "bear facts" and seen.body["include_domains"] == ["docs.example"]
    assert seen.body["exclude_domains"] == ["x.com"] and seen.body["max_results"] == 20  # filtered here too
    assert "[T](https://docs.example/t)\n   snippet" in result.content


def test_searxng_request_and_response_needs_no_key(server: SearchServer, tmp_path: Path) -> None:
    server.reply = ok(
        {
            "query": "bear facts",
            "results": [
                {"title": "S", "url": "https://a.example/s", "content": "from searx", "engine": "duckduckgo"},
                {"title": "Blocked", "url": "https://www.spam.example/x", "content": "no"},
                {"title": "Other", "url": "https://b.example/o", "content": "kept"},
            ],
        }
    )
    result = search(
        tmp_path, {"provider": "searxng", "base_url": server.url + "/"}, {}, blocked_domains=["spam.example"]
    )
    assert result.status == "succeeded", result.content
    (seen,) = server.seen
    assert (seen.method, seen.path) == ("GET", "/search")
    assert seen.query == {"q": ["bear facts"], "format": ["json"]}
    assert "authorization" not in seen.headers
    assert "from searx" in result.content and "spam" not in result.content and "b.example/o" in result.content
    only = search(tmp_path, {"provider": "searxng", "base_url": server.url}, {}, allowed_domains=["a.example"])
    assert "a.example/s" in only.content and "b.example" not in only.content


def test_exa_request_and_response(server: SearchServer, tmp_path: Path) -> None:
    server.reply = ok(
        {
            "requestId": "r1",
            "results": [
                {"id": "1", "title": "E", "url": "https://e.example/1", "text": "exa text"},
                {"id": "2", "title": None, "url": "https://e.example/2", "highlights": ["one", "two"]},
            ],
        }
    )
    result = search(tmp_path, {"provider": "exa", "base_url": server.url}, {"EXA_API_KEY": "exa-key"})
    assert result.status == "succeeded", result.content
    (seen,) = server.seen
    assert (seen.method, seen.path) == ("POST", "/search")
    assert seen.headers["x-api-key"] == "exa-key"
    assert seen.body["query"] == "bear facts" and seen.body["numResults"] == 10
    assert seen.body["contents"] == {"text": {"maxCharacters": 500}}
    assert "[E](https://e.example/1)\n   exa text" in result.content
    assert "[https://e.example/2](https://e.example/2)\n   one … two" in result.content


def test_results_are_bounded(server: SearchServer, tmp_path: Path) -> None:
    many = [{"title": "t" * 1000, "url": f"https://m.example/{i}", "description": "d" * 5000} for i in range(50)]
    server.reply = ok({"web": {"results": many}})
    result = search(tmp_path, {"provider": "brave", "base_url": server.url, "max_results": 3}, {"BRAVE_API_KEY": "k"})
    assert result.data is not None and len(result.data["results"]) == 3  # type: ignore[arg-type]
    assert server.seen[0].query["count"] == ["3"]
    assert len(result.content) < 4_000
    server.reply = lambda _: (200, b"[" + b'"x",' * (MAX_RESPONSE_BYTES // 4) + b'"x"]')
    huge = search(tmp_path, {"provider": "brave", "base_url": server.url}, {"BRAVE_API_KEY": "k"})
    assert huge.error is not None and huge.error.code == "network.search_response_too_large"


@pytest.mark.parametrize(
    ("status", "body", "code", "words"),
    [
        (401, b"{}", "authentication.search_key_rejected", "BRAVE_API_KEY"),
        (429, b"{}", "rate_limit.search_rate_limited", "429"),
        (502, b"{}", "network.search_failed", "HTTP 502"),
        (200, b"<html>", "network.search_bad_response", "did not answer JSON"),
    ],
)
def test_service_failures_say_what_to_check(
    server: SearchServer, tmp_path: Path, status: int, body: bytes, code: str, words: str
) -> None:
    server.reply = lambda _: (status, body)
    result = search(tmp_path, {"provider": "brave", "base_url": server.url}, {"BRAVE_API_KEY": "k"})
    assert result.error is not None and result.error.code == code and words in result.content


def test_configuration_errors_name_the_key_to_set(tmp_path: Path) -> None:
    none = search(tmp_path, {}, {})
    assert none.error is not None and none.error.code == "configuration.web_search_unconfigured"
    assert "web_search: {provider: brave}" in none.content
    no_key = search(tmp_path, {"provider": "tavily"}, {})
    assert no_key.error is not None and "TAVILY_API_KEY" in no_key.content and "api_key_env" in no_key.content
    other_var = search(tmp_path, {"provider": "exa", "api_key_env": "MY_EXA"}, {})
    assert other_var.error is not None and "MY_EXA" in other_var.content
    unknown = search(tmp_path, {"provider": "google"}, {})
    assert unknown.error is not None and "brave, tavily, searxng, exa" in unknown.content
    no_url = search(tmp_path, {"provider": "searxng"}, {})
    assert no_url.error is not None and "web_search.base_url" in no_url.content
    bad_url = search(tmp_path, {"provider": "searxng", "base_url": "file:///etc"}, {})
    assert bad_url.error is not None and "not an http(s) URL" in bad_url.content
    unreachable = search(tmp_path, {"provider": "searxng", "base_url": "http://127.0.0.1:9"}, {})
    assert unreachable.error is not None and unreachable.error.code == "network.search_unreachable"


def test_the_key_variable_is_the_conventional_one_unless_configured() -> None:
    assert key_variable({"provider": "brave"}) == "BRAVE_API_KEY"
    assert key_variable({"provider": "exa", "api_key_env": "MINE"}) == "MINE"
    assert key_variable({"provider": "searxng"}) is None
    entry = web_search_settings({"provider": "brave"}, {"BRAVE_API_KEY": "k"})[WEB_SEARCH_SETTING]
    assert entry == {
        "provider": "brave",
        "base_url": "https://api.search.brave.com",
        "api_key_env": "BRAVE_API_KEY",
        "api_key": "k",
        "max_results": None,
    }
