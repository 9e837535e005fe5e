"""The handler types. Each takes the hook input JSON and returns one `HandlerResult` — never raises for a
handler's own misbehaviour (timeout, crash, bad output, missing executable): those become `HandlerFailure`s that
the dispatcher resolves with the handler's `on_failure`.

- `command`: `command` + `args` is the exec form (no shell); `command` alone runs under `bash -c` (Claude Code's
  default `shell`; `/bin/sh -c` without bash). cwd is the workspace root, stdin is the JSON, no controlling terminal
  (own session and process group), env adds `BEARAGENT_PROJECT_DIR` and `CLAUDE_PROJECT_DIR`. A timeout kills the whole process group. With `sandbox.hooks:
  true` (`RunnerContext.sandbox`), and after the session's first call that may write (`hooks/after_writes.py`), it
  runs in the Bash sandbox (same environment); when the sandbox cannot start, the handler fails
  (`sandbox_unavailable`) and is never run unconfined.
- `http`: POST the JSON; `${VAR}` in `url` and `headers` expand from the environment; a 2xx JSON object is the
  output, an empty 2xx body is a plain success; anything else is a failure.
- `prompt` / `agent`: an injected model judge (or read-only subagent) answers `{ok, reason}`; `ok: false` blocks.
- `python`: a callable contributed by a plugin, looked up by `handler` name; takes the input dict, returns the
  output dict or None. Sync callables run in a worker thread.
- `mcp_tool`: calls a tool of a configured MCP server (`hooks/mcp_tool.py`).

Why it is over 400 lines: the six handler types share one contract (input JSON in, `HandlerResult` out, failures as
values, bounded output), and the command type's process handling (shell, sandbox, process group) is most of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import os
import shutil
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, cast
from urllib.parse import urlsplit, urlunsplit

from bearagent.config.env import expand_env
from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError
from bearagent.domain.specs import HookHandlerSpec
from bearagent.domain.trace_context import environment
from bearagent.hooks.after_writes import Confinement, confinement, own_scripts
from bearagent.hooks.mcp_tool import McpCaller, run_mcp_tool
from bearagent.hooks.protocol import (
    HandlerFailure,
    HandlerResult,
    HookOutputError,
    HookReply,
    JsonDict,
    bound_text,
    reply_from_command,
    reply_from_json,
    reply_from_judgement,
)

if TYPE_CHECKING:
    from bearagent.rewind.workspace_writes import WritesRecord
    from bearagent.sandbox.launch import ShellLaunch
    from bearagent.sandbox.settings import SandboxSettings

MAX_STREAM_BYTES = 1_048_576
"""Bytes kept of a command hook's stdout and of its stderr; the rest is read and dropped."""
EXIT_GRACE_S = 1.0
"""After a command exits, how long a background child may keep its output pipes open before the group is killed."""

Judge: TypeAlias = Callable[[str, str | None], Awaitable[str]]
"""`judge(prompt_text, model)` -> the model's answer text (`model` is the handler's `model`, None = default)."""
AgentJudge: TypeAlias = Callable[[str, str | None], Awaitable[str]]
"""`agent_judge(prompt_text, agent_name)` -> the final text of a read-only subagent run."""
PythonHookFunction: TypeAlias = Callable[
    [JsonDict], "Mapping[str, JsonValue] | None | Awaitable[Mapping[str, JsonValue] | None]"
]
"""A plugin's Python hook: takes the input JSON object, returns the output object (or None = no opinion)."""

JUDGE_FORMAT = 'Answer with only a JSON object: {"ok": true} to let this proceed, or {"ok": false, "reason": "why"}.'


@dataclass(frozen=True, slots=True)
class RunnerContext:
    workspace_root: Path
    env: Mapping[str, str]
    python_handlers: Mapping[str, PythonHookFunction] = field(default_factory=dict[str, PythonHookFunction])
    judge: Judge | None = None
    agent_judge: AgentJudge | None = None
    sandbox: SandboxSettings | None = None
    """The merged sandbox settings; command handlers run confined when `sandbox.hooks` is true (None: off)."""
    mcp: McpCaller | None = None
    """Calls a tool of a configured MCP server (`mcp_tool` handlers); None: no MCP connections are open."""
    trace: Mapping[str, str] = field(default_factory=dict[str, str])
    """The W3C trace context to send (`traceparent`...): http headers, command environment; empty: none."""
    session_id: str | None = None
    """The session whose hooks these are: after its first call that may write, command hooks run confined."""
    writes: WritesRecord | None = None
    """The user's durable record of runs' writes: after one in this workspace since its trust, hooks run confined."""


