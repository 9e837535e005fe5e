"""`WebFetch{url, prompt?}`: fetch an http(s) page and return it as Markdown (HTML) or text.

Every URL (the first and each redirect target) is checked: scheme http/https, no credentials in the URL, and every
address its host resolves to must be public, unless the setting `allow_private_network` is true. Redirects are
followed manually (at most `MAX_REDIRECTS`), the body is streamed and cut at `MAX_BYTES`, the whole fetch is bounded
by `TIMEOUT_S`. httpx is imported when a fetch runs, not when the tool set is built.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit, urlunsplit

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error

if TYPE_CHECKING:
    import httpx

MAX_REDIRECTS = 5
MAX_BYTES = 5 * 1024 * 1024
MAX_CONTENT_CHARS = 90_000
TIMEOUT_S = 30.0
USER_AGENT = "BearAgent-WebFetch/0.1 (+https://github.com/bearagent)"
_NON_CONTENT_RE = re.compile(r"<(script|style|noscript|template)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "application/javascript")

SPEC = ToolSpec(
    name="WebFetch",
    description=(
        "Fetch a web page (http/https) and return its content as Markdown (HTML is converted) or plain text. "
        "`prompt` says what you are looking for; the content is returned for you to read with that in mind. "
        f"Bodies over {MAX_BYTES // 1024 // 1024} MiB are cut; private and loopback addresses are refused."
    ),
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 8192,
                    "description": "The http(s) URL to fetch.",
                },
                "prompt": {"type": "string", "maxLength": 4000, "description": "What to look for in the page."},
            },
            "required": ["url"],
            "additionalProperties": False,
        }
    ),
    side_effect="network",
    version="1",
    timeout_ms=int(TIMEOUT_S * 1000) + 5_000,
)


def _check_url(url: str) -> tuple[str, int]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise tool_error("validation", "invalid_url", f"{url[:200]!r} is not a valid URL ({exc}).") from None
    if parts.scheme not in ("http", "https"):
        raise tool_error(
            "validation",
            "invalid_url",
            f"WebFetch only fetches http and https URLs, not {parts.scheme or 'scheme-less'!r} ones: {url[:200]!r}.",
        )
    if not parts.hostname:
        raise tool_error("validation", "invalid_url", f"URL {url[:200]!r} has no host name.")
    if parts.username or parts.password:
        raise tool_error("validation", "invalid_url", "URLs with credentials (user:password@) are not fetched.")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or (isinstance(ip, ipaddress.IPv4Address) and ip in ipaddress.ip_network("100.64.0.0/10"))
    )


async def _resolve(host: str, port: int, allow_private: bool) -> str:
    """Resolve `host`, check every address, and return the one to connect to (IPv4 first)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise tool_error("network", "dns", f"Could not resolve host {host!r}: {exc.strerror}. Check the URL.") from None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise tool_error("network", "dns", f"Host {host!r} has no address. Check the URL.")
    if not allow_private:
        for address in addresses:
            if not _public(address):
                raise tool_error(
                    "permission",
                    "private_address",
                    f"WebFetch refused {host!r}: it resolves to the non-public address {address}. Fetching private, "
                    "loopback and link-local addresses is off; set `allow_private_network: true` in the tool "
                    "settings to allow it.",
                    host=host[:200],
                )
    addresses.sort(key=lambda a: ":" in a)
    return addresses[0]


def _pinned(url: str, address: str, port: int) -> tuple[str, dict[str, str], dict[str, object]]:
    """The request goes to the checked address itself (no second DNS lookup a rebinding server could answer
    differently); the Host header and TLS server name (SNI and certificate check) stay the URL's host name."""
    parts = urlsplit(url)
    literal = f"[{address}]" if ":" in address else address
    target = urlunsplit((parts.scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))
    extensions: dict[str, object] = {}
    if parts.scheme == "https" and parts.hostname:
        extensions["sni_hostname"] = parts.hostname
    return target, {"Host": parts.netloc}, extensions


