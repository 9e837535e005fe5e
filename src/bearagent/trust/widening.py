"""What in a workspace widens where requests and keys go or what is allowed: model entries (endpoint, headers, key
variable, `${VAR}`, an outside script), agents (a looser mode, pre-approving `tools`, their hooks), the
`allowed-tools` of skills and commands, and the settings of its config files (allow rules, `env`, a looser mode,
web_fetch's private network, web_search's endpoint or key variable, sandbox loosening). Only what widens: deny/ask rules or a stricter mode need no trust.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, cast

from bearagent.domain._base import JsonValue
from bearagent.domain.permission_modes import DEFAULT_PERMISSION_MODE
from bearagent.domain.permission_modes import mode_looseness as mode_looseness
from bearagent.domain.specs import AgentSpec, ModelEntry
from bearagent.trust.collector import (
    Collector,
    key_line,
    line_containing,
    line_in,
    nested_line,
    read_text,
    split_command,
)
from bearagent.trust.runs import hook_group

OFFICIAL_ENDPOINTS: Mapping[str, tuple[str, ...]] = {
    "openai": ("https://api.openai.com/v1",),
    "anthropic": ("https://api.anthropic.com", "https://api.anthropic.com/v1"),
}
"""Where a built-in provider sends requests when `base_url` is not set; setting it to one of these needs no trust."""

CONVENTIONAL_KEY_ENV: Mapping[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""The one variable each built-in provider reads its key from without trust."""

NETWORKLESS_PROVIDERS = frozenset({"scripted"})
_VAR_RE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")
BUILTIN_DEFAULT_MODE = DEFAULT_PERMISSION_MODE
_READ_ONLY_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead", "BashOutput", "TodoWrite", "Skill"})


class ConfigFileLike(Protocol):
    """The parts of a loaded config file (`config.model.ConfigFile`) the trust surface reads."""

    @property
    def path(self) -> Path: ...
    @property
    def level(self) -> str: ...
    @property
    def settings(self) -> Mapping[str, object]: ...
    def line_of(self, key: str) -> int | None: ...


def model_entry(c: Collector, entry: ModelEntry) -> None:
    """A workspace model entry that sends requests or keys anywhere but its provider's defaults."""
    reasons: list[str] = []
    official = OFFICIAL_ENDPOINTS.get(entry.provider, ())
    if entry.base_url is not None and entry.base_url.rstrip("/") not in official:
        if entry.provider in NETWORKLESS_PROVIDERS:
            pass
        else:
            reasons.append(f"sends requests to {entry.base_url} (not {entry.provider}'s official endpoint)")
    if entry.headers:
        reasons.append(f"sets headers {', '.join(sorted(entry.headers))}")
    conventional = CONVENTIONAL_KEY_ENV.get(entry.provider)
    if entry.api_key_env is not None and entry.api_key_env != conventional:
        reasons.append(f"reads its key from ${entry.api_key_env}")
    strings = [entry.base_url or "", entry.model or "", *entry.headers.values()]
    if any(_VAR_RE.search(s) for s in strings):
        reasons.append("expands ${VAR} from your environment")
    if entry.script and not c.inside(Path(entry.script)):
        reasons.append(f"reads its script from {entry.script}, outside the workspace")
    if not reasons:
        return  # nothing to trust: where it is written is not read (a run checks trust twice; it read the file)
    file = c.rel(entry.source)
    line = nested_line(entry.source, "models", entry.name)
    canonical = cast(JsonValue, entry.model_dump(mode="json", exclude={"source"}))
    c.add(
        "model",
        f"model {entry.name}",
        f"model {entry.name!r} " + "; ".join(reasons),
        canonical,
        file=file,
        line=line,
    )


def agent(c: Collector, agent: AgentSpec, *, ceiling_set: bool) -> None:
    """A workspace agent's hooks, a looser permission mode (without a user ceiling) and pre-approving `tools`."""

    def file() -> str:  # where it is written, looked up only for an item (most agents add none)
        return c.rel(agent.source)

    for group in agent.hooks:
        hook_group(c, group.model_copy(update={"source": agent.source}), owner=f"agent {agent.name} ")
    mode = agent.policy.permission_mode
    if mode is not None and not ceiling_set and mode_looseness(mode) > mode_looseness(BUILTIN_DEFAULT_MODE):
        c.add(
            "permission",
            f"agent {agent.name} permission_mode",
            f"agent {agent.name!r} sets permission_mode {mode} (looser than the default {BUILTIN_DEFAULT_MODE})",
            mode,
            file=file(),
            line=line_containing(agent.source, "permission_mode"),
        )
    for entry in agent.tools or ():
        if "(" in entry and not entry.startswith("mcp__"):
            c.add(
                "permission",
                f"agent {agent.name} tools {entry}",
                f"agent {agent.name!r} pre-approves {entry!r} in `tools`",
                entry,
                file=file(),
                line=line_containing(agent.source, entry),
            )


