"""The server's own configuration (`bearagent serve --config FILE`): which workspaces it serves, how gateway tokens
are verified, and its limits. The file belongs to whoever runs the server (it is trusted, like user config); no
workspace file can change any of it.

```yaml
workspaces:
  - {id: docs, path: /srv/repos/docs, name: Docs site, external_ref: "gh:acme/docs", metadata: {team: web}}
auth:
  jwt: {key_file: gateway-public.pem, algorithms: [RS256], audience: bearagent, issuer: https://gateway.example}
  proxy: {trusted: [127.0.0.1/32], subject_header: X-Forwarded-User}   # identity headers from these addresses only
limits: {max_body_bytes: 1048576, max_active_runs_per_caller: 8, max_sse_per_caller: 16, sse_idle_timeout_s: 300}
runs: {resume_on_start: true}   # continue interrupted runs (and answered waiting ones) when the server starts
store: {backend: postgres, dsn: '${BEARAGENT_DATABASE_URL}'}   # every served workspace's store (quoted in {...})
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from bearagent.config.safe_yaml import yaml_bounds_problem
from bearagent.config.store_settings import StoreSettings, parse_store
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.server.auth import JwtSettings, ProxySettings
from bearagent.server.registry import WorkspaceEntry, workspace_id_for


@dataclass(frozen=True, slots=True)
class ServerConfig:
    workspaces: Mapping[str, WorkspaceEntry] = field(default_factory=dict[str, WorkspaceEntry])
    jwt: JwtSettings | None = None
    proxy: ProxySettings | None = None
    max_body_bytes: int = 1_048_576
    max_active_runs_per_caller: int = 8
    max_sse_per_caller: int = 16
    sse_idle_timeout_s: float = 300.0
    header_timeout_s: float = 10.0
    """`limits.header_timeout_s`: a connection's request head must be complete this long after it opened (or
    after its last response), else it is closed (`server/edges.py`)."""
    keep_alive_timeout_s: float = 5.0
    """`limits.keep_alive_timeout_s`: an idle keep-alive connection is closed after this long."""
    max_header_bytes: int = 16_384
    """`limits.max_header_bytes`: the largest request head (uvicorn's `h11_max_incomplete_event_size`)."""
    max_connections: int = 1_000
    """`limits.max_connections`: a connection opened while this many are open is answered 503 and closed."""
    body_timeout_s: float = 60.0
    """`limits.body_timeout_s`: a request's body must have arrived this long after the request started, else 408."""
    resume_on_start: bool = False
    store: StoreSettings | None = None
    """`store:`: where every served workspace keeps its runs (outranks the user config's; None: as each workspace
    chooses without a server, `config/store_settings.choose_store`)."""

    @property
    def gateway_auth(self) -> bool:
        """Whether callers other than the local token's holder can be told apart (a non-loopback bind needs it)."""
        return self.jwt is not None or self.proxy is not None


def _bad(path: Path | None, message: str, fix: str) -> BearAgentError:
    where = f"{path}: " if path is not None else ""
    return BearAgentError(ErrorInfo.of("configuration", "server_config", where + message), hint=fix)


def load_server_config(path: Path | None, extra_dirs: Sequence[Path]) -> ServerConfig:
    """The config file (if any) plus `-w DIR` workspaces; a bad file is an error naming the key and the fix."""
    import yaml

    raw: dict[str, object] = {}
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise _bad(path, f"cannot read it ({exc.strerror or exc})", "check the path given to --config") from None
        bounds = yaml_bounds_problem(text)
        if bounds is not None:
            raise _bad(path, bounds[1], "shorten the file")
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise _bad(path, f"invalid YAML ({exc})", "fix the YAML syntax") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise _bad(path, "the top level must be a mapping", "write `workspaces:`, `auth:`, `limits:` keys")
        raw = cast(dict[str, object], loaded or {})
    base = path.parent if path is not None else Path.cwd()
    entries: dict[str, WorkspaceEntry] = {}
    items = raw.get("workspaces", [])
    if not isinstance(items, list):
        raise _bad(path, "`workspaces` must be a list", "write `workspaces: [{id: docs, path: /srv/docs}]`")
    for index, item in enumerate(cast(list[object], items)):
        if not isinstance(item, dict) or not isinstance(cast(dict[str, object], item).get("path"), str):
            raise _bad(path, f"workspaces[{index}] needs a `path`", "write `- {id: docs, path: /srv/docs}`")
        data = cast(dict[str, object], item)
        root = Path(cast(str, data["path"])).expanduser()
        root = root if root.is_absolute() else (base / root)
        ws_id = data.get("id") if isinstance(data.get("id"), str) else workspace_id_for(root, set(entries))
        assert isinstance(ws_id, str)
        if ws_id in entries:
            raise _bad(path, f"workspace id {ws_id!r} is used twice", "give every workspace its own `id`")
        entries[ws_id] = _entry(ws_id, root.resolve(), data, path=path, index=index)
    for directory in extra_dirs:
        root = directory.expanduser().resolve()
        ws_id = workspace_id_for(root, set(entries))
        entries[ws_id] = _entry(ws_id, root, {})
    if not entries:
        raise _bad(path, "no workspace to serve", "pass -w DIR (repeatable) or list `workspaces:` in --config")
    auth = cast(Mapping[str, object], raw.get("auth") or {})
    jwt_raw = auth.get("jwt")
    jwt = None
    if isinstance(jwt_raw, dict):
        try:
            jwt = JwtSettings.from_config(cast(Mapping[str, object], jwt_raw), base)
        except (OSError, ValueError) as exc:
            raise _bad(path, f"auth.jwt: {exc}", "see docs/server.md#auth") from None
    proxy_raw = auth.get("proxy")
    proxy = None
    if proxy_raw is not None:
        if not isinstance(proxy_raw, dict):
            raise _bad(path, "auth.proxy must be a mapping", "write `proxy: {trusted: [127.0.0.1/32]}`")
        try:
            proxy = ProxySettings.from_config(cast(Mapping[str, object], proxy_raw))
        except ValueError as exc:
            raise _bad(path, str(exc), "see docs/server.md#auth") from None
    limits = cast(Mapping[str, object], raw.get("limits") or {})
    runs: object = raw.get("runs") or {}
    if not isinstance(runs, dict):
        raise _bad(path, "`runs` must be a mapping", "write `runs: {resume_on_start: true}`")
    resume = cast(Mapping[str, object], runs).get("resume_on_start", False)
    if not isinstance(resume, bool):
        raise _bad(path, f"runs.resume_on_start must be true or false, not {resume!r}", "write `resume_on_start: true`")
    return ServerConfig(
        resume_on_start=resume,
        store=_store(path, raw["store"]) if raw.get("store") is not None else None,
        workspaces=entries,
        jwt=jwt,
        proxy=proxy,
        max_body_bytes=_int(limits, "max_body_bytes", 1_048_576),
        max_active_runs_per_caller=_int(limits, "max_active_runs_per_caller", 8),
        max_sse_per_caller=_int(limits, "max_sse_per_caller", 16),
        sse_idle_timeout_s=_seconds(limits, "sse_idle_timeout_s", 300.0),
        header_timeout_s=_seconds(limits, "header_timeout_s", 10.0),
        keep_alive_timeout_s=_seconds(limits, "keep_alive_timeout_s", 5.0),
        max_header_bytes=_int(limits, "max_header_bytes", 16_384),
        max_connections=_int(limits, "max_connections", 1_000),
        body_timeout_s=_seconds(limits, "body_timeout_s", 60.0),
    )


def _store(path: Path | None, value: object) -> StoreSettings:
    """The server's `store:`; every problem (an unknown key too, and a literal `dsn:`) stops the server, naming the
    key, never its value."""
    parsed, problems = parse_store(value, level="server")
    if problems:
        first = problems[0]
        raise _bad(path, f"{first.field}: {first.message}", first.fix)
    return StoreSettings.model_validate({**parsed, "source": str(path)})


def _entry(
    ws_id: str, root: Path, data: Mapping[str, object], *, path: Path | None = None, index: int = 0
) -> WorkspaceEntry:
    """One served workspace. `execution_policy: none` marks it so (`config/execution.py`); the entry records the
    policy in force (a chat workspace, or one whose own config says `none`, is `none` whatever the server says)."""
    from bearagent.workspace import load_workspace

    policy = data.get("execution_policy", "local")
    if policy not in ("local", "none"):
        raise _bad(
            path,
            f"workspaces[{index}].execution_policy must be local or none, got {policy!r}",
            "write `execution_policy: none` (no tools, MCP servers or hooks run) or remove the key",
        )
    config = load_workspace(root, execution_policy=policy).config
    name = data.get("name")
    ref = data.get("external_ref")
    meta = data.get("metadata")
    return WorkspaceEntry(
        id=ws_id,
        name=name if isinstance(name, str) else root.name,
        root_path=root,
        kind=config.kind,
        external_ref=ref if isinstance(ref, str) else None,
        metadata=cast(Mapping[str, object], meta) if isinstance(meta, dict) else {},
        execution_policy=config.execution_policy,
        declared_policy=policy,
    )


def _seconds(raw: Mapping[str, object], key: str, default: float) -> float:
    value = raw.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise _bad(None, f"limits.{key} must be a positive number of seconds", f"write `{key}: {default:g}`")
    return float(value)


def _int(raw: Mapping[str, object], key: str, default: int) -> int:
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise _bad(None, f"limits.{key} must be a positive integer", f"write `{key}: {default}`")
    return value
