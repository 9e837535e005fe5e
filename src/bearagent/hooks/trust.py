"""Workspace trust: project hooks, MCP servers and shell-executing config run only where the user said so.

The decision lives in `$BEARAGENT_HOME/trust.json` (default `~/.config/bearagent/trust.json`), never in the repo.
It is keyed by the workspace's resolved path AND the SHA-256 of its trusted surface: the workspace-level hooks
(every field that decides what runs: event, matcher, agent, handler type, command, args, url, header names,
prompt, model, agent, handler, timeout, on_failure, capabilities), the workspace-level MCP servers (transport,
command, args, env names and values, cwd, url, header names, timeouts) and the shell-executing config the caller
adds (e.g. `Bash(...)` allow rules). Any change to those asks for trust again; editing a script a trusted hook runs
does not (it is part of the repository you trusted). Platform-level entries (user config, plugins, built-ins) are
the user's own and need no trust. A workspace whose surface is empty needs no trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, TypeAlias, cast

from bearagent.config.workspace import user_config_dir
from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.specs import HookMatcherSpec, McpServerSpec

TRUST_FILE = "trust.json"
TRUST_FORMAT_VERSION = 1
TrustStatus: TypeAlias = Literal["trusted", "untrusted", "changed", "not_needed"]


@dataclass(frozen=True, slots=True)
class TrustSurface:
    """What a workspace would run on the user's machine. Build it with `TrustSurface.of(...)`, which keeps only
    workspace-level entries."""

    hooks: tuple[HookMatcherSpec, ...] = ()
    mcp_servers: tuple[McpServerSpec, ...] = ()
    shell_config: Mapping[str, JsonValue] = field(default_factory=dict[str, JsonValue])

    @classmethod
    def of(
        cls,
        hooks: Sequence[HookMatcherSpec] = (),
        mcp_servers: Sequence[McpServerSpec] = (),
        shell_config: Mapping[str, JsonValue] | None = None,
    ) -> TrustSurface:
        return cls(
            hooks=tuple(h for h in hooks if h.level == "workspace"),
            mcp_servers=tuple(s for s in mcp_servers if s.level == "workspace"),
            shell_config={k: v for k, v in (shell_config or {}).items() if v not in (None, [], (), {}, "")},
        )

    @property
    def is_empty(self) -> bool:
        return not self.hooks and not self.mcp_servers and not self.shell_config

    def canonical(self) -> dict[str, JsonValue]:
        hooks: list[JsonValue] = []
        for group in self.hooks:
            handlers: list[JsonValue] = []
            for spec in group.hooks:
                data = cast(dict[str, JsonValue], spec.model_dump(mode="json"))
                data["headers"] = sorted(spec.headers)
                data["capabilities"] = sorted(spec.capabilities)
                handlers.append(data)
            hooks.append({"event": group.event, "matcher": group.matcher, "agent": group.agent, "hooks": handlers})
        servers: list[JsonValue] = []
        for server in sorted(self.mcp_servers, key=lambda s: s.name):
            data = cast(dict[str, JsonValue], server.model_dump(mode="json", exclude={"source", "level"}))
            data["headers"] = sorted(server.headers)
            servers.append(data)
        return {"hooks": hooks, "mcp_servers": servers, "shell_config": dict(sorted(self.shell_config.items()))}

    def digest(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> str:
        parts: list[str] = []
        handlers = sum(len(g.hooks) for g in self.hooks)
        if handlers:
            events = sorted({g.event for g in self.hooks})
            parts.append(f"{handlers} hook{'s' if handlers != 1 else ''} ({', '.join(events)})")
        if self.mcp_servers:
            names = ", ".join(s.name for s in self.mcp_servers)
            parts.append(f"{len(self.mcp_servers)} MCP server{'s' if len(self.mcp_servers) != 1 else ''} ({names})")
        if self.shell_config:
            parts.append(f"shell-executing config ({', '.join(sorted(self.shell_config))})")
        return ", ".join(parts) or "nothing that needs trust"


class _HookRegistry(Protocol):
    def all(self) -> Iterable[HookMatcherSpec]: ...


class _AgentLike(Protocol):
    @property
    def hooks(self) -> Sequence[HookMatcherSpec]: ...


class _AgentRegistry(Protocol):
    def all(self) -> Iterable[_AgentLike]: ...


class _McpRegistry(Protocol):
    def all(self) -> Iterable[McpServerSpec]: ...


class _ConfigFileLike(Protocol):
    @property
    def level(self) -> str: ...
    @property
    def settings(self) -> Mapping[str, object]: ...


class LoadedWorkspaceLike(Protocol):
    """The parts of `bearagent.app.LoadedWorkspace` the trust surface reads."""

    @property
    def hooks(self) -> _HookRegistry: ...
    @property
    def agents(self) -> _AgentRegistry: ...
    @property
    def mcp(self) -> _McpRegistry: ...
    @property
    def config_files(self) -> Sequence[_ConfigFileLike]: ...


def workspace_trust_surface(ws: LoadedWorkspaceLike) -> TrustSurface:
    """THE trust surface of a loaded workspace (`bearagent trust`, `run`, `hooks test` and `mcp` must all use this one
    function, or their digests disagree): workspace-level config hooks and agent hooks, workspace-level MCP servers
    (config.yaml and .mcp.json), and the `Bash(...)` rules of the workspace config's `permissions.allow`."""
    hooks = [*ws.hooks.all(), *(m for agent in ws.agents.all() for m in agent.hooks)]
    rules: list[str] = []
    for cf in ws.config_files:
        if cf.level == "workspace":
            permissions = cast(Mapping[str, Sequence[str]], cf.settings.get("permissions", {}))
            rules.extend(rule for rule in permissions.get("allow", ()) if rule.startswith("Bash"))
    shell_config: dict[str, JsonValue] = {"permissions.allow": list(rules)} if rules else {}
    return TrustSurface.of(hooks, list(ws.mcp.all()), shell_config)


