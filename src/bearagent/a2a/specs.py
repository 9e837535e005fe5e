"""`a2a_agents:` of a config.yaml: each entry is a remote A2A agent a BearAgent agent may delegate to.

```yaml
a2a_agents:
  research:
    url: https://agents.example.com/a2a/research   # the agent's base URL (its card at /.well-known/agent-card.json)
    headers: {Authorization: "Bearer ${RESEARCH_TOKEN}"}
    description: Researches a question on the web and answers with sources.
    timeout_s: 600
    max_response_chars: 100000
```

Parsing only checks shapes: `${VAR}` in `url` and `headers` is expanded when the tool is called (`tool.py`), so a
variable only that entry needs is only required when it is used. An entry of the workspace's config.yaml decides
where a request and a key go, so it is on the trust surface (`trust/runs.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from bearagent.domain._base import JsonValue
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import Level

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$")
FIELDS = ("url", "headers", "description", "timeout_s", "max_response_chars")
DEFAULT_TIMEOUT_S = 600.0
MAX_TIMEOUT_S = 3_000.0
DEFAULT_RESPONSE_CHARS = 100_000
MAX_RESPONSE_CHARS = 1_000_000
MAX_ENTRIES = 64
MAX_HEADERS = 32
TOOL_PREFIX = "a2a__"


@dataclass(frozen=True, slots=True)
class A2AAgentSpec:
    """One remote A2A agent. `url` and `headers` are as written (`${VAR}` not expanded yet)."""

    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=lambda: {})
    description: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_response_chars: int = DEFAULT_RESPONSE_CHARS
    source: str = ""
    level: Level = "workspace"
    line: int | None = None

    @property
    def tool_name(self) -> str:
        return f"{TOOL_PREFIX}{self.name}"

    def canonical(self) -> JsonValue:
        """What trusting the entry consents to (its digest on the trust surface): everything but where it is written."""
        return {
            "name": self.name,
            "url": self.url,
            "headers": dict(sorted(self.headers.items())),
            "description": self.description,
            "timeout_s": self.timeout_s,
            "max_response_chars": self.max_response_chars,
        }


def parse_a2a_agents(
    raw: Mapping[str, object],
    *,
    path: Path,
    level: Level,
    line_of: Callable[[str], int | None] = lambda _key: None,
) -> tuple[list[A2AAgentSpec], list[Diagnostic]]:
    """The entries of one file's `a2a_agents:`; a broken entry is an error diagnostic naming it and is left out."""
    specs: list[A2AAgentSpec] = []
    diags: list[Diagnostic] = []

    def bad(name: str, message: str, fix: str, key: str = "") -> None:
        where = f"a2a_agents.{name[:64]}" + (f".{key}" if key else "")
        diags.append(
            Diagnostic(
                severity="error",
                code="config.invalid_a2a_agent",
                message=f"{where}: {message}; the entry is left out",
                source=str(path),
                line=line_of(name),
                field=where,
                fix=fix,
            )
        )

    for index, (name, value) in enumerate(raw.items()):
        if index >= MAX_ENTRIES:
            bad(name, f"more than {MAX_ENTRIES} entries", "keep at most 64 remote agents in one file")
            break
        if not NAME_RE.match(name):
            bad(name, "the name must be letters, digits, '_' or '-' (at most 48)", "rename the entry, e.g. `research`")
            continue
        if not isinstance(value, Mapping):
            bad(name, f"must be a mapping, got {type(value).__name__}", "write `{url: https://...}`")
            continue
        entry = cast(Mapping[str, object], value)
        unknown = [k for k in entry if k not in FIELDS]
        if unknown:
            bad(name, f"unknown key {str(unknown[0])[:64]!r}", f"use only {', '.join(FIELDS)}", str(unknown[0])[:64])
            continue
        url = entry.get("url")
        if not isinstance(url, str) or not url.strip():
            bad(
                name,
                "`url` is required: the agent's base URL or its agent card's URL",
                "write `url: https://...`",
                "url",
            )
            continue
        url = url.strip()
        if not url.startswith(("http://", "https://", "${")):
            bad(name, f"`url` must be http or https, got {url[:200]!r}", "write `url: https://...`", "url")
            continue
        headers = entry.get("headers", {})
        if headers is None:
            headers = {}
        if (
            not isinstance(headers, Mapping)
            or len(cast(Mapping[object, object], headers)) > MAX_HEADERS
            or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in cast(Mapping[object, object], headers).items()
            )
        ):
            bad(
                name,
                f"`headers` must map at most {MAX_HEADERS} header names to strings",
                'write `headers: {Authorization: "Bearer ${TOKEN}"}`',
                "headers",
            )
            continue
        description = entry.get("description")
        if description is not None and not isinstance(description, str):
            bad(name, "`description` must be a string", "write `description: what the agent does`", "description")
            continue
        timeout = entry.get("timeout_s", DEFAULT_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= MAX_TIMEOUT_S:
            bad(name, f"`timeout_s` must be a number of seconds from 1 to {MAX_TIMEOUT_S:g}", "write `timeout_s: 600`")
            continue
        limit = entry.get("max_response_chars", DEFAULT_RESPONSE_CHARS)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1_000 <= limit <= MAX_RESPONSE_CHARS:
            bad(
                name,
                f"`max_response_chars` must be an integer from 1000 to {MAX_RESPONSE_CHARS}",
                "write `max_response_chars: 100000`",
            )
            continue
        specs.append(
            A2AAgentSpec(
                name=name,
                url=url,
                headers=dict(cast(Mapping[str, str], headers)),
                description=description[:4_000] if isinstance(description, str) else None,
                timeout_s=float(timeout),
                max_response_chars=limit,
                source=str(path),
                level=level,
                line=line_of(name),
            )
        )
    return specs, diags
