"""What a model server offers: the model ids its `GET /models` listing names (`models list --remote`, `/model`).

Anthropic's API lists at `<base>/v1/models` (with `x-api-key` and `anthropic-version`), OpenAI's and every
OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio) at `<base>/models` (with a bearer key). The server is
the one the model entry already talks to, with the key the entry already sends, so asking it goes nowhere the user
did not choose. The answer is untrusted: at most `MAX_LISTING_BYTES` are read, ids are strings of at most 256
printable characters, at most `MAX_LISTED_IDS` are kept (the total is counted), and an error names the status or
the failure, never the body (a hostile server could echo the key back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from bearagent.domain.errors import BearAgentError
from bearagent.domain.specs import ModelEntry

LISTING_PROVIDERS = frozenset({"anthropic", "openai", "openai-compatible"})
MAX_LISTING_BYTES = 1_048_576
MAX_LISTED_IDS = 200
MAX_ID_CHARS = 256
LISTING_TIMEOUT_S = 5.0
ANTHROPIC_VERSION = "2023-06-01"


@dataclass(frozen=True, slots=True)
class ServerModels:
    """One server's listing: its endpoint (no key in it), the ids it names (at most `MAX_LISTED_IDS`, in its order),
    how many it named in all, and the failure when it could not be read (then `ids` is empty)."""

    endpoint: str
    provider: str
    ids: tuple[str, ...] = ()
    total: int = 0
    error: str | None = None


def listing_endpoint(entry: ModelEntry, env: Mapping[str, str]) -> tuple[str, dict[str, str]] | None:
    """The listing URL of `entry`'s server and the headers to send (its key), or None when the entry's provider has
    no listing (scripted, a plugin's) or its settings are incomplete (no base URL, a missing key: `doctor` says so)."""
    from bearagent.providers.factory import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, provider_settings

    if entry.provider not in LISTING_PROVIDERS or not entry.model:
        return None
    anthropic = entry.provider == "anthropic"
    if entry.provider == "openai-compatible" and not entry.base_url:
        return None
    try:
        settings = provider_settings(
            entry,
            env,
            label=entry.provider,
            default_base_url=ANTHROPIC_BASE_URL if anthropic else OPENAI_BASE_URL,
            default_key_env="ANTHROPIC_API_KEY"
            if anthropic
            else ("OPENAI_API_KEY" if entry.provider == "openai" else None),
        )
    except BearAgentError:
        return None
    if anthropic:
        return settings.base_url + "/v1/models?limit=1000", {
            "x-api-key": settings.api_key,
            "anthropic-version": ANTHROPIC_VERSION,
        }
    return settings.base_url + "/models", {"authorization": f"Bearer {settings.api_key}"}


def ids_from_listing(body: object) -> tuple[tuple[str, ...], int]:
    """The ids a listing body names (`{"data": [{"id": ...}, ...]}`, the shape both APIs use), bounded, and the
    total it named. Anything else in the body is ignored; ids that are not short printable strings are dropped."""
    if not isinstance(body, Mapping):
        return (), 0
    data = cast(Mapping[str, object], body).get("data")
    if not isinstance(data, Sequence) or isinstance(data, str):
        return (), 0
    ids: list[str] = []
    for item in cast(Sequence[object], data):
        if not isinstance(item, Mapping):
            continue
        found = cast(Mapping[str, object], item).get("id")
        if isinstance(found, str) and 0 < len(found) <= MAX_ID_CHARS and found.isprintable():
            ids.append(found)
    unique = list(dict.fromkeys(ids))
    return tuple(unique[:MAX_LISTED_IDS]), len(unique)


def fetch_server_models(
    entry: ModelEntry, env: Mapping[str, str], *, timeout_s: float = LISTING_TIMEOUT_S
) -> ServerModels:
    """Ask `entry`'s server for its listing (blocking, at most `timeout_s`). Never raises for a server's failure."""
    import httpx

    found = listing_endpoint(entry, env)
    if found is None:
        return ServerModels(endpoint="", provider=entry.provider, error="this provider has no model listing")
    url, headers = found
    endpoint = url.split("?", 1)[0]
    try:
        with (
            httpx.Client(timeout=timeout_s, follow_redirects=False) as client,
            client.stream("GET", url, headers=headers) as response,
        ):
            if response.status_code != 200:
                return ServerModels(endpoint, entry.provider, error=f"the server answered HTTP {response.status_code}")
            raw = bytearray()
            for chunk in response.iter_bytes():
                raw += chunk
                if len(raw) > MAX_LISTING_BYTES:
                    return ServerModels(
                        endpoint, entry.provider, error=f"the listing is larger than {MAX_LISTING_BYTES:,} bytes"
                    )
    except httpx.TimeoutException:
        return ServerModels(endpoint, entry.provider, error=f"no answer within {timeout_s:g} s")
    except httpx.HTTPError as exc:
        return ServerModels(endpoint, entry.provider, error=f"not reachable ({type(exc).__name__})")
    try:
        body: object = json.loads(bytes(raw))
    except (ValueError, RecursionError):
        return ServerModels(endpoint, entry.provider, error="the listing is not JSON")
    ids, total = ids_from_listing(body)
    return ServerModels(endpoint, entry.provider, ids=ids, total=total)


def listed_endpoints(entries: Sequence[ModelEntry], env: Mapping[str, str], limit: int = 4) -> list[ModelEntry]:
    """One entry per distinct listing endpoint, in `entries`' order (the model in use first), at most `limit`."""
    seen: set[str] = set()
    picked: list[ModelEntry] = []
    for entry in entries:
        found = listing_endpoint(entry, env)
        if found is None or found[0] in seen:
            continue
        seen.add(found[0])
        picked.append(entry)
        if len(picked) == limit:
            break
    return picked
