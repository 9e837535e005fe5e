"""`bearagent acp` driven by the official ACP Python SDK's client side (`acp.spawn_agent_process`) over a real
`bearagent acp` process's stdio, with a scripted model: initialize, a new session in a workspace, a prompt whose run
reads and writes (the Write asks permission, the client answers), the updates in order, a cancel while a permission
is pending, the session loaded in a new process (its history replayed), modes, and an untrusted workspace refused."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.support.config_ws import isolated_env
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

if TYPE_CHECKING:  # the ACP SDK (~1 s of imports) is imported by the tests that run, not at collection (issue 29)
    from acp.interfaces import Agent
    from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write, TodoWrite]")}
READ_WRITE = """
turns:
  - text: "Planning."
    tool_calls: [{name: TodoWrite, arguments: {todos: [{content: "read the notes", status: in_progress}, {content: "write the summary", status: pending}]}}]
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "summary\\n"}}]
  - text: "Done."
  - text: "Once more."
"""

Asked = Callable[[str, "ToolCallUpdate", list["PermissionOption"]], Awaitable["RequestPermissionResponse"]]


class RecordingClient:
    """An ACP client that records every update and answers permission requests with `answer`."""

    def __init__(self, answer: Asked | None = None) -> None:
        self.updates: list[Any] = []
        self.asked: list[ToolCallUpdate] = []
        self._answer = answer
        self.conn: Agent | None = None

    def on_connect(self, conn: Agent) -> None:
        self.conn = conn

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        self.asked.append(tool_call)
        self.updates.append(("asked", tool_call.tool_call_id))
        if self._answer is not None:
            return await self._answer(session_id, tool_call, options)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow_once"))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise _method_not_found("fs/write_text_file")

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise _method_not_found("fs/read_text_file")

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise _method_not_found("terminal/create")

    async def terminal_output(self, *args: Any, **kwargs: Any) -> Any:
        raise _method_not_found("terminal/output")

    async def release_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise _method_not_found("terminal/release")

    async def wait_for_terminal_exit(self, *args: Any, **kwargs: Any) -> Any:
        raise _method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise _method_not_found("terminal/kill")

    async def create_elicitation(self, *args: Any, **kwargs: Any) -> Any:
        raise _method_not_found("elicitation/create")

    async def complete_elicitation(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise _method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


def _method_not_found(method: str) -> Exception:
    from acp import RequestError

    return RequestError.method_not_found(method)


def _run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))  # pyright: ignore[reportArgumentType]


def _spawn(client: RecordingClient, home: Path, *args: str) -> Any:
    from acp import spawn_agent_process

    log = open(home / "acp-stderr.log", "ab")  # noqa: SIM115 - closed with the process
    env = {**isolated_env(home), "NO_COLOR": "1", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return spawn_agent_process(
        client, sys.executable, "-m", "bearagent", "acp", *args, env=env, transport_kwargs={"stderr": log.fileno()}
    )


async def _initialized(conn: Any) -> Any:
    from acp import PROTOCOL_VERSION
    from acp.schema import ClientCapabilities

    return await conn.initialize(
        protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(terminal=False)
    )


def _workspace(tmp_path: Path, script: str = READ_WRITE, config: str = CONFIG) -> tuple[Path, Path]:
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    (root / "notes.md").write_text("the notes\n")
    return root, home


def _text(updates: list[Any], kind: type) -> str:
    return "".join(u.content.text for u in updates if isinstance(u, kind))


def test_a_prompt_streams_a_plan_tool_calls_and_a_permission_then_the_session_loads_in_a_new_process(
    tmp_path: Path,
) -> None:
    from acp import text_block
    from acp.schema import (
        AgentMessageChunk,
        AgentPlanUpdate,
        FileEditToolCallContent,
        ToolCallProgress,
        ToolCallStart,
        UserMessageChunk,
    )

    root, home = _workspace(tmp_path)
    client = RecordingClient()

    async def first() -> tuple[str, Any, Any]:
        async with _spawn(client, home, "--permission-mode", "default") as (conn, _process):
            init = await _initialized(conn)
            assert init.protocol_version == 1
            assert init.agent_capabilities.load_session is True
            assert init.agent_info.name == "bearagent"
            new = await conn.new_session(cwd=str(root), mcp_servers=[])
            assert new.modes.current_mode_id == "default"
            assert {m.id for m in new.modes.available_modes} >= {"default", "acceptEdits", "plan", "bypassPermissions"}
            answer = await conn.prompt(session_id=new.session_id, prompt=[text_block("Summarise notes.md")])
            return new.session_id, answer, await conn.list_sessions(cwd=str(root))

    session_id, answer, listed = _run(first())
    assert answer.stop_reason == "end_turn"
    assert answer.usage is not None

    async def approval_facts() -> list[tuple[str, str | None]]:
        async with open_ws(root, home) as ws:
            run = next(r for r in ws.runs() if str(r.session_id) == session_id)
            return [
                (e.event_type, str(e.payload.get("decision")) if "decision" in e.payload else None)
                for e in ws.events(str(run.run_id))
                if e.event_type.startswith("Approval")
            ]

    # the client's answer is the run's approval fact
    assert _run(approval_facts()) == [("ApprovalRequested", None), ("ApprovalResolved", "allow_once")]

    async def recorded() -> tuple[int, int]:
        async with open_ws(root, home) as ws:
            runs = [r for r in ws.runs() if str(r.session_id) == session_id]
            return sum(r.usage.input_tokens for r in runs), sum(r.usage.output_tokens for r in runs)

    # the usage reported is the run's, as its log records it
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == _run(recorded())
    assert answer.usage.total_tokens == answer.usage.input_tokens + answer.usage.output_tokens > 0
    assert session_id in [s.session_id for s in listed.sessions]
    assert (root / "out.txt").read_text() == "summary\n"

    updates = client.updates
    starts = [u for u in updates if isinstance(u, ToolCallStart)]
    assert [(s.title.split()[0], s.kind) for s in starts] == [
        ("TodoWrite", "think"),
        ("Read", "read"),
        ("Write", "edit"),
    ]
    todo, read, write = starts
    assert read.locations is not None and read.locations[0].path == str(root / "notes.md")
    assert write.status == "pending"
    assert write.content is not None and isinstance(write.content[0], FileEditToolCallContent)
    assert write.content[0].new_text == "summary\n" and write.content[0].path == str(root / "out.txt")
    plans = [u for u in updates if isinstance(u, AgentPlanUpdate)]
    assert [(e.content, e.status) for e in plans[0].entries] == [
        ("read the notes", "in_progress"),
        ("write the summary", "pending"),
    ]
    # only the Write asked, after its tool_call reached the client; the answer lets it run, then its result comes
    assert [a.tool_call_id for a in client.asked] == [write.tool_call_id]
    at_start = updates.index(write)
    at_ask = updates.index(("asked", write.tool_call_id))
    progress = [(i, u) for i, u in enumerate(updates) if isinstance(u, ToolCallProgress)]
    write_progress = [(i, u.status) for i, u in progress if u.tool_call_id == write.tool_call_id]
    assert [s for _i, s in write_progress] == ["in_progress", "completed"]
    assert at_start < at_ask < write_progress[0][0]
    read_done = [u for _i, u in progress if u.tool_call_id == read.tool_call_id]
    assert read_done[0].status == "completed" and read_done[0].content is not None
    assert "the notes" in str(read_done[0].content[0].model_dump())
    assert updates.index(todo) < updates.index(read) < updates.index(write)
    said = _text(updates, AgentMessageChunk)
    assert said.index("Planning.") < said.index("Reading.") < said.index("Writing.") < said.index("Done.")

    # a new process loads the session: the history comes back as updates, in order; a prompt there reports the
    # usage of the whole session, the earlier process's run included
    again = RecordingClient()
    holder: dict[str, Any] = {}

    async def second() -> None:
        async with _spawn(again, home, "--permission-mode", "plan") as (conn, _process):
            await _initialized(conn)
            loaded = await conn.load_session(cwd=str(root), session_id=session_id, mcp_servers=[])
            assert loaded.modes.current_mode_id == "plan"
            holder["again"] = await conn.prompt(session_id=session_id, prompt=[text_block("Once more.")])

    _run(second())
    assert "Summarise notes.md" in _text(again.updates, UserMessageChunk)
    replayed = [u for u in again.updates if isinstance(u, ToolCallStart)]
    assert [u.tool_call_id for u in replayed] == [s.tool_call_id for s in starts]
    assert "Done." in _text(again.updates, AgentMessageChunk)
    assert _text(again.updates, UserMessageChunk).index("Summarise") == 0
    assert holder["again"].stop_reason == "end_turn"
    total = _run(recorded())
    assert (holder["again"].usage.input_tokens, holder["again"].usage.output_tokens) == total
    assert total[0] > answer.usage.input_tokens


def test_cancel_while_a_permission_is_pending_cancels_the_run_and_nothing_is_written(tmp_path: Path) -> None:
    from acp import text_block
    from acp.schema import DeniedOutcome, RequestPermissionResponse

    root, home = _workspace(tmp_path)
    holder: dict[str, Any] = {}

    async def cancel_then_answer(
        session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        await holder["conn"].cancel(session_id=session_id)  # the user pressed stop while the question was shown
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    client = RecordingClient(cancel_then_answer)

    async def go() -> tuple[str, Any]:
        async with _spawn(client, home, "--permission-mode", "default") as (conn, _process):
            holder["conn"] = conn
            await _initialized(conn)
            new = await conn.new_session(cwd=str(root), mcp_servers=[])
            answer = await conn.prompt(session_id=new.session_id, prompt=[text_block("Summarise notes.md")])
            return new.session_id, answer

    session_id, answer = _run(go())
    assert answer.stop_reason == "cancelled"
    assert not (root / "out.txt").exists()

    async def status() -> list[str]:
        async with open_ws(root, home) as ws:
            return [r.status for r in ws.runs() if str(r.session_id) == session_id]

    assert _run(status()) == ["cancelled"]


def test_set_mode_changes_the_gate_and_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    from acp import RequestError, text_block

    root, home = _workspace(tmp_path)
    client = RecordingClient()

    async def go() -> Any:
        async with _spawn(client, home, "--permission-mode", "default") as (conn, _process):
            await _initialized(conn)
            new = await conn.new_session(cwd=str(root), mcp_servers=[])
            with pytest.raises(RequestError) as bad:
                await conn.set_session_mode(session_id=new.session_id, mode_id="yolo")
            assert "not a permission mode" in str(bad.value)
            await conn.set_session_mode(session_id=new.session_id, mode_id="acceptEdits")
            return await conn.prompt(session_id=new.session_id, prompt=[text_block("Summarise notes.md")])

    answer = _run(go())
    assert answer.stop_reason == "end_turn"
    assert client.asked == []  # acceptEdits: the Write ran without asking
    assert (root / "out.txt").read_text() == "summary\n"


def test_an_untrusted_workspace_is_refused_at_session_new_naming_bearagent_trust(tmp_path: Path) -> None:
    from acp import RequestError, text_block

    config = CONFIG + 'hooks:\n  PreToolUse:\n    - matcher: Read\n      hooks: [{type: command, command: "true"}]\n'
    root, home = _workspace(tmp_path, config=config)
    client = RecordingClient()

    async def go() -> tuple[str, Any]:
        async with _spawn(client, home) as (conn, _process):
            await _initialized(conn)
            with pytest.raises(RequestError) as refused:
                await conn.new_session(cwd=str(root), mcp_servers=[])
            with pytest.raises(RequestError) as unknown:
                await conn.prompt(session_id="nope", prompt=[text_block("hi")])
            return str(refused.value), unknown.value

    message, unknown = _run(go())
    assert "bearagent trust" in message
    assert unknown.code == -32002
    assert not (root / ".bearagent" / "runs.db").exists() and client.updates == []


MCP_CALL = """
turns:
  - text: "Asking the editor's server."
    tool_calls: [{name: mcp__demo__echo, arguments: {message: hi}}]
  - text: "Echoed."
