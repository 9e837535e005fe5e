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
- permission widening: `permissions.allow` rules, a `permission_mode` looser than the built-in default on the
  workspace or an agent (when the user set no ceiling), pre-approving specifiers in an agent's `tools`;
- `web_fetch.allow_private_network`, and sandbox / shell-environment loosening;
- Claude Code's `.claude/settings*.json` (config files of the workspace level): their allow rules, a looser
  `defaultMode`, their hooks (through the hook registry) and every `env` entry;
- the `allowed-tools` of workspace skills and custom commands (they pre-approve calls while in use), except entries
  for the read-only tools.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, TypeAlias, cast

from bearagent.domain._base import JsonValue
from bearagent.domain.specs import (
    HOOK_HANDLER_EXTENSIONS,
    ActionSpec,
    AgentSpec,
    HookMatcherSpec,
    McpServerSpec,
    ModelEntry,
    SkillSpec,
)

ItemKind: TypeAlias = Literal["model", "hook", "mcp", "permission", "web_fetch", "sandbox", "file", "env"]

OFFICIAL_ENDPOINTS: Mapping[str, tuple[str, ...]] = {
    "openai": ("https://api.openai.com/v1",),
    "anthropic": ("https://api.anthropic.com", "https://api.anthropic.com/v1"),
}
"""Where a built-in provider sends requests when `base_url` is not set; setting it to one of these needs no trust."""

