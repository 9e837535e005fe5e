"""Resolve an `McpServerSpec` into what is launched or dialled, at connect time (no SDK import).

`${VAR}` / `${VAR:-default}` are expanded in `command`, `args`, `env` values, `cwd`, `url` and `headers` values
against the manager's environment. A stdio server is trusted code (a user-level entry, a plugin's, or a workspace's
after `bearagent trust`), so, as in Claude Code, it inherits the manager's whole environment (CA bundles such as
`SSL_CERT_FILE`, proxy variables, `UV_*`/`NPM_*` settings: without them `uvx`/`npx` servers fail behind a proxy or
a private CA), and the entry's `env` is laid over it. (The SDK also adds HOME, LOGNAME, PATH, SHELL, TERM and USER
from the process environment under ours; the values we pass win.) Only Bash gets a filtered environment
(`bearagent.sandbox.env`).

With `sandbox.mcp: true` a stdio launch is wrapped in the Bash sandbox (`confine`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.config.env import expand_env
from bearagent.domain.specs import McpServerSpec
from bearagent.mcp.errors import McpFailure

if TYPE_CHECKING:
    from bearagent.sandbox.settings import SandboxSettings


def where_of(spec: McpServerSpec) -> str:
    """How messages name the entry, e.g. `.mcp.json: mcpServers.time` or `mcp_servers.time`."""
    source = spec.source.strip()
    key = "mcpServers" if source.endswith(".mcp.json") else "mcp_servers"
    return f"{source}: {key}.{spec.name}" if source else f"{key}.{spec.name}"


@dataclass(frozen=True, slots=True)
class Launch:
    """A resolved server entry. `secrets` are values that must never appear in messages (env and header values).
    `cleanup` (a sandboxed stdio server, `sandbox.mcp: true`) is called once the server process is gone."""

    transport: str
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    secrets: tuple[str, ...] = ()
    oauth_store: str | None = None
    """http: the file that holds this server's OAuth login (`bearagent mcp login`), whether or not it exists."""
    oauth_client_id: str | None = None
    oauth_callback_port: int | None = None
    cleanup: Callable[[], None] | None = field(default=None, compare=False)


def resolve_launch(spec: McpServerSpec, env: Mapping[str, str], workspace_root: Path) -> Launch:
    """Expand the entry. Raises `BearAgentError` (configuration) naming the variable and the field."""
    where = where_of(spec)
    if spec.transport == "http":
        if not spec.url:
            from bearagent.domain.errors import BearAgentError, ErrorInfo

            raise BearAgentError(
                ErrorInfo.of("configuration", "mcp_missing_url", f"{where}: an http server needs `url`"),
                hint=f'add url: "http://127.0.0.1:PORT/mcp" to {where}',
            )
        url = expand_env(spec.url, env, where=f"{where}.url")
        headers = {k: expand_env(v, env, where=f"{where}.headers.{k}") for k, v in spec.headers.items()}
        from bearagent.config.workspace import user_config_dir
        from bearagent.mcp.oauth import token_path

        store = token_path(user_config_dir(env), spec.name, url)
        return Launch(
            transport="http",
            url=url,
            headers=headers,
            secrets=_secrets(headers.values()),
            oauth_store=str(store),
            oauth_client_id=spec.oauth_client_id,
            oauth_callback_port=spec.oauth_callback_port,
        )
    if not spec.command:
        from bearagent.domain.errors import BearAgentError, ErrorInfo

        raise BearAgentError(
            ErrorInfo.of("configuration", "mcp_missing_command", f"{where}: a stdio server needs `command`"),
            hint=f"add command: <executable> (and args: [...]) to {where}",
        )
    command = (
        expand_env(spec.command, env, where=f"{where}.command"),
        *(expand_env(a, env, where=f"{where}.args[{i}]") for i, a in enumerate(spec.args)),
    )
    extra = {k: expand_env(v, env, where=f"{where}.env.{k}") for k, v in spec.env.items()}
    child_env = dict(env)
    child_env.update(extra)
    cwd = workspace_root
    if spec.cwd:
        given = Path(expand_env(spec.cwd, env, where=f"{where}.cwd")).expanduser()
        cwd = given if given.is_absolute() else workspace_root / given
    return Launch(transport="stdio", command=command, env=child_env, cwd=str(cwd), secrets=_secrets(extra.values()))


def _secrets(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({v for v in values if len(v) >= 4}, key=len, reverse=True))


def redact(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def confine(
    launch: Launch, sandbox: SandboxSettings, workspace_root: Path, server: str, why: tuple[str, str] | None = None
) -> Launch | McpFailure:
    """The stdio launch wrapped in the sandbox (`bearagent.sandbox.launch.confined_launch`, same environment), or
    why the server cannot start (the sandbox is unavailable or could not be prepared): it never runs unconfined.
    `why`: the reason and fix to name when it is confined for runs' writes (`mcp/after_writes.py`), not `mcp: true`."""
    from bearagent.sandbox.launch import SandboxUnavailableError, confined_launch, unavailable_message

    try:
        confined = confined_launch(
            launch.command,
            sandbox,
            launch.env,
            workspace_root,
            cwd=Path(launch.cwd) if launch.cwd else None,
        )
    except (SandboxUnavailableError, OSError) as exc:
        what = f"MCP server {server!r}"
        if isinstance(exc, SandboxUnavailableError) and why is not None:
            return McpFailure(
                "sandbox_unavailable", f"{why[0]}, and the sandbox cannot start ({exc.status.reason}).", why[1]
            )
        if isinstance(exc, SandboxUnavailableError):
            message = unavailable_message(what, "mcp", exc.status)
        else:
            message = f"{what} was not run: the sandbox could not be prepared ({exc.strerror or exc})"
        message, _, fix = message.partition(". To fix: ")
        return McpFailure("sandbox_unavailable", message + ".", fix or "check `bearagent doctor`.")
    done = False

    def cleanup() -> None:
        nonlocal done
        if not done:
            done = True
            confined.finish()

    return replace(launch, command=confined.argv, env=confined.env, cleanup=cleanup)
