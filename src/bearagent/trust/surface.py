"""The trust surface: everything in a workspace that decides where a request or a key goes, what code runs outside
the model's tool calls, or what is allowed.

A workspace may be a stranger's repository, so none of this applies until its user trusts it (`bearagent trust`).
Each thing is one `TrustItem` with the file and line it comes from, so a refusal can list exactly what would be
trusted. Only what widens is on the surface: deny/ask rules, a stricter mode or fewer tools apply without trust.

What is collected (workspace-level only: user config, plugins and built-ins are the user's own):
- model entries that send requests anywhere but their provider's official endpoint (`base_url`), set `headers`,
  read a key from a variable other than the provider's conventional one, use `${VAR}` (no variable of the user's
  environment is expanded for an untrusted workspace), or read a `script` outside the workspace;
- hooks (config.yaml and agent frontmatter) and MCP servers (config.yaml and `.mcp.json`), and the content of every
  script or program file inside the workspace that they run;
- remote A2A agents (`a2a_agents:` of config.yaml): where a delegated prompt and the entry's headers go;
- permission widening: `permissions.allow` rules, a `permission_mode` looser than the built-in default on the
  workspace or an agent (when the user set no ceiling), pre-approving specifiers in an agent's `tools`, and each
  additional directory (`additionalDirectories`: the file tools could read and write it), so a stranger's
  repository cannot silently widen what the tools reach;
- `web_fetch.allow_private_network`, a `web_search.base_url` or `web_search.api_key_env` (where searches and the
  search key go), and sandbox / shell-environment loosening;
- Claude Code's `.claude/settings*.json` (config files of the workspace level): their allow rules, a looser
  `defaultMode`, their hooks (through the hook registry) and every `env` entry;
- the `allowed-tools` of workspace skills and custom commands (they pre-approve calls while in use), except entries
  for the read-only tools.

The rules are `runs.py` (what runs) and `widening.py` (what widens); `collector.py` makes the items.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

from bearagent.a2a.specs import A2AAgentSpec
from bearagent.domain._base import JsonValue
from bearagent.domain.specs import ActionSpec, AgentSpec, HookMatcherSpec, McpServerSpec, ModelEntry, SkillSpec
from bearagent.trust.collector import Collector, TrustItem
from bearagent.trust.runs import a2a_agent, hook_group, mcp_server
from bearagent.trust.widening import ConfigFileLike, agent, config_file, model_entry, pre_approvals

WRAP_WIDTH = 100
"""Where a long trust item is wrapped in the consent listing (it is never cut)."""
_LINE_BREAKS = {
    0x0A: "\u2424",  # ␤
    0x0D: "\u240d",  # ␍
    0x0B: "\u240b",
    0x0C: "\u240c",
    0x1C: "<U+001C>",
    0x1D: "<U+001D>",
    0x1E: "<U+001E>",
    0x85: "<U+0085>",
    0x2028: "<U+2028>",
    0x2029: "<U+2029>",
}
"""Line breaks inside one item, shown as symbols in the listing (`str.splitlines` breaks at each of these)."""


@dataclass(frozen=True, slots=True)
class TrustSurface:
    """What a workspace would run, send or widen on the user's machine; empty means it needs no trust."""

    items: tuple[TrustItem, ...] = ()

    @classmethod
    def of(
        cls,
        hooks: Sequence[HookMatcherSpec] = (),
        mcp_servers: Sequence[McpServerSpec] = (),
        shell_config: Mapping[str, JsonValue] | None = None,
        *,
        root: Path | None = None,
    ) -> TrustSurface:
        """A surface from hook groups and MCP servers (only workspace-level ones count) and extra permission items
        (`{"permissions.allow": [...]}`); `root` locates the scripts whose content is fingerprinted."""
        collector = Collector(root)
        for group in hooks:
            if group.level == "workspace":
                hook_group(collector, group)
        for server in mcp_servers:
            if server.level == "workspace":
                mcp_server(collector, server)
        for key, value in (shell_config or {}).items():
            for rule in cast(list[str], value) if isinstance(value, list) else [str(value)]:
                collector.add("permission", f"{key} {rule}", f"{key}: {rule!r} widens what runs without asking", rule)
        return TrustSurface(collector.sorted_items())

    @property
    def is_empty(self) -> bool:
        return not self.items

    def digests(self) -> dict[str, str]:
        return {item.key: item.digest() for item in self.items}

    def digest(self) -> str:
        text = json.dumps(sorted(self.digests().items()), separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> str:
        counts: dict[str, int] = {}
        for item in self.items:
            counts[item.kind] = counts.get(item.kind, 0) + 1
        names = {
            "model": "model entr{ies}",
            "hook": "hook{s}",
            "mcp": "MCP server{s}",
            "a2a": "remote A2A agent{s}",
            "permission": "permission widening{s}",
            "web_fetch": "web_fetch allowance{s}",
            "web_search": "web_search endpoint{s}",
            "sandbox": "sandbox loosening{s}",
            "file": "script file{s}",
            "env": "environment variable{s}",
        }
        parts: list[str] = []
        for kind, n in counts.items():
            word = names[kind].replace("{ies}", "ies" if n != 1 else "y").replace("{s}", "s" if n != 1 else "")
            parts.append(f"{n} {word}")
        return ", ".join(parts) or "nothing that needs trust"

    def lines(self, *, limit: int | None = None, width: int | None = WRAP_WIDTH) -> list[str]:
        """The items (the first `limit` of them, then a line saying how many more; all by default), each whole: a
        long one (a command padded to hide its end) is wrapped at `width` characters onto continuation lines, never
        cut, so what the user consents to is all of what runs (`width=None`: one line per item)."""
        shown: list[str] = []
        for item in self.items[:limit]:
            # its own line breaks shown, not made: a command cannot pose as further items of the listing
            text = item.render().translate(_LINE_BREAKS)
            step = width or max(1, len(text))
            chunks = [text[i : i + step] for i in range(0, len(text), step)] or [""]
            shown.append(f"  - {chunks[0]}")
            shown.extend(f"    {chunk}" for chunk in chunks[1:])
        if limit is not None and len(self.items) > limit:
            shown.append(f"  - … and {len(self.items) - limit} more (`bearagent trust --list` shows all)")
        return shown


# ---- collecting from a loaded workspace -----------------------------------------------------------------------


class _Registry(Protocol):
    def all(self) -> Iterable[object]: ...


class LoadedWorkspaceLike(Protocol):
    """The parts of `bearagent.workspace.LoadedWorkspace` the trust surface reads."""

    @property
    def root(self) -> Path: ...
    @property
    def config_files(self) -> Sequence[ConfigFileLike]: ...
    @property
    def hooks(self) -> _Registry: ...
    @property
    def agents(self) -> _Registry: ...
    @property
    def mcp(self) -> _Registry: ...
    @property
    def models(self) -> _Registry: ...
    @property
    def skills(self) -> _Registry: ...
    @property
    def actions(self) -> _Registry: ...
    @property
    def a2a_agents(self) -> Sequence[A2AAgentSpec]: ...


def workspace_trust_surface(ws: LoadedWorkspaceLike) -> TrustSurface:
    """THE trust surface of a loaded workspace (`bearagent trust`, `run`, `hooks test` and `mcp` all use this one
    function, so their digests agree)."""
    collector = Collector(ws.root)
    for entry in cast(Iterable[ModelEntry], ws.models.all()):
        if entry.level == "workspace":
            model_entry(collector, entry)
    for group in cast(Iterable[HookMatcherSpec], ws.hooks.all()):
        if group.level == "workspace":
            hook_group(collector, group)
    for spec in cast(Iterable[AgentSpec], ws.agents.all()):
        if spec.level == "workspace":
            agent(collector, spec, ceiling_set=_user_mode(ws) is not None)
    for server in cast(Iterable[McpServerSpec], ws.mcp.all()):
        if server.level == "workspace":
            mcp_server(collector, server)
    for remote in ws.a2a_agents:
        if remote.level == "workspace":
            a2a_agent(collector, remote)
    for skill in cast(Iterable[SkillSpec], ws.skills.all()):
        if skill.level == "workspace":
            pre_approvals(collector, f"skill {skill.name}", skill.source, skill.allowed_tools)
    for action in cast(Iterable[ActionSpec], ws.actions.all()):
        if action.level == "workspace":
            pre_approvals(collector, f"command /{action.name}", action.source, action.allowed_tools)
    for cf in ws.config_files:
        if cf.level == "workspace":
            config_file(collector, cf, ceiling_set=_user_mode(ws) is not None)
    return TrustSurface(collector.sorted_items())


def _user_mode(ws: LoadedWorkspaceLike) -> str | None:
    for cf in ws.config_files:
        if cf.level != "workspace" and isinstance(cf.settings.get("permission_mode"), str):
            return cast(str, cf.settings["permission_mode"])
    return None


__all__ = ["TrustItem", "TrustSurface", "workspace_trust_surface"]
