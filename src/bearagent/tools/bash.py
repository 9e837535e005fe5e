"""`Bash{command, timeout?, description?, run_in_background?}`: run a shell command in the workspace root, inside
the shell sandbox. With `run_in_background` it starts the command and returns its shell id at once
(`tools/background.py`; BashOutput reads it, KillShell ends it).

The command runs under `/bin/bash -c`, started by `bearagent.sandbox.launch.shell_launch`: in the sandbox
(bubblewrap on Linux: the workspace writable except its control files, the rest read-only, secret stores hidden,
no network or only the listed hosts through a proxy, a private /tmp, own PID namespace) unless `sandbox: off` or
the sandbox cannot start (then the policy asks first, and the command runs under a subreaper that kills whatever it
leaves behind). Its environment is the
`shell_env` policy's (`bearagent.sandbox.env`: no API keys, no secret-looking variables by default). It runs in its
own session/process group with stdin from /dev/null. A timeout, a cancellation, or the command finishing while
background children still hold its pipes: each ends every process it started. stdout and stderr are each capped
(head and tail kept, the middle cut with a note); `ToolResult.data` is `{stdout, stderr, exit_code, interrupted}`
(hooks rely on that shape).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, int_arg, str_arg, tool_error

if TYPE_CHECKING:
    from bearagent.sandbox.launch import ShellLaunch

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_STREAM_CHARS = 30_000
KILL_GRACE_S = 0.5
REAPER_STOP_S = 30.0
"""How long the reaper gets, after SIGTERM, to kill the command's tree and exit (it takes milliseconds): only then
is its group killed, and a SIGKILL of the reaper leaves any `setsid` daemon of the command to init. Generous, so a
loaded machine that schedules the reaper late cannot turn a clean stop into a survivor."""
DRAIN_AFTER_EXIT_S = 0.2
SHELL = "/bin/bash"

SPEC = ToolSpec(
    name="Bash",
    description=(
        "Run a shell command (bash) in the workspace root, inside a sandbox: files can be written only in the "
        "workspace and /tmp (a private /tmp, emptied after each call), the workspace's control files (.bearagent/, "
        ".claude/, .mcp.json, AGENTS.md, CLAUDE.md, .git/config, .git/hooks) are read-only, there is no network "
        "(installing packages or fetching URLs fails) unless the config allows it (when it allows some hosts, "
        "HTTP_PROXY/HTTPS_PROXY point to a proxy that reaches only those), and API keys and other secrets are not in the environment. "
        f"No stdin; `timeout` in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}); on timeout "
        "every process of the command is killed. stdout and stderr are returned (long output is cut in the "
        "middle) with the exit code. Processes left running in the background are killed when the command ends. "
        "Use Read/Grep/Glob rather than cat/grep/find. Set `run_in_background: true` for a long-running command "
        "(a dev server, a watcher): it returns a shell id at once; read its output with BashOutput and stop it with "
        "KillShell."
    ),
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1, "description": "The command to run."},
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TIMEOUT_MS,
                    "description": "Timeout in milliseconds.",
                },
                "description": {
                    "type": "string",
                    "maxLength": 1000,
                    "description": "What the command does, in 5-10 words.",
                },
                "run_in_background": {
                    "type": "boolean",
                    "description": "Start the command and return at once; read it with BashOutput.",
                },
            },
            "required": ["command"],
            "additionalProperties": False,
        }
    ),
    side_effect="execute",
    version="1",
    timeout_ms=MAX_TIMEOUT_MS + 30_000,
)


class Capture:
    """Keep the first and last part of a stream; count what was cut."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit * 2 // 3
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> tuple[str, int]:
        cut = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", "replace")
        if cut <= 0:
            return head + self.tail.decode("utf-8", "replace"), 0
        tail = self.tail.decode("utf-8", "replace")
        return f"{head}\n… [{cut} bytes of output cut] …\n{tail}", cut


async def _pump(stream: asyncio.StreamReader, capture: Capture) -> None:
    while True:
        chunk = await stream.read(65_536)
        if not chunk:
            return
        capture.feed(chunk)


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """Wait for the shell to exit. Not `proc.wait()`: on 3.11 it also waits for every pipe to close, which a
    background child holding stdout would delay forever. On Linux a pidfd wakes us the moment it exits (polling
    alone added up to half the time of a short command); the loop then only waits for the child watcher."""
    fd: int | None = None
    if proc.returncode is None and hasattr(os, "pidfd_open"):
        with contextlib.suppress(OSError):
            fd = os.pidfd_open(proc.pid)
    if fd is not None:
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()
        loop.add_reader(fd, lambda: ended.done() or ended.set_result(None))
        try:
            await ended
        finally:
            loop.remove_reader(fd)
            os.close(fd)
    delay = 0.0005
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return proc.returncode


def _kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _stop(proc: asyncio.subprocess.Process, launch: ShellLaunch) -> None:
    """End the command and everything it started. Under the reaper: SIGTERM to the reaper first (it kills the
    whole tree, `setsid` daemons included, then exits), SIGKILL of the group only after it. In the sandbox, killing
    bubblewrap ends the PID namespace."""
    try:
        if proc.returncode is None and launch.graceful_stop:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_exited(proc), REAPER_STOP_S)
    finally:
        _kill_group(proc.pid)


class BashTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        command = str_arg(arguments, "command")
        if "\x00" in command:
            raise tool_error("validation", "invalid_arguments", "Bash command contains a NUL byte; remove it.")
        out: dict[str, object] = {
            "command": command,
            "timeout": min(int_arg(arguments, "timeout", DEFAULT_TIMEOUT_MS), MAX_TIMEOUT_MS),
        }
        if isinstance(arguments.get("description"), str):
            out["description"] = arguments["description"]
        if arguments.get("run_in_background") is True:
            out["run_in_background"] = True
        return out

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        command = str_arg(arguments, "command")
        if arguments.get("run_in_background") is True:
            return self._background(command, context)
        timeout_ms = int_arg(arguments, "timeout", DEFAULT_TIMEOUT_MS)
        return await self._foreground(command, timeout_ms, context)

    async def _foreground(self, command: str, timeout_ms: int, context: ToolContext) -> ToolResult:
        from bearagent.sandbox.launch import shell_launch  # the launcher and its backend: on the first command

        launch = shell_launch((SHELL, "-c", command), context.settings, context.workspace_root)
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv,
                cwd=str(context.workspace_root),
                env=launch.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except BaseException:
            launch.finish()
            raise
        pgid = proc.pid  # start_new_session makes the child its own group leader
        out, err = Capture(MAX_STREAM_CHARS), Capture(MAX_STREAM_CHARS)
        assert proc.stdout is not None and proc.stderr is not None
        pumps = asyncio.gather(_pump(proc.stdout, out), _pump(proc.stderr, err))
        timed_out = False
        notes: list[str] = []
        disarmed: list[str] = []  # repositories the call planted, disabled (`sandbox/git_plants.py`)
        try:
            try:
                await asyncio.wait_for(_exited(proc), timeout_ms / 1000)
            except TimeoutError:
                timed_out = True
                _kill_group(pgid, signal.SIGTERM)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(_exited(proc), REAPER_STOP_S if launch.graceful_stop else KILL_GRACE_S)
                await _stop(proc, launch)
                await _exited(proc)
            try:
                # children left in the background may keep the pipes open: give them a moment, then end them
                await asyncio.wait_for(asyncio.shield(pumps), DRAIN_AFTER_EXIT_S)
            except TimeoutError:
                await _stop(proc, launch)
                await asyncio.wait_for(asyncio.shield(pumps), 5)
        finally:
            # also reached on cancellation: nothing the command started survives the call, and the pipes' pumps
            # are always settled (a step above that raises, or a second cancel, must not leave them unretrieved)
            try:
                try:
                    await _stop(proc, launch)
                finally:
                    notes = launch.notes()
                    disarmed = launch.finish()
            finally:
                if proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                if not pumps.done():
                    # the group is dead, so the pipes close at once; let the transport finish cleanly
                    with contextlib.suppress(asyncio.CancelledError, TimeoutError, Exception):
                        await asyncio.wait_for(asyncio.shield(pumps), 2)
                    if not pumps.done():
                        pumps.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pumps  # retrieved in every case (done, failed or cancelled)
        exit_code = proc.returncode if proc.returncode is not None else -1
        stdout, cut_out = out.text()
        stderr, cut_err = err.text()
        if notes:  # the kernel refused a fork or killed a process at the call's ceiling (`sandbox/cgroups.py`)
            stderr = (stderr.rstrip("\n") + "\n" if stderr else "") + "\n".join(notes) + "\n"
        parts: list[str] = []
        if stdout:
            parts.append(stdout.rstrip("\n"))
        if stderr:
            parts.append(("stderr:\n" if stdout else "") + stderr.rstrip("\n"))
        if timed_out:
            parts.append(f"[Command timed out after {timeout_ms} ms; its whole process group was killed.]")
        elif exit_code != 0:
            parts.append(f"[Exit code {exit_code}]")
        parts += disarmed
        if not parts:
            parts.append("(no output)")
        data = {
            "stdout": stdout,
            "stderr": stderr,
            "exit_code": exit_code,
            "interrupted": timed_out,
        }
        content = "\n".join(parts)
        truncated = bool(cut_out or cut_err)
        if timed_out:
            error = tool_error(
                "timeout",
                "command_timeout",
                f"Command timed out after {timeout_ms} ms and was killed (with every process it started). "
                "Raise `timeout` (max 600000) or run something shorter.",
            ).info
            result = self.failed(context, error, data)
            return result.model_copy(update={"content": content + "\n" + error.message, "truncated": truncated})
        if exit_code != 0:
            # as in Claude Code, a non-zero exit is an error result; the output is all there for the model
            error = tool_error(
                "tool", "nonzero_exit", f"Command exited with code {exit_code}.", exit_code=exit_code
            ).info
            result = self.failed(context, error, data)
            return result.model_copy(update={"content": content, "truncated": truncated})
        return self.ok(context, content, data, truncated=truncated)

    def _background(self, command: str, context: ToolContext) -> ToolResult:
        from bearagent.tools.background import MAX_BUFFER_BYTES, shell_owner, start_shell

        shell = start_shell(command, context.settings, context.workspace_root, shell_owner(context))
        where = "in the sandbox" if shell.launch.sandboxed else "unconfined, under the reaper"
        return self.ok(
            context,
            f"Command running in the background with ID: {shell.shell_id} ({where}). Read its output with "
            f"BashOutput(bash_id={shell.shell_id!r}); stop it with KillShell(shell_id={shell.shell_id!r}). The last "
            f"{MAX_BUFFER_BYTES // 1024} KiB of each stream are kept.",
            {"stdout": "", "stderr": "", "exit_code": None, "interrupted": False, "bash_id": shell.shell_id},
        )
