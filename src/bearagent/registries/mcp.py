"""McpRegistry: MCP server entries from config.yaml `mcp_servers`, `.mcp.json` `mcpServers` and plugins. Only
declared and validated here; connecting is `bearagent.mcp`'s job."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from pydantic import ValidationError

from bearagent.config.env import expand_env
from bearagent.config.files import YamlDoc, read_text
from bearagent.config.layers import Candidate
from bearagent.config.safe_read import check_workspace_file, stray_file
from bearagent.config.workspace import Source, config_file_source, contribution_source, mcp_json_source
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import McpServerSpec
from bearagent.registries._base import EntryReporter, LayeredRegistry, entry_reporter, first_error, unknown_key

if TYPE_CHECKING:
    from bearagent.config.config_files import ConfigFiles
    from bearagent.config.model import ConfigFile
    from bearagent.plugins.contributions import PluginContributions

MCP_KEYS = frozenset(
    {
        "type",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "oauth",
        "startup_timeout_s",
        "call_timeout_s",
        "timeout",
    }
)
OAUTH_KEYS = {"clientId": "oauth_client_id", "client_id": "oauth_client_id", "callbackPort": "oauth_callback_port"}
OAUTH_KEYS["callback_port"] = "oauth_callback_port"
_HTTP_TYPES = ("http", "streamable-http", "streamable_http", "streamableHttp")


class McpRegistry(LayeredRegistry[McpServerSpec]):
    def for_use(self, spec: McpServerSpec, env: Mapping[str, str]) -> McpServerSpec:
        """A copy with `${VAR}` expanded in command, args, env, cwd, url and headers (at the point of use)."""
        where = f"mcp_servers.{spec.name}"

        def x(value: str, field: str) -> str:
            return expand_env(value, env, where=f"{where}.{field}")

        return spec.model_copy(
            update={
                "command": x(spec.command, "command") if spec.command else None,
                "args": tuple(x(a, f"args[{i}]") for i, a in enumerate(spec.args)),
                "env": {k: x(v, f"env.{k}") for k, v in spec.env.items()},
                "cwd": x(spec.cwd, "cwd") if spec.cwd else None,
                "url": x(spec.url, "url") if spec.url else None,
                "headers": {k: x(v, f"headers.{k}") for k, v in spec.headers.items()},
            }
        )


def parse_mcp_servers(
    raw: Mapping[str, object], *, path: Path, source: Source, doc: YamlDoc | None = None, prefix: str = "mcp_servers"
) -> tuple[list[McpServerSpec], list[Diagnostic]]:
    out: list[McpServerSpec] = []
    diags: list[Diagnostic] = []
    for name, value in raw.items():
        line = doc.line_of(name) if doc else None
        add = entry_reporter(diags, source=str(path), line=line, field=f"{prefix}.{name}", subject=name)
        if not isinstance(value, dict):
            add(
                "error",
                "mcp.invalid",
                f"{prefix}.{name} must be a mapping; skipped",
                f"write `{name}: {{command: uvx, args: [...]}}`",
            )
            continue
        data = dict(cast(dict[str, object], value))
        for key in list(data):
            if key not in MCP_KEYS:
                add("warning", "config.unknown_key", *unknown_key(key, MCP_KEYS, f"'{prefix}.{name}.{key}'"))
                del data[key]
        kind = data.pop("type", None)
        if "oauth" in data:
            oauth = _oauth(data.pop("oauth"), add, f"{prefix}.{name}.oauth")
            if oauth is None:
                continue
            data.update(oauth)
        if "timeout" in data:  # .mcp.json's per-server timeout is in milliseconds
            timeout = data.pop("timeout")
            if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and "call_timeout_s" not in data:
                data["call_timeout_s"] = float(timeout) / 1000.0
        if kind is None:
            kind = "stdio" if "command" in data else ("http" if "url" in data else None)
        if kind in _HTTP_TYPES:
            transport = "http"
            if not isinstance(data.get("url"), str):
                add(
                    "error",
                    "mcp.invalid",
                    f"{prefix}.{name}: an http server needs `url`; skipped",
                    "add `url: https://...`",
                )
                continue
        elif kind == "stdio":
            transport = "stdio"
            if not isinstance(data.get("command"), str):
                add(
                    "error",
                    "mcp.invalid",
                    f"{prefix}.{name}: a stdio server needs `command`; skipped",
                    "add `command: uvx` and `args: [...]`",
                )
                continue
        elif kind is None:
            add(
                "error",
                "mcp.invalid",
                f"{prefix}.{name} has neither `command` (stdio) nor `url` (http); skipped",
                "add `command: ...` or `type: http` + `url: ...`",
            )
            continue
        else:
            add(
                "error",
                "mcp.unsupported_transport",
                f"{prefix}.{name}: transport {kind!r} is not supported (stdio and streamable HTTP are); skipped",
                "use `type: http` with a streamable HTTP endpoint, or a stdio command",
            )
            continue
        if isinstance(data.get("args"), list):
            data["args"] = tuple(str(a) for a in cast(list[object], data["args"]))
        for key in ("env", "headers"):
            if isinstance(data.get(key), dict):
                data[key] = {str(k): str(v) for k, v in cast(dict[object, object], data[key]).items()}
        try:
            out.append(
                McpServerSpec.model_validate(
                    {**data, "name": name, "transport": transport, "source": str(path), "level": source.level}
                )
            )
        except ValidationError as exc:
            key, problem = first_error(exc)
            add("error", "mcp.invalid", f"{prefix}.{name}.{key}: {problem}; skipped", f"fix {prefix}.{name}.{key}")
    return out, diags


def _oauth(value: object, add: EntryReporter, where: str) -> dict[str, object] | None:
    """Claude Code's `oauth: {clientId, callbackPort}` (a pre-registered client, a fixed redirect port); None (the
    server is skipped) when a value is wrong, since a login with another client or port would not be the one meant."""
    if not isinstance(value, dict):
        add("error", "mcp.invalid", f"{where} must be a mapping; skipped", 'write `"oauth": {"clientId": "..."}`')
        return None
    out: dict[str, object] = {}
    for key, item in cast(dict[str, object], value).items():
        field = OAUTH_KEYS.get(key)
        if field is None:
            add("warning", "config.unknown_key", *unknown_key(key, frozenset(OAUTH_KEYS), f"'{where}.{key}'"))
        elif field == "oauth_client_id" and (not isinstance(item, str) or not item.strip() or len(item) > 512):
            add("error", "mcp.invalid", f"{where}.{key} must be a non-empty string; skipped", f"fix {where}.{key}")
            return None
        elif field == "oauth_callback_port" and (
            not isinstance(item, int) or isinstance(item, bool) or not 1 <= item <= 65_535
        ):
            add("error", "mcp.invalid", f"{where}.{key} must be a port number (1-65535); skipped", f"fix {where}.{key}")
            return None
        else:
            out[field] = item.strip() if isinstance(item, str) else item
    return out


def load_mcp_json(path: Path, source: Source, diagnostics: list[Diagnostic]) -> list[McpServerSpec]:
    """`.mcp.json` (Claude Code's project file): `{"mcpServers": {name: entry}}`."""
    if not path.is_file():
        stray_file(path, diagnostics, what=".mcp.json")  # there but not a file: an error, never "absent"
        return []
    # the file sits at the workspace root: never read through a symlink out of it (config/safe_read.py)
    if not check_workspace_file(path.parent, path, diagnostics, what=path.name):
        return []
    text = read_text(path, diagnostics)
    if text is None or not text.strip():
        # an empty file declares nothing (it is also what the sandbox leaves as a read-only placeholder while a
        # sandboxed MCP server or hook runs, so another process must not read it as broken JSON)
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        diagnostics.append(
            Diagnostic(
                severity="error",
                code="config.json_syntax",
                message=f"invalid JSON in .mcp.json: {exc.msg}; the file was skipped",
                source=str(path),
                line=exc.lineno,
                fix="fix the JSON syntax at that line",
            )
        )
        return []
    servers = cast(dict[str, object], data).get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        diagnostics.append(
            Diagnostic(
                severity="error",
                code="mcp.invalid",
                message=".mcp.json must be an object with an `mcpServers` object; the file was skipped",
                source=str(path),
                line=1,
                fix='write {"mcpServers": {"name": {"command": "..."}}}',
            )
        )
        return []
    specs, diags = parse_mcp_servers(cast(dict[str, object], servers), path=path, source=source, prefix="mcpServers")
    diagnostics.extend(diags)
    return specs


def build_mcp_registry(
    entries: Iterable[tuple[McpServerSpec, Source]], diagnostics: Sequence[Diagnostic]
) -> McpRegistry:
    candidates = [Candidate(spec.name, spec, source, spec.source or source.id) for spec, source in entries]
    return McpRegistry.from_candidates(candidates, diagnostics, kind="MCP server")


def load_mcp_servers(
    files: ConfigFiles,
    root: Path,
    contributions: PluginContributions,
    plugin_servers: Sequence[tuple[Path, Mapping[str, object], Source]] = (),
) -> McpRegistry:
    """The MCP registry of a workspace: `mcp_servers:` of the workspace's config.yaml, Claude Code's `.mcp.json`
    (with `compat`), `mcp_servers:` of the user's config.yaml, and the servers plugins registered."""
    diags: list[Diagnostic] = []
    entries: list[tuple[McpServerSpec, Source]] = []

    def from_config(cf: ConfigFile | None) -> None:
        if cf is not None and cf.mcp_servers:
            source = config_file_source(cf.level)
            specs, d = parse_mcp_servers(cf.mcp_servers, path=cf.path, source=source, doc=cf.doc)
            diags.extend(d)
            entries.extend((s, source) for s in specs)

    from bearagent.config.claude_settings import mcp_switches

    switches = mcp_switches(files.claude)
    from_config(files.workspace)
    if files.compat:
        source = mcp_json_source(root)
        found = load_mcp_json(root / ".mcp.json", source, diags)
        entries.extend((s, source) for s in found if _mcp_json_server_on(s.name, switches, diags))
    from_config(files.user)
    for plugin, spec in contributions.mcp_servers:
        entries.append((spec, contribution_source(plugin)))
    for path, servers, source in plugin_servers:  # Claude Code plugins' .mcp.json (plugins/claude_plugins.py)
        specs, d = parse_mcp_servers(servers, path=path, source=source, prefix="mcpServers")
        diags.extend(d)
        entries.extend((s, source) for s in specs)
    entries = [(s, src) for s, src in entries if _server_on(s.name, switches, diags)]
    return build_mcp_registry(entries, diags)


def _left_out(name: str, why: str, where: str, fix: str, diags: list[Diagnostic]) -> bool:
    diags.append(
        Diagnostic(
            severity="info",
            code="mcp.server_switched_off",
            message=f"MCP server {name!r} is not loaded: {why}",
            source=where,
            subject=name,
            fix=fix,
        )
    )
    return False


def _mcp_json_server_on(name: str, switches: Mapping[str, object], diags: list[Diagnostic]) -> bool:
    """Claude Code's `.mcp.json` switches: `disabledMcpjsonServers` leaves a server out; `enabledMcpjsonServers`
    loads only the servers it names, unless `enableAllProjectMcpServers` is true. Without either every server
    loads (after `bearagent trust`, BearAgent's approval of a project's servers)."""
    disabled = cast(dict[str, str], switches.get("disabledMcpjsonServers", {}))
    if name in disabled:
        why = "disabledMcpjsonServers names it"
        return _left_out(name, why, disabled[name], "remove it from disabledMcpjsonServers to load it", diags)
    enabled = cast("dict[str, str] | None", switches.get("enabledMcpjsonServers"))
    enable_all = cast("tuple[bool, str] | None", switches.get("enableAllProjectMcpServers"))
    if enabled is not None and name not in enabled and not (enable_all is not None and enable_all[0]):
        where = next(iter(enabled.values()), "")
        why = f"enabledMcpjsonServers lists only {', '.join(sorted(enabled)) or 'none'}"
        return _left_out(name, why, where, "add it to enabledMcpjsonServers to load it", diags)
    return True


def _server_on(name: str, switches: Mapping[str, object], diags: list[Diagnostic]) -> bool:
    """`deniedMcpServers` leaves a server of any source out; `allowedMcpServers` (when set) loads only those it
    names. Matched by `serverName` (Claude Code's managed settings; read here from the project's files, as they only
    narrow)."""
    denied = cast(dict[str, str], switches.get("deniedMcpServers", {}))
    if name in denied:
        return _left_out(name, "deniedMcpServers names it", denied[name], "remove it from deniedMcpServers", diags)
    allowed = cast("dict[str, str] | None", switches.get("allowedMcpServers"))
    if allowed is not None and name not in allowed:
        where = next(iter(allowed.values()), "")
        why = f"allowedMcpServers lists only {', '.join(sorted(allowed)) or 'none'}"
        return _left_out(name, why, where, "add {serverName} for it to allowedMcpServers", diags)
    return True