"""


def test_an_mcp_server_the_client_passes_serves_the_session_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    from acp import RequestError, text_block
    from acp.schema import AgentMessageChunk, McpServerStdio, SseMcpServer, ToolCallProgress
    from tests.support.mcp_servers.demo import DEMO_PATH

    home = tmp_path / "home"
    home.mkdir()
    agents = {"main": agent_md("Main agent.", mode="primary")}
    root = scripted_workspace(tmp_path / "ws", MCP_CALL, agents=agents)
    client = RecordingClient()
    demo = McpServerStdio(name="demo", command=sys.executable, args=[str(DEMO_PATH), "stdio"], env=[])

    async def go() -> tuple[Any, str, str]:
        async with _spawn(client, home, "--permission-mode", "default") as (conn, _process):
            await _initialized(conn)
            with pytest.raises(RequestError) as bad_name:
                await conn.new_session(cwd=str(root), mcp_servers=[demo.model_copy(update={"name": "no spaces"})])
            with pytest.raises(RequestError) as sse:
                await conn.new_session(
                    cwd=str(root),
                    mcp_servers=[SseMcpServer(type="sse", name="old", url="http://127.0.0.1:1/", headers=[])],
                )
            new = await conn.new_session(cwd=str(root), mcp_servers=[demo])
            answer = await conn.prompt(session_id=new.session_id, prompt=[text_block("Echo hi.")])
            return answer, str(bad_name.value), str(sse.value)

    answer, bad_name, sse = _run(go())
    assert "mcpServers[0]" in bad_name and "sse MCP server is not supported" in sse
    assert answer.stop_reason == "end_turn"
    done = [u for u in client.updates if isinstance(u, ToolCallProgress) and u.status == "completed"]
    assert done and "echo: hi" in str(done[-1].model_dump())
    assert "Echoed." in _text(client.updates, AgentMessageChunk)


READ_ONLY = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "Read."
"""