CONVENTIONAL_KEY_ENV: Mapping[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""The one variable each built-in provider reads its key from without trust."""

NETWORKLESS_PROVIDERS = frozenset({"scripted"})
MAX_HASHED_FILE_BYTES = 16 * 1024 * 1024
_VAR_RE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")
_PROJECT_VARS = ("CLAUDE_PROJECT_DIR", "BEARAGENT_PROJECT_DIR")
_MODE_LOOSENESS: Mapping[str, int] = {"plan": 0, "dontAsk": 0, "default": 1, "acceptEdits": 2, "bypassPermissions": 3}
BUILTIN_DEFAULT_MODE = "acceptEdits"
_READ_ONLY_TOOLS = frozenset({"Read", "Glob", "Grep", "TodoWrite", "Skill"})


def mode_looseness(mode: str) -> int:
    """How much a permission mode allows without asking (unknown spellings count as the strictest)."""
    return _MODE_LOOSENESS.get(mode, 0)


@dataclass(frozen=True, slots=True)
class TrustItem:
    """One thing that needs trust. `key` is stable across edits of the same thing (so a change can be named);
    `canonical` is everything about it that decides behaviour (its digest is what trust records)."""

    kind: ItemKind
    key: str
    summary: str
    file: str = ""
    line: int | None = None
    canonical: JsonValue = None

    def digest(self) -> str:
        text = json.dumps(
            {"kind": self.kind, "key": self.key, "data": self.canonical},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def where(self) -> str:
        if not self.file:
            return ""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def render(self) -> str:
        where = self.where()
        return f"{where}: {self.summary}" if where else self.summary


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
        collector = _Collector(root)
        for group in hooks:
            if group.level == "workspace":
                collector.hook_group(group)
        for server in mcp_servers:
            if server.level == "workspace":
                collector.mcp_server(server)
        for key, value in (shell_config or {}).items():
            for rule in cast(list[str], value) if isinstance(value, list) else [str(value)]:
                collector.add("permission", f"{key} {rule}", f"{key}: {rule!r} widens what runs without asking", rule)
        return collector.surface()

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
            "permission": "permission widening{s}",
            "web_fetch": "web_fetch allowance{s}",
            "sandbox": "sandbox loosening{s}",
            "file": "script file{s}",
            "env": "environment variable{s}",
        }
        parts: list[str] = []
        for kind, n in counts.items():
            word = names[kind].replace("{ies}", "ies" if n != 1 else "y").replace("{s}", "s" if n != 1 else "")
            parts.append(f"{n} {word}")
        return ", ".join(parts) or "nothing that needs trust"

    def lines(self, *, limit: int = 40) -> list[str]:
        shown = [f"  - {item.render()}" for item in self.items[:limit]]
        if len(self.items) > limit:
            shown.append(f"  - … and {len(self.items) - limit} more (`bearagent trust --list` shows all)")
        return shown


# ---- collecting from a loaded workspace -----------------------------------------------------------------------


class _ConfigFileLike(Protocol):
    @property
    def path(self) -> Path: ...
    @property
    def level(self) -> str: ...
    @property
    def settings(self) -> Mapping[str, object]: ...
    def line_of(self, key: str) -> int | None: ...


class _Registry(Protocol):
    def all(self) -> Iterable[object]: ...


class LoadedWorkspaceLike(Protocol):
    """The parts of `bearagent.app.LoadedWorkspace` the trust surface reads."""

    @property
    def root(self) -> Path: ...
    @property
    def config_files(self) -> Sequence[_ConfigFileLike]: ...
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


def workspace_trust_surface(ws: LoadedWorkspaceLike) -> TrustSurface:
    """THE trust surface of a loaded workspace (`bearagent trust`, `run`, `hooks test` and `mcp` all use this one
    function, so their digests agree)."""
    collector = _Collector(ws.root)
    for entry in cast(Iterable[ModelEntry], ws.models.all()):
        if entry.level == "workspace":
            collector.model_entry(entry)
    for group in cast(Iterable[HookMatcherSpec], ws.hooks.all()):
        if group.level == "workspace":
            collector.hook_group(group)
    for agent in cast(Iterable[AgentSpec], ws.agents.all()):
        if agent.level == "workspace":
            collector.agent(agent, ceiling_set=_user_mode(ws) is not None)
    for server in cast(Iterable[McpServerSpec], ws.mcp.all()):
        if server.level == "workspace":
            collector.mcp_server(server)
    for skill in cast(Iterable[SkillSpec], ws.skills.all()):
        if skill.level == "workspace":
            collector.pre_approvals(f"skill {skill.name}", skill.source, skill.allowed_tools)
    for action in cast(Iterable[ActionSpec], ws.actions.all()):
        if action.level == "workspace":
            collector.pre_approvals(f"command /{action.name}", action.source, action.allowed_tools)
    for cf in ws.config_files:
        if cf.level == "workspace":
            collector.config_file(cf, ceiling_set=_user_mode(ws) is not None)
    return collector.surface()


def _user_mode(ws: LoadedWorkspaceLike) -> str | None:
    for cf in ws.config_files:
        if cf.level != "workspace" and isinstance(cf.settings.get("permission_mode"), str):
            return cast(str, cf.settings["permission_mode"])
    return None


@dataclass
class _Collector:
    root: Path | None
    items: dict[str, TrustItem] = field(default_factory=dict[str, TrustItem])

    def surface(self) -> TrustSurface:
        return TrustSurface(tuple(sorted(self.items.values(), key=lambda i: (i.file, i.line or 0, i.key))))

    def add(
        self, kind: ItemKind, key: str, summary: str, canonical: JsonValue, *, file: str = "", line: int | None = None
    ) -> None:
        self.items[key] = TrustItem(kind, key, summary, file, line, canonical)

    # ---- paths ----

    def rel(self, path: str | Path) -> str:
        if not path:
            return ""
        p = Path(path)
        if self.root is not None:
            try:
                return p.resolve().relative_to(self.root.resolve()).as_posix()
            except (ValueError, OSError):
                pass
        return str(p)

    def inside(self, path: Path) -> bool:
        if self.root is None:
            return False
        try:
            path.resolve().relative_to(self.root.resolve())
        except (ValueError, OSError):
            return False
        return True

    def files_run_by(self, words: Iterable[str], owner: str, cwd: Path | None = None) -> list[str]:
        """Fingerprint every existing file inside the workspace that `words` (a command line) names."""
        if self.root is None:
            return []
        out: list[str] = []
        base = cwd or self.root
        for word in words:
            for var in _PROJECT_VARS:
                word = word.replace("${" + var + "}", str(self.root)).replace("$" + var, str(self.root))
            if not word or (word.startswith("-") and "=" not in word):
                continue
            word = word.split("=", 1)[1] if word.startswith("-") else word
            candidate = Path(word).expanduser()
            if not candidate.is_absolute():
                candidate = base / candidate
            try:
                if not candidate.is_file() or not self.inside(candidate):
                    continue
            except OSError:
                continue
            rel = self.rel(candidate)
            key = f"file {rel}"
            if key not in self.items:
                self.add(
                    "file", key, f"file run by {owner} (its content is fingerprinted)", _hash_file(candidate), file=rel
                )
            out.append(rel)
        return out

    # ---- models ----

    def model_entry(self, entry: ModelEntry) -> None:
        file = self.rel(entry.source)
        line = _nested_line(entry.source, "models", entry.name)
        reasons: list[str] = []
        official = OFFICIAL_ENDPOINTS.get(entry.provider, ())
        if entry.base_url is not None and entry.base_url.rstrip("/") not in official:
            if entry.provider in NETWORKLESS_PROVIDERS:
                pass
            else:
                reasons.append(f"sends requests to {entry.base_url[:200]} (not {entry.provider}'s official endpoint)")
        if entry.headers:
            reasons.append(f"sets headers {', '.join(sorted(entry.headers))[:200]}")
        conventional = CONVENTIONAL_KEY_ENV.get(entry.provider)
        if entry.api_key_env is not None and entry.api_key_env != conventional:
            reasons.append(f"reads its key from ${entry.api_key_env}")
        strings = [entry.base_url or "", entry.model or "", *entry.headers.values()]
        if any(_VAR_RE.search(s) for s in strings):
            reasons.append("expands ${VAR} from your environment")
        if entry.script and not self.inside(Path(entry.script)):
            reasons.append(f"reads its script from {entry.script[:200]}, outside the workspace")
        if not reasons:
            return
        canonical = cast(JsonValue, entry.model_dump(mode="json", exclude={"source"}))
        self.add(
            "model",
            f"model {entry.name}",
            f"model {entry.name!r} " + "; ".join(reasons),
            canonical,
            file=file,
            line=line,
        )

    # ---- hooks and MCP servers ----

    def hook_group(self, group: HookMatcherSpec, *, owner: str = "") -> None:
        file = self.rel(group.source)
        for index, spec in enumerate(group.hooks):
            data = cast(dict[str, JsonValue], spec.model_dump(mode="json"))
            data["headers"] = sorted(spec.headers)
            data["capabilities"] = sorted(spec.capabilities)
            for extension in HOOK_HANDLER_EXTENSIONS:  # unused: the digest stays the one trusted before they existed
                if data.get(extension) in (None, False):
                    data.pop(extension, None)
            what = spec.command or spec.url or spec.handler or spec.agent or (spec.prompt or "")[:60]
            if spec.type == "mcp_tool":
                what = f"{spec.server}.{spec.tool}"
            label = f"{group.event}[{group.matcher or '*'}]#{index + 1}"
            key = f"hook {owner}{label} {file}".strip()
            files: list[str] = []
            if spec.type == "command" and spec.command:
                words = [spec.command, *spec.args] if spec.args is not None else _split(spec.command)
                files = self.files_run_by(words, f"hook {label}")
            canonical: JsonValue = {
                "event": group.event,
                "matcher": group.matcher,
                "agent": group.agent,
                "handler": data,
                "files": cast(JsonValue, files),
            }
            summary = f"{spec.type} hook on {group.event}" + (f" ({group.matcher})" if group.matcher else "")
            summary += f" runs {what[:120]!r}" if what else ""
            self.add(
                "hook",
                key,
                summary,
                canonical,
                file=file,
                line=_line_containing(group.source, spec.command or spec.url or "")
                or _line_containing(group.source, json.dumps(spec.command or spec.url or "")[1:-1]),
            )

    def mcp_server(self, server: McpServerSpec) -> None:
        file = self.rel(server.source)
        data = cast(dict[str, JsonValue], server.model_dump(mode="json", exclude={"source", "level"}))
        data["headers"] = sorted(server.headers)
        if server.transport == "stdio":
            cwd = Path(server.cwd) if server.cwd else None
            if cwd is not None and not cwd.is_absolute() and self.root is not None:
                cwd = self.root / cwd
            data["files"] = cast(
                JsonValue, self.files_run_by([server.command or "", *server.args], f"MCP server {server.name}", cwd)
            )
            what = " ".join([server.command or "", *server.args])
        else:
            what = server.url or ""
        self.add(
            "mcp",
            f"mcp {server.name}",
            f"MCP server {server.name!r} ({server.transport}) runs {what[:160]!r}",
            cast(JsonValue, data),
            file=file,
            line=_line_containing(server.source, f"{server.name}"),
        )

    # ---- agents ----

    def agent(self, agent: AgentSpec, *, ceiling_set: bool) -> None:
        file = self.rel(agent.source)
        for group in agent.hooks:
            self.hook_group(group.model_copy(update={"source": agent.source}), owner=f"agent {agent.name} ")
        mode = agent.policy.permission_mode
        if mode is not None and not ceiling_set and mode_looseness(mode) > mode_looseness(BUILTIN_DEFAULT_MODE):
            self.add(
                "permission",
                f"agent {agent.name} permission_mode",
                f"agent {agent.name!r} sets permission_mode {mode} (looser than the default {BUILTIN_DEFAULT_MODE})",
                mode,
                file=file,
                line=_line_containing(agent.source, "permission_mode"),
            )
        for entry in agent.tools or ():
            if "(" in entry and not entry.startswith("mcp__"):
                self.add(
                    "permission",
                    f"agent {agent.name} tools {entry}",
                    f"agent {agent.name!r} pre-approves {entry!r} in `tools`",
                    entry,
                    file=file,
                    line=_line_containing(agent.source, entry),
                )

    def pre_approvals(self, owner: str, source: str, entries: Iterable[str]) -> None:
        """A skill's or command's `allowed-tools`: calls they match run without asking while it is in use. Entries
        for the read-only tools (allowed in every mode anyway) widen nothing."""
        for entry in entries:
            if entry.split("(", 1)[0].strip() in _READ_ONLY_TOOLS:
                continue
            self.add(
                "permission",
                f"{owner} allowed-tools {entry}",
                f"{owner} pre-approves {entry!r} in `allowed-tools`",
                entry,
                file=self.rel(source),
                line=_line_containing(source, entry),
            )

    # ---- config.yaml settings ----

    def config_file(self, cf: _ConfigFileLike, *, ceiling_set: bool) -> None:
        file = self.rel(cf.path)
        text = _read(cf.path)
        permissions = cast(Mapping[str, Sequence[str]], cf.settings.get("permissions", {}))
        for rule in permissions.get("allow", ()):
            self.add(
                "permission",
                f"permissions.allow {rule}",
                f"permissions.allow {rule!r} lets calls run without asking",
                rule,
                file=file,
                line=_line_in(text, rule),
            )
        for name, value in sorted(cast(Mapping[str, str], cf.settings.get("env", {})).items()):
            self.add(
                "env",
                f"env {name} {file}",
                f"env {name} is set for hook commands and MCP servers",
                value,
                file=file,
                line=_line_in(text, f'"{name}"'),
            )
        mode = cf.settings.get("permission_mode")
        if isinstance(mode, str) and not ceiling_set and mode_looseness(mode) > mode_looseness(BUILTIN_DEFAULT_MODE):
            self.add(
                "permission",
                "permission_mode",
                f"permission_mode {mode} (looser than the default {BUILTIN_DEFAULT_MODE})",
                mode,
                file=file,
                line=cf.line_of("permission_mode") or cf.line_of("defaultMode"),
            )
        web_fetch = cast(Mapping[str, object], cf.settings.get("web_fetch", {}))
        if web_fetch.get("allow_private_network") is True:
            self.add(
                "web_fetch",
                "web_fetch.allow_private_network",
                "web_fetch.allow_private_network lets WebFetch read loopback and private-network services",
                True,
                file=file,
                line=_line_in(text, "allow_private_network"),
            )
        from bearagent.sandbox.settings import loosening

        for what in loosening(cf.settings):
            key = what.split(":", 1)[0]
            self.add(
                "sandbox",
                what,
                f"{what} loosens the shell's confinement",
                what,
                file=file,
                line=_key_line(text, key.split(".")[-1]),
            )


# ---- small helpers --------------------------------------------------------------------------------------------


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            remaining = MAX_HASHED_FILE_BYTES
            while remaining > 0:
                chunk = handle.read(min(1 << 20, remaining))
                if not chunk:
                    break
                digest.update(chunk)
                remaining -= len(chunk)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    return digest.hexdigest()


def _read(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace") if path else ""
    except OSError:
        return ""


def _line_in(text: str, needle: str) -> int | None:
    if not needle:
        return None
    index = text.find(needle)
    return text.count("\n", 0, index) + 1 if index >= 0 else None


def _key_line(text: str, key: str) -> int | None:
    match = re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}[\"']?[ \t]*:", text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def _line_containing(path: str, needle: str) -> int | None:
    return _line_in(_read(path), needle) if path and needle else None


def _nested_line(path: str, section: str, name: str) -> int | None:
    """The line of `name:` inside the top-level `section:` of a YAML file (best effort)."""
    text = _read(path)
    start = re.search(rf"^{re.escape(section)}[ \t]*:", text, re.MULTILINE)
    offset = start.end() if start else 0
    match = re.compile(rf"^[ \t]+[\"']?{re.escape(name)}[\"']?[ \t]*:", re.MULTILINE).search(text, offset)
    if match is None:
        return None
    return text.count("\n", 0, match.start()) + 1
