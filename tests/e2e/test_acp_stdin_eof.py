"""`bearagent acp` exits on its own, with status 0, when its stdin ends: the editor closed the pipe (with a prompt's
run in flight, which ends cancelled), or stdin was `/dev/null` from the start (issue 29: it used to never exit; the
ACP SDK client's shutdown then waited 2 s, sent SIGTERM, waited again, and the ACP tests flaked under load). SIGTERM
stops it the same way (it used to kill it with the prompt's run still marked running)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.e2e.test_acp import RecordingClient, _initialized, _workspace  # pyright: ignore[reportPrivateUsage]
from tests.support.config_ws import isolated_env
from tests.support.run_ws import open_ws

if TYPE_CHECKING:
    from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

EXIT_BOUND_S = 60.0
"""How long the process may take to exit after end of file. It exits in ~0.2 s on an idle machine; the bound is
generous for a loaded one and still tells the outcomes apart: before the fix it never exited at all."""


@pytest.mark.parametrize("stop", ["end-of-stdin", "sigterm"])
def test_stopping_while_a_prompt_waits_for_permission_exits_0_and_the_run_ends_cancelled(
    tmp_path: Path, stop: str
) -> None:
    from acp import connect_to_agent, text_block

    root, home = _workspace(tmp_path)
    asked = asyncio.Event()

    async def never_answer(
        session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        asked.set()
        await asyncio.Event().wait()  # the user walks away with the question shown; the editor then quits
        raise AssertionError("unreachable")

    client = RecordingClient(never_answer)
    env = {**isolated_env(home), "NO_COLOR": "1"}

    async def go() -> tuple[int, str]:
        with (home / "acp-stderr.log").open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bearagent",
                "acp",
                "--permission-mode",
                "default",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=env,
            )
            assert process.stdin is not None and process.stdout is not None
            conn = connect_to_agent(client, process.stdin, process.stdout)
            await _initialized(conn)
            new = await conn.new_session(cwd=str(root), mcp_servers=[])
            prompt: asyncio.Task[Any] = asyncio.ensure_future(
                conn.prompt(session_id=new.session_id, prompt=[text_block("Summarise notes.md")])
            )
            await asyncio.wait_for(asked.wait(), 120)
            if stop == "sigterm":
                process.send_signal(signal.SIGTERM)  # and stdin stays open
            else:
                process.stdin.close()  # end of file, and nothing else: no signal is sent
            try:
                code = await asyncio.wait_for(process.wait(), EXIT_BOUND_S)
            except TimeoutError:
                process.kill()
                await process.wait()
                raise AssertionError(f"bearagent acp did not exit within {EXIT_BOUND_S} s of {stop}") from None
            prompt.cancel()
            await asyncio.gather(prompt, return_exceptions=True)
            await conn.close()
            return code, new.session_id

    code, session_id = asyncio.run(go())
    stderr = (home / "acp-stderr.log").read_text()
    assert code == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert not (root / "out.txt").exists()  # the Write that waited for permission never ran

    async def status() -> list[str]:
        async with open_ws(root, home) as ws:
            return [r.status for r in ws.runs() if str(r.session_id) == session_id]

    assert asyncio.run(status()) == ["cancelled"]


def test_stdin_dev_null_exits_0_at_once(tmp_path: Path) -> None:
    """`/dev/null` is a character device that epoll refuses: the SDK's reader never saw its end of file."""
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "bearagent", "acp"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={**isolated_env(home), "NO_COLOR": "1"},
        cwd=tmp_path,
        timeout=EXIT_BOUND_S + 30,  # the interpreter's start on a loaded machine, plus the bound above
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    assert done.stdout == b""


def test_a_regular_file_as_stdin_and_stdout_exits_0(tmp_path: Path) -> None:
    """A file as stdin and as stdout (`bearagent acp < requests > answers`): the loop's pipe transports refuse both
    (it used to fail at start). Whether the one request is answered before its end of file cancels it is a race,
    so only the clean exit is asserted."""
    home = tmp_path / "home"
    home.mkdir()
    requests = tmp_path / "requests.jsonl"
    requests.write_text('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n')
    answers = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "bearagent", "acp"],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env={**isolated_env(home), "NO_COLOR": "1"},
            cwd=tmp_path,
            timeout=EXIT_BOUND_S + 30,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr, done.stderr.decode()