class BufferClient(RecordingClient):
    """An editor with an unsaved buffer of notes.md: `fs/read_text_file` answers the buffer."""

    def __init__(self, buffers: dict[str, str]) -> None:
        super().__init__()
        self.buffers = buffers
        self.reads: list[str] = []

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        from acp import RequestError
        from acp.schema import ReadTextFileResponse

        path = str(kwargs.get("path"))
        self.reads.append(path)
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])


def test_read_goes_through_the_editor_when_it_offers_fs_read_so_an_unsaved_buffer_is_read(tmp_path: Path) -> None:
    from acp import PROTOCOL_VERSION, text_block
    from acp.schema import ClientCapabilities, FileSystemCapabilities, ToolCallProgress

    root, home = _workspace(tmp_path, READ_ONLY)
    client = BufferClient({str(root / "notes.md"): "unsaved line one\nunsaved line two\n"})

    async def go() -> Any:
        async with _spawn(client, home, "--permission-mode", "default") as (conn, _process):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
            )
            new = await conn.new_session(cwd=str(root), mcp_servers=[])
            return await conn.prompt(session_id=new.session_id, prompt=[text_block("Read notes.md")])

    answer = _run(go())
    assert answer.stop_reason == "end_turn"
    assert client.reads == [str(root / "notes.md")]
    done = [u for u in client.updates if isinstance(u, ToolCallProgress) and u.status == "completed"]
    shown = str(done[0].model_dump())
    assert "unsaved line two" in shown and "the notes" not in shown  # the buffer, not the file on disk
    assert (root / "notes.md").read_text() == "the notes\n"


