"""A server's model listing is untrusted: bounded, printable ids only, never an exception (`providers/model_ids.py`)."""

from __future__ import annotations

from bearagent.domain.specs import ModelEntry
from bearagent.providers.model_ids import MAX_LISTED_IDS, ids_from_listing, listing_endpoint


def test_a_listing_is_bounded_and_keeps_only_printable_short_ids() -> None:
    body = {"data": [{"id": f"m-{i}"} for i in range(1_000)] + [{"id": "x\x1b[2J"}, {"id": "y" * 300}, {"id": 7}, "z"]}
    ids, total = ids_from_listing(body)
    assert len(ids) == MAX_LISTED_IDS and ids[0] == "m-0" and total == 1_000
    assert ids_from_listing({"data": [{"id": "a"}, {"id": "a"}]}) == (("a",), 1)  # repeated ids once
    odds: list[object] = [None, [], "data", {"data": "abc"}, {"data": {"id": "a"}}, {"models": []}]
    for odd in odds:
        assert ids_from_listing(odd) == ((), 0)


def test_the_endpoint_is_the_one_the_entry_talks_to_with_its_key() -> None:
    anthropic = ModelEntry(name="c", level="platform", provider="anthropic", model="claude-sonnet-4-5", source="x")
    assert listing_endpoint(anthropic, {}) is None  # no key: doctor says so, nothing is asked
    url, headers = listing_endpoint(anthropic, {"ANTHROPIC_API_KEY": "k"}) or ("", {})
    assert url == "https://api.anthropic.com/v1/models?limit=1000" and headers["x-api-key"] == "k"
    local = ModelEntry(
        name="l",
        level="workspace",
        provider="openai-compatible",
        model="qwen",
        base_url="http://127.0.0.1:8080/v1/",
        source="x",
    )
    url, headers = listing_endpoint(local, {}) or ("", {})
    assert url == "http://127.0.0.1:8080/v1/models" and headers["authorization"].startswith("Bearer ")
    scripted = ModelEntry(name="s", level="workspace", provider="scripted", script="s.yaml", source="x")
    assert listing_endpoint(scripted, {}) is None