class WebFetchTool(NativeTool):
    def __init__(self, transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(SPEC)
        self._transport = transport

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        url = str_arg(arguments, "url").strip()
        _check_url(url)
        out: dict[str, object] = {"url": url}
        if isinstance(arguments.get("prompt"), str):
            out["prompt"] = arguments["prompt"]
        return out

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        url = str_arg(arguments, "url")
        prompt = str_arg(arguments, "prompt")
        allow_private = context.settings.get("allow_private_network") is True
        import httpx

        async with httpx.AsyncClient(
            follow_redirects=False,
            timeout=httpx.Timeout(TIMEOUT_S),
            headers={"User-Agent": USER_AGENT, "Accept": "text/html, text/markdown, text/plain, */*;q=0.5"},
            transport=self._transport,
            trust_env=False,
        ) as client:
            try:
                async with asyncio.timeout(TIMEOUT_S):
                    return await self._fetch(client, url, prompt, allow_private, context)
            except TimeoutError:
                raise tool_error(
                    "timeout", "web_fetch", f"Fetching {url[:200]!r} took longer than {TIMEOUT_S:g} s."
                ) from None
            except httpx.HTTPError as exc:
                raise tool_error(
                    "network", "web_fetch", f"Fetching {url[:200]!r} failed: {type(exc).__name__}: {str(exc)[:200]}"
                ) from None

    async def _fetch(
        self, client: httpx.AsyncClient, url: str, prompt: str, allow_private: bool, context: ToolContext
    ) -> ToolResult:
        current = url
        for _hop in range(MAX_REDIRECTS + 1):
            host, port = _check_url(current)
            address = await _resolve(host, port, allow_private)
            target, headers, extensions = _pinned(current, address, port)
            async with client.stream("GET", target, headers=headers, extensions=extensions) as response:
                if response.is_redirect:
                    location = response.headers.get("location")
                    if not location:
                        raise tool_error("network", "web_fetch", f"{current[:200]!r} redirected without a Location.")
                    current = urljoin(current, location)
                    continue
                body = bytearray()
                cut = False
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_BYTES:
                        del body[MAX_BYTES:]
                        cut = True
                        break
                return self._render(context, url, current, response, bytes(body), cut, prompt)
        raise tool_error(
            "network",
            "too_many_redirects",
            f"{url[:200]!r} redirected more than {MAX_REDIRECTS} times; stopped. Fetch the final URL directly.",
        )

    def _render(
        self,
        context: ToolContext,
        url: str,
        final_url: str,
        response: httpx.Response,
        body: bytes,
        cut: bool,
        prompt: str,
    ) -> ToolResult:
        media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media and not media.startswith(_TEXT_TYPES):
            raise tool_error(
                "tool",
                "unsupported_content",
                f"{final_url[:200]!r} returned {media!r}, which is not text; WebFetch only returns text and HTML.",
            )
        text = body.decode(response.encoding or "utf-8", "replace")
        if media in ("text/html", "application/xhtml+xml") or (not media and "<html" in text[:1000].lower()):
            from markdownify import markdownify  # pyright: ignore[reportMissingTypeStubs]

            text = str(markdownify(_NON_CONTENT_RE.sub("", text), heading_style="ATX"))
            text = "\n".join(line.rstrip() for line in text.splitlines())
            while "\n\n\n" in text:
                text = text.replace("\n\n\n", "\n\n")
        truncated = cut
        if len(text) > MAX_CONTENT_CHARS:
            text = text[:MAX_CONTENT_CHARS] + f"\n\n[content cut at {MAX_CONTENT_CHARS} characters]"
            truncated = True
        elif cut:
            text += f"\n\n[body cut at {MAX_BYTES} bytes]"
        header = f"URL: {final_url}\nStatus: {response.status_code}\n"
        if prompt:
            header += f"Looking for: {prompt}\n"
        data = {
            "url": url,
            "final_url": final_url,
            "status": response.status_code,
            "content_type": media,
            "bytes": len(body),
        }
        content = header + "\n" + text.strip()
        if response.status_code >= 400:
            error = tool_error(
                "network",
                "http_status",
                f"{final_url[:200]!r} answered HTTP {response.status_code}.",
                status=response.status_code,
            ).info
            return self.failed(context, error, data).model_copy(update={"content": content[:100_000]})
        return self.ok(context, content, data, truncated=truncated)