TWO_WRITES = """
turns:
  - text: "Writing one."
    tool_calls: [{name: Write, arguments: {file_path: one.txt, content: "1\\n"}}]
  - text: "One."
  - text: "Writing one again."
    tool_calls: [{name: Write, arguments: {file_path: one.txt, content: "11\\n"}}]
  - text: "Two."
"""


def test_allow_always_is_kept_for_the_session_and_reject_denies(tmp_path: Path) -> None:
    from acp import RequestError, text_block
    from acp.schema import AllowedOutcome, RequestPermissionResponse, ToolCallProgress

    root, home = _workspace(tmp_path, TWO_WRITES)

    async def always(
        session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]
        chosen = next(o for o in options if o.kind == "allow_always")
        assert chosen.name.startswith("Always allow") and "one.txt" in chosen.name  # the rule "always" keeps
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    client = RecordingClient(always)

    async def go() -> None:
        async with _spawn(client, home, "--permission-mode", "default") as (conn, _process):
            await _initialized(conn)
            new = await conn.new_session(cwd=str(root), mcp_servers=[])
            for text in ("Write one.", "Write two."):
                answer = await conn.prompt(session_id=new.session_id, prompt=[text_block(text)])
                assert answer.stop_reason == "end_turn"

    _run(go())
    assert len(client.asked) == 1  # the second Write ran under the rule "allow always" kept on the session
    assert (root / "one.txt").read_text() == "11\n"

    rejected = scripted_workspace(tmp_path / "other", TWO_WRITES, agents=MAIN)

    async def reject(
        session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        if len(denier.asked) > 1:  # the second time the client fails to answer: the call is denied (fail closed)
            raise RequestError.internal_error({"why": "the editor crashed"})
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="deny"))

    denier = RecordingClient(reject)

    async def denied() -> None:
        async with _spawn(denier, home, "--permission-mode", "default") as (conn, _process):
            await _initialized(conn)
            new = await conn.new_session(cwd=str(rejected), mcp_servers=[])
            for text in ("Write one.", "Write one again."):
                answer = await conn.prompt(session_id=new.session_id, prompt=[text_block(text)])
                assert answer.stop_reason == "end_turn"

    _run(denied())
    assert not (rejected / "one.txt").exists()
    failed = [u for u in denier.updates if isinstance(u, ToolCallProgress) and u.status == "failed"]
    assert len(failed) == 2 and len(denier.asked) == 2


