"""The context window an OpenAI-compatible server reports for its model, read from its `GET /models` listing.

Servers say it in their own fields: llama.cpp's llama-server `meta.n_ctx_train` (and `n_ctx`, the size it was
started with, which wins when both are there: it is the window requests really get), vLLM `max_model_len`,
LM Studio and OpenRouter `context_length`, others `context_window` or `max_context_length`. OpenAI's own API
lists no window, so `api.openai.com` is not asked. The listing is asked once per provider (`ListingWindow`), on
the first request whose size is checked, with a short timeout; a server that does not answer, or answers without
a window, leaves the window to the entry's model name (`runtime/context_size.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import cast
from urllib.parse import urlsplit

LISTING_TIMEOUT_S = 5.0
_WINDOW_KEYS = ("n_ctx", "n_ctx_train", "max_model_len", "context_length", "context_window", "max_context_length")
_NO_LISTING_HOSTS = frozenset({"api.openai.com"})


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _window_of(entry: Mapping[str, object]) -> int | None:
    for where in (entry.get("meta"), entry):  # llama.cpp nests its figures under `meta`
        if isinstance(where, Mapping):
            fields = cast(Mapping[str, object], where)
            for key in _WINDOW_KEYS:
                found = _int(fields.get(key))
                if found is not None:
                    return found
    return None


def window_from_listing(body: object, model: str) -> int | None:
    """The window a `/models` body reports for `model` (the entry whose `id` is `model`, else the only entry)."""
    if not isinstance(body, Mapping):
        return None
    data = cast(Mapping[str, object], body).get("data")
    if not isinstance(data, Sequence) or isinstance(data, str):
        return None
    entries = [cast(Mapping[str, object], e) for e in cast(Sequence[object], data) if isinstance(e, Mapping)]
    named = [e for e in entries if e.get("id") == model]
    if named:
        return _window_of(named[0])
    return _window_of(entries[0]) if len(entries) == 1 else None


def lists_windows(base_url: str) -> bool:
    """Whether the server at `base_url` may report windows in its listing (not OpenAI's own API)."""
    return (urlsplit(base_url).hostname or "") not in _NO_LISTING_HOSTS


async def fetch_window(base_url: str, model: str, headers: Mapping[str, str]) -> int | None:
    """GET `<base_url>/models` and read `model`'s window; None on any failure (the listing is a hint)."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=LISTING_TIMEOUT_S) as client:
            response = await client.get(base_url.rstrip("/") + "/models", headers=dict(headers))
        if response.status_code != 200:
            return None
        return window_from_listing(response.json(), model)
    except (httpx.HTTPError, ValueError):
        return None


class ListingWindow:
    """The window one provider's server reports, asked at most once (concurrent first askers share the call)."""

    def __init__(self, base_url: str, model: str, headers: Mapping[str, str]) -> None:
        self._base_url = base_url
        self._model = model
        self._headers = dict(headers)
        self._task: asyncio.Future[int | None] | None = None
        self.asked = 0
        """How many requests went to the listing (0 or 1)."""

    async def get(self) -> int | None:
        if not lists_windows(self._base_url):
            return None
        task = self._task
        if task is None:
            self.asked += 1
            task = self._task = asyncio.ensure_future(fetch_window(self._base_url, self._model, self._headers))
        if task.done():
            return task.result()
        if task.get_loop() is not asyncio.get_running_loop():
            return None  # being asked on another event loop: its answer is there for the next request
        return await asyncio.shield(task)