def describe_handler(spec: HookHandlerSpec) -> str:
    """A short, secret-free label for logs and events (URLs lose their query; headers never appear)."""
    if spec.type == "command":
        text = " ".join([spec.command or "", *(spec.args or ())]).strip()
        return bound_text(f"command: {text}", 300)
    if spec.type == "http":
        return bound_text(f"http: {_url_without_query(spec.url or '')}", 300)
    if spec.type == "prompt":
        return bound_text(f"prompt: {(spec.prompt or '').splitlines()[0] if spec.prompt else ''}", 120)
    if spec.type == "agent":
        return f"agent: {spec.agent or 'default'}"
    if spec.type == "mcp_tool":
        return bound_text(f"mcp_tool: {spec.server or ''}.{spec.tool or ''}", 300)
    return f"python: {spec.handler or ''}"


def _url_without_query(url: str) -> str:
    """Scheme, host, port and path only: no user:password, no query (tokens often ride there), no fragment."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or ""
    return urlunsplit((parts.scheme, f"{host}:{port}" if port else host, parts.path, "", ""))


async def run_handler(spec: HookHandlerSpec, event: str, hook_input: JsonDict, ctx: RunnerContext) -> HandlerResult:
    """Run one handler within its timeout. Cancellation propagates (after killing a command's process group)."""
    if spec.type == "command":
        return await run_command(spec, event, hook_input, ctx)
    try:
        async with asyncio.timeout(spec.timeout_s):
            if spec.type == "http":
                return await run_http(spec, event, hook_input, ctx)
            if spec.type in ("prompt", "agent"):
                return await run_judge(spec, hook_input, ctx)
            if spec.type == "mcp_tool":
                return await run_mcp_tool(spec, event, hook_input, ctx.mcp)
            return await run_python(spec, event, hook_input, ctx)
    except TimeoutError:
        return HandlerFailure("timeout", f"did not answer within {spec.timeout_s:g}s (timeout)")


# ---- command -------------------------------------------------------------------------------------------------


def _substitute_project_dir(word: str, workspace_root: Path) -> str:
    for var in ("CLAUDE_PROJECT_DIR", "BEARAGENT_PROJECT_DIR"):
        word = word.replace("${" + var + "}", str(workspace_root)).replace("$" + var, str(workspace_root))
    return word


@functools.cache
def hook_shell() -> str:
    """bash, as Claude Code runs a hook's shell form (its `shell` defaults to `bash`): plugin scripts use bash syntax,
    and a file without `#!` (Anthropic's `run-hook.cmd`) runs in the calling shell (dash fails on `${@:2}`)."""
    return shutil.which("bash") or "/bin/sh"


def command_argv(spec: HookHandlerSpec, workspace_root: Path) -> list[str]:
    """Shell form: `bash -c command`. Exec form: `command` + `args`, no shell; `$CLAUDE_PROJECT_DIR` /
    `$BEARAGENT_PROJECT_DIR` are substituted in each element, and a relative path starts at the workspace root."""
    command = spec.command or ""
    if spec.args is None:
        return [hook_shell(), "-c", command]
    command = _substitute_project_dir(command, workspace_root)
    if "/" in command and not os.path.isabs(command):
        command = str(workspace_root / command)
    return [command, *(_substitute_project_dir(arg, workspace_root) for arg in spec.args)]


def command_env(ctx: RunnerContext) -> dict[str, str]:
    env = dict(ctx.env)
    env["BEARAGENT_PROJECT_DIR"] = str(ctx.workspace_root)
    env["CLAUDE_PROJECT_DIR"] = str(ctx.workspace_root)
    env.update(environment(ctx.trace))
    return env


async def _read_bounded(stream: asyncio.StreamReader | None) -> bytes:
    if stream is None:
        return b""
    kept = bytearray()
    while True:
        chunk = await stream.read(65_536)
        if not chunk:
            return bytes(kept)
        room = MAX_STREAM_BYTES - len(kept)
        if room > 0:
            kept += chunk[:room]


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    if proc.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(data)
        await proc.stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.close()


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def _settle(waiter: asyncio.Future[int], readers: Sequence[asyncio.Future[bytes]]) -> None:
    """Let the pipes drain and the transport close (after a kill) so nothing is left for the loop's shutdown."""
    await asyncio.wait([waiter, *readers], timeout=EXIT_GRACE_S * 2)


def _sandboxed(
    argv: list[str], env: dict[str, str], ctx: RunnerContext, why: Confinement
) -> ShellLaunch | HandlerFailure:
    """`argv` wrapped in the sandbox (`sandbox.hooks: true`, or after the model's writes), or the failure that
    keeps it from running at all."""
    import shutil

    from bearagent.sandbox.launch import SandboxUnavailableError, confined_launch
    from bearagent.sandbox.settings import SandboxSettings

    program = argv[0]
    found = os.path.isfile(program) if "/" in program else shutil.which(program, path=env.get("PATH")) is not None
    if not found:  # checked here: inside the sandbox a missing program is only an exit status
        return HandlerFailure("missing_executable", f"executable {program!r} was not found")
    if not os.access(program, os.X_OK) and "/" in program:
        return HandlerFailure("missing_executable", f"{program!r} is not executable (chmod +x it)")
    try:
        shell_form = len(argv) == 3 and argv[1] == "-c" and argv[0] == hook_shell()  # read by own_scripts as sh -c
        own = own_scripts(["/bin/sh", *argv[1:]] if shell_form else argv, ctx.workspace_root, ctx.env)
        return confined_launch(argv, ctx.sandbox or SandboxSettings(), env, ctx.workspace_root, readable=own)
    except SandboxUnavailableError as exc:
        return HandlerFailure("sandbox_unavailable", why.unavailable(exc.status))
    except OSError as exc:
        return HandlerFailure("sandbox_unavailable", f"could not prepare the sandbox: {exc.strerror or exc}")


async def run_command(spec: HookHandlerSpec, event: str, hook_input: JsonDict, ctx: RunnerContext) -> HandlerResult:
    argv = command_argv(spec, ctx.workspace_root)
    env = command_env(ctx)
    launch: ShellLaunch | None = None
    why = await asyncio.to_thread(confinement, ctx.sandbox, ctx.workspace_root, ctx.session_id, ctx.writes)
    if why is not None:
        confined = _sandboxed(argv, env, ctx, why)
        if isinstance(confined, HandlerFailure):
            return confined
        launch = confined
    try:
        return await _run_process(spec, event, hook_input, ctx, launch, argv, env)
    finally:
        if launch is not None:
            launch.finish()


async def _run_process(
    spec: HookHandlerSpec,
    event: str,
    hook_input: JsonDict,
    ctx: RunnerContext,
    launch: ShellLaunch | None,
    argv: list[str],
    env: dict[str, str],
) -> HandlerResult:
    try:
        proc = await asyncio.create_subprocess_exec(
            *(launch.argv if launch is not None else argv),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=ctx.workspace_root,
            env=launch.env if launch is not None else env,
            start_new_session=True,
        )
    except FileNotFoundError:
        return HandlerFailure("missing_executable", f"executable {argv[0]!r} was not found")
    except PermissionError:
        return HandlerFailure("missing_executable", f"{argv[0]!r} is not executable (chmod +x it)")
    except OSError as exc:
        return HandlerFailure("crashed", f"could not start {argv[0]!r}: {exc.strerror or exc}")
    data = json.dumps(hook_input, ensure_ascii=False).encode()
    readers = [asyncio.ensure_future(_read_bounded(proc.stdout)), asyncio.ensure_future(_read_bounded(proc.stderr))]
    feeder = asyncio.ensure_future(_feed(proc, data))
    # `Process.wait()` also waits for the pipes to close, which a backgrounded grandchild can hold open: watch the
    # return code as well, so the hook ends when its own process does.
    waiter = asyncio.ensure_future(proc.wait())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + spec.timeout_s
    try:
        while proc.returncode is None and not waiter.done():
            remaining = deadline - loop.time()
            if remaining <= 0:
                _kill_group(proc)
                await _settle(waiter, readers)
                return HandlerFailure(
                    "timeout", f"did not finish within {spec.timeout_s:g}s; its process group was killed"
                )
            await asyncio.wait({waiter}, timeout=min(0.05, remaining))
        exit_code = proc.returncode if proc.returncode is not None else waiter.result()
        grace = max(0.0, min(EXIT_GRACE_S, deadline - loop.time()))
        _done, pending = await asyncio.wait(readers, timeout=grace)
        if pending:  # a background child still holds the pipes: end it
            _kill_group(proc)
        await _settle(waiter, readers)
        stdout = readers[0].result().decode(errors="replace") if readers[0].done() else ""
        stderr = readers[1].result().decode(errors="replace") if readers[1].done() else ""
    except asyncio.CancelledError:
        _kill_group(proc)
        raise
    finally:
        for task in (*readers, feeder, waiter):
            if not task.done():
                task.cancel()
    return reply_from_command(event, exit_code, stdout, stderr)


# ---- http ----------------------------------------------------------------------------------------------------


async def run_http(spec: HookHandlerSpec, event: str, hook_input: JsonDict, ctx: RunnerContext) -> HandlerResult:
    import httpx

    where = f"hooks: http handler {_url_without_query(spec.url or '')}"
    try:
        url = expand_env(spec.url or "", ctx.env, where=f"{where} url")
        headers = dict(ctx.trace) | {
            name: expand_env(value, ctx.env, where=f"{where} header {name}") for name, value in spec.headers.items()
        }
    except BearAgentError as exc:
        return HandlerFailure("crashed", f"{exc.info.message} ({exc.hint})" if exc.hint else exc.info.message)
    shown = _url_without_query(url)
    try:
        async with httpx.AsyncClient(timeout=spec.timeout_s, follow_redirects=False) as client:
            response = await client.post(url, json=hook_input, headers=headers)
    except httpx.TimeoutException:
        return HandlerFailure("timeout", f"POST {shown} did not answer within {spec.timeout_s:g}s")
    except httpx.HTTPError as exc:
        return HandlerFailure("crashed", f"POST {shown} failed: {type(exc).__name__}")
    if not 200 <= response.status_code < 300:
        return HandlerFailure("http_status", f"POST {shown} answered HTTP {response.status_code}")
    body = response.text.strip()
    if not body:
        return HookReply()
    if not body.startswith("{"):
        return HandlerFailure("bad_output", f"POST {shown} answered 2xx with a body that is not a JSON object")
    try:
        value: object = json.loads(body)
    except json.JSONDecodeError as exc:
        return HandlerFailure("bad_output", f"POST {shown} answered invalid JSON ({exc.msg})")
    try:
        return reply_from_json(event, value)
    except HookOutputError as exc:
        return HandlerFailure("bad_output", str(exc))


# ---- prompt / agent ------------------------------------------------------------------------------------------


def judge_prompt(template: str | None, hook_input: JsonDict) -> str:
    """The handler's prompt with `$ARGUMENTS` replaced by the input JSON (appended when absent), plus the answer
    format."""
    arguments = json.dumps(hook_input, ensure_ascii=False, indent=2)
    text = template or "Judge whether this hook event may proceed."
    text = text.replace("$ARGUMENTS", arguments) if "$ARGUMENTS" in text else f"{text}\n\n{arguments}"
    return f"{text}\n\n{JUDGE_FORMAT}"


async def run_judge(spec: HookHandlerSpec, hook_input: JsonDict, ctx: RunnerContext) -> HandlerResult:
    judge = ctx.judge if spec.type == "prompt" else ctx.agent_judge
    if judge is None:
        return HandlerFailure(
            "unknown_handler",
            f"no {'model' if spec.type == 'prompt' else 'subagent'} is available for {spec.type} hooks",
        )
    target = spec.model if spec.type == "prompt" else spec.agent
    try:
        answer = await judge(judge_prompt(spec.prompt, hook_input), target)
    except TimeoutError:
        raise
    except Exception as exc:
        return HandlerFailure(
            "crashed", f"the {spec.type} judge failed: {type(exc).__name__}: {bound_text(str(exc), 300)}"
        )
    return reply_from_judgement(answer)


# ---- python --------------------------------------------------------------------------------------------------


async def run_python(spec: HookHandlerSpec, event: str, hook_input: JsonDict, ctx: RunnerContext) -> HandlerResult:
    name = spec.handler or ""
    function = ctx.python_handlers.get(name)
    if function is None:
        known = ", ".join(sorted(ctx.python_handlers)) or "none"
        return HandlerFailure(
            "unknown_handler", f"no Python hook handler named {name!r} is registered by a plugin (known: {known})"
        )
    argument = cast(JsonDict, json.loads(json.dumps(hook_input)))
    try:
        if inspect.iscoroutinefunction(function):
            value: object = await function(argument)
        else:
            value = await asyncio.to_thread(function, argument)
            if inspect.isawaitable(value):
                value = await cast(Awaitable[object], value)
    except TimeoutError:
        raise
    except Exception as exc:
        return HandlerFailure("crashed", f"raised {type(exc).__name__}: {bound_text(str(exc), 300)}")
    if value is None:
        return HookReply()
    try:
        return reply_from_json(event, value)
    except HookOutputError as exc:
        return HandlerFailure("bad_output", str(exc))