BASH = """
turns:
  - text: "Running."
    tool_calls: [{name: Bash, arguments: {command: "echo from-the-editor; exit 3"}}]
  - text: "Ran."
"""


class TerminalClient(RecordingClient):
    """An editor whose terminals are real processes it starts itself (`terminal/*`)."""

    def __init__(self) -> None:
        super().__init__()
        self.created: list[tuple[str, list[str], str | None]] = []
        self.released: list[str] = []
        self._procs: dict[str, asyncio.subprocess.Process] = {}
        self._out: dict[str, bytes] = {}

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        from acp.schema import CreateTerminalResponse

        command, argv, cwd = str(kwargs["command"]), list(kwargs.get("args") or []), kwargs.get("cwd")
        self.created.append((command, argv, cwd))
        proc = await asyncio.create_subprocess_exec(
            command, *argv, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        terminal_id = f"term-{len(self.created)}"
        self._procs[terminal_id] = proc
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(self, *args: Any, **kwargs: Any) -> Any:
        from acp.schema import WaitForTerminalExitResponse

        proc = self._procs[str(kwargs["terminal_id"])]
        out, _ = await proc.communicate()
        self._out[str(kwargs["terminal_id"])] = out
        return WaitForTerminalExitResponse(exit_code=proc.returncode)

    async def terminal_output(self, *args: Any, **kwargs: Any) -> Any:
        from acp.schema import TerminalExitStatus, TerminalOutputResponse

        terminal_id = str(kwargs["terminal_id"])
        proc = self._procs[terminal_id]
        return TerminalOutputResponse(
            output=self._out.get(terminal_id, b"").decode(),
            truncated=False,
            exit_status=TerminalExitStatus(exit_code=proc.returncode),
        )

    async def release_terminal(self, *args: Any, **kwargs: Any) -> Any:
        self.released.append(str(kwargs["terminal_id"]))
        return None


def test_bash_runs_in_the_editors_terminal_only_when_the_user_opts_in_and_then_always_asks(tmp_path: Path) -> None:
    from acp import PROTOCOL_VERSION, text_block
    from acp.schema import ClientCapabilities
    from acp.schema import ToolCallProgress as Progress

    from bearagent.sandbox import probe as sandbox_probe
    from bearagent.sandbox.settings import SandboxSettings

    root, home = _workspace(tmp_path, BASH)
    (root / ".bearagent" / "agents" / "main.md").write_text(agent_md("Main agent.", mode="primary", tools="[Bash]"))

    async def go(client: TerminalClient, *flags: str) -> Any:
        async with _spawn(client, home, "--permission-mode", "acceptEdits", *flags) as (conn, _process):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(terminal=True)
            )
            new = await conn.new_session(cwd=str(root), mcp_servers=[])
            return await conn.prompt(session_id=new.session_id, prompt=[text_block("Run it.")])

    editor = TerminalClient()
    answer = _run(go(editor, "--client-terminal"))
    assert answer.stop_reason == "end_turn"
    assert editor.created == [("/bin/sh", ["-c", "echo from-the-editor; exit 3"], str(root))]
    assert editor.released == ["term-1"]
    # outside the sandbox: even acceptEdits asks before the command (the user's answer let it run)
    assert len(editor.asked) == 1 and editor.asked[0].title is not None and "Bash" in editor.asked[0].title
    failed = [u for u in editor.updates if isinstance(u, Progress) and u.status == "failed"]
    assert failed and "from-the-editor" in str(failed[0].model_dump()) and "Exit code 3" in str(failed[0].model_dump())
    # the call's update embeds the editor's terminal (shown live), before the call's result
    shown = [
        i
        for i, u in enumerate(editor.updates)
        if isinstance(u, Progress) and u.content and getattr(u.content[0], "type", "") == "terminal"
    ]
    assert len(shown) == 1 and editor.updates[shown[0]].content[0].terminal_id == "term-1"
    assert editor.updates[shown[0]].tool_call_id == failed[0].tool_call_id
    assert shown[0] < editor.updates.index(failed[0])

    # without the flag the editor's terminal is not used, though it offers one: Bash runs in BearAgent's own shell
    (root / ".bearagent" / "script.yaml").write_text(BASH)
    plain = TerminalClient()
    answer = _run(go(plain))
    assert answer.stop_reason == "end_turn" and plain.created == []
    if sandbox_probe.probe(SandboxSettings()).active:  # in the sandbox, acceptEdits runs it without asking
        assert plain.asked == []
    ran = [u for u in plain.updates if isinstance(u, Progress) and u.status == "failed"]
    assert ran and "from-the-editor" in str(ran[0].model_dump())