def pre_approvals(c: Collector, owner: str, source: str, entries: Iterable[str]) -> None:
    """A skill's or command's `allowed-tools`: calls they match run without asking while it is in use. Entries
    for the read-only tools (allowed in every mode anyway) widen nothing."""
    for entry in entries:
        if entry.split("(", 1)[0].strip() in _READ_ONLY_TOOLS:
            continue
        c.add(
            "permission",
            f"{owner} allowed-tools {entry}",
            f"{owner} pre-approves {entry!r} in `allowed-tools`",
            entry,
            file=c.rel(source),
            line=line_containing(source, entry),
        )


def config_file(c: Collector, cf: ConfigFileLike, *, ceiling_set: bool) -> None:
    """A workspace config file's allow rules, additional directories (each one: the file tools could reach it),
    `env`, a looser mode, web_fetch and sandbox loosening."""
    file = c.rel(cf.path)
    text = read_text(cf.path)
    permissions = cast(Mapping[str, Sequence[str]], cf.settings.get("permissions", {}))
    for rule in permissions.get("allow", ()):
        c.add(
            "permission",
            f"permissions.allow {rule}",
            f"permissions.allow {rule!r} lets calls run without asking",
            rule,
            file=file,
            line=line_in(text, rule),
        )
    for directory in cast(Sequence[str], cf.settings.get("additional_directories", ())):
        c.add(
            "permission",
            f"additional directory {directory}",
            f"additional directory {directory} lets the file tools (and a sandboxed Bash) read and write it",
            directory,
            file=file,
            line=key_line(text, "additionalDirectories") or key_line(text, "additional_directories"),
        )
    for name, value in sorted(cast(Mapping[str, str], cf.settings.get("env", {})).items()):
        c.add(
            "env",
            f"env {name} {file}",
            f"env {name} is set for hook commands and MCP servers",
            value,
            file=file,
            line=line_in(text, f'"{name}"'),
        )
    status = cf.settings.get("status_line")
    if isinstance(status, str):
        c.add(
            "hook",
            f"statusLine {file}",
            f"statusLine runs {status!r} to draw the session's status line",
            {"command": status, "files": cast(JsonValue, c.files_run_by(split_command(status), "statusLine"))},
            file=file,
            line=key_line(text, "statusLine"),
        )
    helper = cf.settings.get("api_key_helper")
    if isinstance(helper, str):
        c.add(
            "model",
            f"apiKeyHelper {file}",
            f"apiKeyHelper runs {helper!r} to get the Anthropic API key",
            {"command": helper, "files": cast(JsonValue, c.files_run_by(split_command(helper), "apiKeyHelper"))},
            file=file,
            line=key_line(text, "apiKeyHelper"),
        )
    mode = cf.settings.get("permission_mode")
    if isinstance(mode, str) and not ceiling_set and mode_looseness(mode) > mode_looseness(BUILTIN_DEFAULT_MODE):
        c.add(
            "permission",
            "permission_mode",
            f"permission_mode {mode} (looser than the default {BUILTIN_DEFAULT_MODE})",
            mode,
            file=file,
            line=cf.line_of("permission_mode") or cf.line_of("defaultMode"),
        )
    web_fetch = cast(Mapping[str, object], cf.settings.get("web_fetch", {}))
    if web_fetch.get("allow_private_network") is True:
        c.add(
            "web_fetch",
            "web_fetch.allow_private_network",
            "web_fetch.allow_private_network lets WebFetch read loopback and private-network services",
            True,
            file=file,
            line=line_in(text, "allow_private_network"),
        )
    web_search = cast(Mapping[str, object], cf.settings.get("web_search", {}))
    for key, what in (
        ("base_url", "sends WebSearch queries (and the search key) to"),
        ("api_key_env", "reads the search key from"),
    ):
        value = web_search.get(key)
        if isinstance(value, str) and value:
            c.add(
                "web_search",
                f"web_search.{key}",
                f"web_search.{key} {what} {value}",
                value,
                file=file,
                line=line_in(text, key),
            )
    from bearagent.sandbox.settings import loosening

    for what in loosening(cf.settings):
        key = what.split(":", 1)[0]
        c.add(
            "sandbox",
            what,
            f"{what} loosens the shell's confinement",
            what,
            file=file,
            line=key_line(text, key.split(".")[-1]),
        )