def trust_store_path(env: Mapping[str, str] | None = None) -> Path:
    """`$BEARAGENT_HOME/trust.json` (default `$XDG_CONFIG_HOME/bearagent/trust.json`)."""
    return user_config_dir(os.environ if env is None else env) / TRUST_FILE


def workspace_key(root: Path) -> str:
    return str(root.expanduser().resolve())


def trust_command(root: Path) -> str:
    return f"bearagent trust -w {shlex.quote(workspace_key(root))}"


class TrustStore:
    """The trust file. Reads are fresh each call; writes are atomic (temp file + rename), mode 0600."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, dict[str, JsonValue]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data: object = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._corrupt(f"it is not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(data, dict):
            raise self._corrupt("it is not a JSON object")
        workspaces = cast(dict[str, object], data).get("workspaces", {})
        if not isinstance(workspaces, dict):
            raise self._corrupt("its 'workspaces' is not an object")
        out: dict[str, dict[str, JsonValue]] = {}
        for key, entry in cast(dict[str, object], workspaces).items():
            if isinstance(entry, dict):
                out[key] = cast(dict[str, JsonValue], entry)
        return out

    def _corrupt(self, why: str) -> BearAgentError:
        return BearAgentError(
            ErrorInfo.of("configuration", "invalid_trust_store", f"the trust file {self.path} is unreadable: {why}"),
            hint=f"fix or delete {self.path}, then trust your workspaces again with `bearagent trust -w DIR`",
        )

    def _save(self, workspaces: Mapping[str, Mapping[str, JsonValue]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"version": TRUST_FORMAT_VERSION, "workspaces": workspaces}, indent=2, sort_keys=True)
        fd, tmp = tempfile.mkstemp(prefix=".trust-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body + "\n")
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def status(self, root: Path, surface: TrustSurface) -> TrustStatus:
        if surface.is_empty:
            return "not_needed"
        entry = self._load().get(workspace_key(root))
        if entry is None:
            return "untrusted"
        return "trusted" if entry.get("surface_sha256") == surface.digest() else "changed"

    def is_trusted(self, root: Path, surface: TrustSurface) -> bool:
        return self.status(root, surface) in ("trusted", "not_needed")

    def trust(self, root: Path, surface: TrustSurface) -> None:
        workspaces = self._load()
        workspaces[workspace_key(root)] = {
            "surface_sha256": surface.digest(),
            "trusted_at": datetime.now(UTC).isoformat(),
            "summary": surface.describe(),
        }
        self._save(workspaces)

    def revoke(self, root: Path) -> bool:
        workspaces = self._load()
        if workspaces.pop(workspace_key(root), None) is None:
            return False
        self._save(workspaces)
        return True

    def require(self, root: Path, surface: TrustSurface) -> None:
        status = self.status(root, surface)
        if status in ("trusted", "not_needed"):
            return
        key = workspace_key(root)
        if status == "changed":
            message = (
                f"workspace {key} changed what it runs since you trusted it; it now defines {surface.describe()}, "
                "so BearAgent will not run them until you trust it again"
            )
        else:
            message = f"workspace {key} defines {surface.describe()} and is not trusted, so BearAgent will not run them"
        raise BearAgentError(
            ErrorInfo.of("permission", "untrusted_workspace", message, workspace=key[-1_000:], status=status),
            hint=f"review .bearagent/config.yaml (and .mcp.json), then run: {trust_command(root)}",
        )


def _store(env: Mapping[str, str] | None) -> TrustStore:
    return TrustStore(trust_store_path(env))


def is_trusted(workspace_root: Path, surface: TrustSurface, *, env: Mapping[str, str] | None = None) -> bool:
    return _store(env).is_trusted(workspace_root, surface)


def trust_status(workspace_root: Path, surface: TrustSurface, *, env: Mapping[str, str] | None = None) -> TrustStatus:
    return _store(env).status(workspace_root, surface)


def trust(workspace_root: Path, surface: TrustSurface, *, env: Mapping[str, str] | None = None) -> None:
    _store(env).trust(workspace_root, surface)


def revoke(workspace_root: Path, *, env: Mapping[str, str] | None = None) -> bool:
    return _store(env).revoke(workspace_root)


def require_trust(workspace_root: Path, surface: TrustSurface, *, env: Mapping[str, str] | None = None) -> None:
    """Raise `BearAgentError(permission.untrusted_workspace)` unless the workspace (with this surface) is trusted.
    The hint is the exact command to trust it. The CLI maps it to exit code 2."""
    _store(env).require(workspace_root, surface)


def trust_workspace(root: Path, surface: TrustSurface, *, env: Mapping[str, str] | None = None) -> None:
    """For `bearagent init`: trust what it just created (call it after writing the config)."""
    trust(root, surface, env=env)
