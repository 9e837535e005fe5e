"""The ACP agent side: one `BearAcpAgent` per `bearagent acp` process, serving the sessions its client opens.

Each ACP session is one BearAgent session of the workspace the client named (`cwd`), with its own
`WorkspaceRuntime` (so its permission mode, `session/set_mode`, is its own). A prompt is one run: its stream events
(`runtime.streaming.RunTreeStream` on the run writer, as `--stream-json` follows a run) become `session/update`
notifications, sent in order by one pump per prompt; an `ask` of the tool gate becomes `session/request_permission`
(allow once / always / reject map to the approval facts `allow_once` / `allow_always` / `deny`); `session/cancel`
cancels the run (its log ends with RunCancelled). Trust applies as for `bearagent run`: a workspace whose files need
trust is refused at `session/new` with the error naming `bearagent trust`, before anything is written.

Why it is over 400 lines: it is the one ACP agent class, and the protocol's methods (initialize, session/new, load,
resume, list, close, set_mode, prompt, cancel, fork, the client's file reads) act on the same per-session state
(`_Session`, the pump of a prompt); the mapping of facts to ACP shapes is pure and lives apart in `mapping.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AgentPlanUpdate,
    AllowedOutcome,
    ClientCapabilities,
    CloseSessionResponse,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SessionResumeCapabilities,
    SetSessionModeResponse,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    Usage,
    UserMessageChunk,
)

from bearagent.acp.mapping import (
    PromptBlock,
    call_content,
    client_mcp_servers,
    plan_entries,
    prompt_text,
    result_content,
    shown,
    tool_kind,
    tool_locations,
    tool_title,
)
from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.messages import Message, TextPart, ToolCallPart
from bearagent.domain.stream import (
    FinalEvent,
    StepEvent,
    StreamEventModel,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from bearagent.runtime.run_writer import Committed, Published
from bearagent.runtime.streaming import RunTreeStream
from bearagent.service.run_types import RunOptions, RunResult
from bearagent.tools.gate import AskAnswer, AskRequest
from bearagent.tools.policy import PERMISSION_MODES

BEARAGENT_ERROR = -32010
"""The JSON-RPC error code of a BearAgent refusal (untrusted workspace, unknown agent, missing key, ...); its data
carries the error's category, code and fix."""

_MODE_NAMES = {
    "default": ("Ask", "Ask before edits and commands, as the workspace's rules say"),
    "acceptEdits": ("Accept edits", "File edits run without asking; commands still ask"),
    "plan": ("Plan", "Read-only: the agent plans, nothing is changed"),
    "dontAsk": ("Don't ask", "Calls that would ask are denied instead"),
    "bypassPermissions": ("Bypass", "Nothing asks (within your permission ceiling)"),
}
_PERMISSION_OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Allow always (this session)", kind="allow_always"),
    PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
]
_ANSWERS: dict[str, AskAnswer] = {"allow_once": "allow_once", "allow_always": "allow_always", "deny": "deny"}
MAX_SESSIONS = 64
"""The most sessions one `bearagent acp` process keeps open (each holds a runtime); the oldest idle one is closed."""
MAX_REPLAYED_MESSAGES = 2_000
"""The most history messages `session/load` replays (the latest ones)."""


def _with_client_servers(registry: Any, extra: list[Any]) -> Any:
    """The workspace's MCP registry with the client's servers added at the user's rank (a workspace entry of the
    same name still wins, as over the user's config.yaml)."""
    from bearagent.config.workspace import RANK_USER, Source
    from bearagent.registries.mcp import build_mcp_registry

    source = Source("acp-client", "user", RANK_USER)
    entries = [(r.item, r.source) for r in registry.entries()] + [(spec, source) for spec in extra]
    return build_mcp_registry(entries, registry.diagnostics)


def _with_client_tools(registry: Any, replaced: Mapping[str, Any]) -> Any:
    """The workspace's tools with the native ones `replaced` names served through the client: Read reading through
    it (`client_fs.py`), Bash running in its terminal (`client_terminal.py`)."""
    from bearagent.registries.tools import NativeToolRegistry

    native = [replaced.get(e.name, e.tool) for e in registry.entries() if e.is_native]
    plugins = [(e.origin.removeprefix("plugin:"), e.tool) for e in registry.entries() if not e.is_native]
    return NativeToolRegistry(native, plugins, registry.diagnostics)


def refusal(exc: BearAgentError) -> RequestError:
    """A BearAgent error as the JSON-RPC error a client shows: the message with its fix, the facts in `data`."""
    message = exc.info.message + (f" (fix: {exc.hint})" if exc.hint else "")
    data: dict[str, Any] = {"category": exc.info.category, "code": exc.info.code}
    if exc.hint:
        data["fix"] = exc.hint
    return RequestError(BEARAGENT_ERROR, message, data)


def _invalid(message: str) -> RequestError:
    return RequestError(-32602, message, {"message": message})


class _Pump:
    """The `session/update`s of one prompt, sent one at a time in the order they were made. The run writer calls
    `event` synchronously on every commit; sending is async, so updates queue here and one task sends them."""

    def __init__(self, conn: Client, session_id: str, root: Path) -> None:
        self._conn = conn
        self._session_id = session_id
        self._root = root
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task = asyncio.create_task(self._send_all())
        self._texted = False  # did tokens stream since the last step (then a `final` is not sent again)
        self._calls: dict[str, tuple[str, Mapping[str, JsonValue]]] = {}

    async def _send_all(self) -> None:
        while True:
            update = await self._queue.get()
            try:
                if update is None:
                    return
                with contextlib.suppress(Exception):  # a client that stops reading must not stop the run
                    await self._conn.session_update(session_id=self._session_id, update=update)
            finally:
                self._queue.task_done()

    def send(self, update: Any) -> None:
        self._queue.put_nowait(update)

    async def flushed(self) -> None:
        """Every update made so far has been sent (before a permission request, before the prompt's answer)."""
        await asyncio.sleep(0)
        await self._queue.join()

    async def close(self) -> None:
        self._queue.put_nowait(None)
        with contextlib.suppress(Exception):
            await self._task

    def event(self, event: StreamEventModel) -> None:
        if isinstance(event, TokenEvent):
            if event.text:
                self._texted = True
                self.send(_agent_text(event.text))
        elif isinstance(event, StepEvent):
            self._texted = False
        elif isinstance(event, FinalEvent):
            if not self._texted and event.content:
                self.send(_agent_text(shown(event.content)))
            self._texted = False
        elif isinstance(event, ToolCallEvent):
            self._texted = False
            self._calls[event.id] = (event.name, event.arguments)
            self.send(tool_start(self._root, event.id, event.name, event.arguments, status="pending"))
        elif isinstance(event, ToolResultEvent):
            if event.id not in self._calls:  # a runtime tool (TodoWrite, ...) records no request: start it here
                self._calls[event.id] = (event.name, {})
                self.send(tool_start(self._root, event.id, event.name, {}, status="in_progress"))
            self.send(tool_done(event.id, event.result, event.is_error))

    def subscriber(self, run_id: RunId) -> Callable[[Published], None]:
        """The run writer subscriber of run `run_id`: its stream events, and its TodosUpdated facts as plans."""
        tree = RunTreeStream(run_id, self.event)

        def follow(item: Published) -> None:
            tree(item)
            if isinstance(item, Committed) and item.run_id == run_id and item.event.event_type == "TodosUpdated":
                entries = plan_entries(item.event.payload)
                if entries is not None:
                    self.send(AgentPlanUpdate(session_update="plan", entries=entries))

        return follow

    def call(self, tool_call_id: str) -> tuple[str, Mapping[str, JsonValue]] | None:
        return self._calls.get(tool_call_id)


def _agent_text(text: str) -> AgentMessageChunk:
    return AgentMessageChunk(session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text))


def tool_start(
    root: Path, call_id: str, name: str, arguments: Mapping[str, JsonValue], *, status: Any
) -> ToolCallStart:
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=tool_title(name, arguments),
        kind=tool_kind(name),
        status=status,
        locations=tool_locations(root, arguments),
        content=call_content(name, root, arguments) or None,
        raw_input=thaw_json_mapping(arguments),
    )


def tool_done(call_id: str, result: str, is_error: bool) -> ToolCallProgress:
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="failed" if is_error else "completed",
        content=result_content(result) or None,
    )


@dataclass
class _Session:
    session_id: str
    cwd: Path
    runtime: Any  # WorkspaceRuntime (imported lazily: `bearagent --help` stays light)
    agent: str
    model: str | None
    pump: _Pump | None = None
    task: asyncio.Task[RunResult] | None = None
    cancelled: bool = False
    totals: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})


class BearAcpAgent:
    """The agent side of ACP for one client connection (see the module docstring)."""

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        agent: str | None = None,
        model: str | None = None,
        permission_mode: str | None = None,
        client_terminal: bool = False,
    ) -> None:
        self._env = dict(env) if env is not None else None
        self._client_terminal = client_terminal
        """`--client-terminal`: Bash runs in the client's terminal when it offers one (`client_terminal.py`)."""
        self._agent = agent
        self._model = model
        self._mode = permission_mode
        self._conn: Client | None = None
        self._sessions: dict[str, _Session] = {}
        self._client_caps: ClientCapabilities | None = None

    # ---- connection ----------------------------------------------------------------------------------------------

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        from bearagent import __version__

        self._client_caps = client_capabilities
        return InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            auth_methods=[],
            agent_info=Implementation(name="bearagent", title="BearAgent", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # no auth methods: model keys come from the environment and config, as for `bearagent run`

    # ---- sessions ------------------------------------------------------------------------------------------------

    async def new_session(
        self, cwd: str, additional_directories: list[str] | None = None, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        runtime, agent = self._open(cwd, mcp_servers)
        try:
            record, _created = await asyncio.to_thread(runtime.sessions.resolve_session, None, agent)
        except BearAgentError as exc:
            await runtime.aclose()
            raise refusal(exc) from None
        session = self._keep(_Session(str(record.session_id), runtime.root, runtime, agent, self._model))
        return NewSessionResponse(session_id=session.session_id, modes=self._modes(session))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        session = await self._reopen(cwd, session_id, mcp_servers)
        await self._replay(session)
        return LoadSessionResponse(modes=self._modes(session))

    async def resume_session(
        self, session_id: str, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> ResumeSessionResponse:
        session = await self._reopen(cwd, session_id, mcp_servers)
        return ResumeSessionResponse(modes=self._modes(session))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        if cwd is None:
            return ListSessionsResponse(sessions=[])  # sessions live in a workspace: the client names which
        runtime, _agent = self._open(cwd)
        try:
            records = await runtime.store.fetch_sessions(caller="local", limit=100)
        except BearAgentError as exc:
            raise refusal(exc) from None
        finally:
            await runtime.aclose()
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=str(r.session_id),
                    cwd=str(runtime.root),
                    title=shown(r.title, 200) if r.title else None,
                    updated_at=r.updated_at.isoformat(),
                )
                for r in records
            ]
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            await self._close(session)
        return CloseSessionResponse()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        from bearagent.tools.policy import parse_permission_mode

        session = self._session(session_id)
        try:
            mode = parse_permission_mode(mode_id, where="session/set_mode modeId")
        except BearAgentError as exc:
            raise refusal(exc) from None
        session.runtime.permission_mode_flag = mode
        current = self._current_mode(session)
        if current != mode and self._conn is not None:  # capped by the user's ceiling: say which mode holds
            await self._conn.session_update(
                session_id=session_id,
                update=CurrentModeUpdate(session_update="current_mode_update", current_mode_id=current),
            )
        return SetSessionModeResponse()

    # ---- prompts ----------------------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[PromptBlock], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.task is not None and not session.task.done():
            raise RequestError(-32600, "a prompt is already running in this session; cancel it or wait", None)
        try:
            text = prompt_text(prompt)
        except ValueError as exc:
            raise _invalid(str(exc)) from None
        assert self._conn is not None
        runtime = session.runtime
        run_id = runtime.ids.new(RunId)
        pump = _Pump(self._conn, session_id, session.cwd)
        session.pump, session.cancelled = pump, False
        unsubscribe = runtime.writer.subscribe(pump.subscriber(run_id))
        options = RunOptions(agent=session.agent, model=session.model, session=session.session_id, run_id=run_id)
        session.task = asyncio.create_task(runtime.run(text, options))
        try:
            try:
                result = await asyncio.shield(session.task)
            except asyncio.CancelledError:
                if not session.cancelled:
                    session.task.cancel()
                    raise
                with contextlib.suppress(BaseException):
                    await session.task
                await pump.flushed()
                return PromptResponse(stop_reason="cancelled", usage=self._usage(session))
            except BearAgentError as exc:
                raise refusal(exc) from None
            await pump.flushed()
        finally:
            unsubscribe()
            await pump.close()
            session.pump = None
        session.totals["input"] += result.usage.input_tokens
        session.totals["output"] += result.usage.output_tokens
        if result.status == "cancelled" or session.cancelled:
            return PromptResponse(stop_reason="cancelled", usage=self._usage(session))
        if result.status == "failed" and result.error is not None:
            if result.error.category == "budget":
                return PromptResponse(stop_reason="max_turn_requests", usage=self._usage(session))
            raise RequestError(
                BEARAGENT_ERROR,
                f"the run failed: {result.error.message}",
                {"category": result.error.category, "code": result.error.code, "run_id": str(result.run_id)},
            )
        return PromptResponse(stop_reason="end_turn", usage=self._usage(session))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is None or session.task is None or session.task.done():
            return
        session.cancelled = True
        session.task.cancel()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool, **kwargs: Any) -> None:
        raise _invalid(
            f"no session config option {config_id[:100]!r}: the agent offers none (modes are set with session/set_mode)"
        )

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Any = None,
        **kwargs: Any,
    ) -> Any:
        raise RequestError.method_not_found("session/fork")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def _read_text_file(self, session_id: str, path: str) -> str:
        """The client's text of `path` (`fs/read_text_file`): an editor's unsaved buffer, or the file."""
        if self._conn is None:
            raise RuntimeError("no client connection")
        response = await self._conn.read_text_file(session_id=session_id, path=path)
        return response.content

    def _terminals(self) -> Any:
        """The client's `terminal/*` requests, for Bash (`client_terminal.py`)."""
        from bearagent.acp.client_terminal import Terminals

        def conn() -> Client:
            if self._conn is None:
                raise RuntimeError("no client connection")
            return self._conn

        async def create(session_id: str, command: str, args: list[str], cwd: str, limit: int) -> str:
            made = await conn().create_terminal(
                session_id=session_id, command=command, args=args, cwd=cwd, env=[], output_byte_limit=limit
            )
            return made.terminal_id

        async def wait(session_id: str, terminal_id: str) -> tuple[int | None, str | None]:
            done = await conn().wait_for_terminal_exit(session_id=session_id, terminal_id=terminal_id)
            return done.exit_code, done.signal

        async def output(session_id: str, terminal_id: str) -> tuple[str, bool]:
            got = await conn().terminal_output(session_id=session_id, terminal_id=terminal_id)
            return got.output, bool(got.truncated)

        async def kill(session_id: str, terminal_id: str) -> None:
            await conn().kill_terminal(session_id=session_id, terminal_id=terminal_id)

        async def release(session_id: str, terminal_id: str) -> None:
            await conn().release_terminal(session_id=session_id, terminal_id=terminal_id)

        def show(session_id: str, tool_call_id: str, terminal_id: str) -> None:
            session = self._sessions.get(session_id)
            if session is not None and session.pump is not None:  # in order with the call's other updates
                session.pump.send(
                    ToolCallProgress(
                        session_update="tool_call_update",
                        tool_call_id=tool_call_id,
                        status="in_progress",
                        content=[TerminalToolCallContent(type="terminal", terminal_id=terminal_id)],
                    )
                )

        return Terminals(create, wait, output, kill, release, show)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def aclose(self) -> None:
        from bearagent.service.closing import close_all

        sessions = list(self._sessions.values())
        try:  # a prompt being cancelled may still look its session up: forgotten only once all are closed
            await close_all(functools.partial(self._close, session) for session in sessions)
        finally:
            self._sessions.clear()

    # ---- parts ----------------------------------------------------------------------------------------------------

    def _open(self, cwd: str, mcp_servers: Any = None) -> tuple[Any, str]:
        """The runtime of workspace `cwd`, admitted as `bearagent run` admits one (guards, trust, hooks), with the
        MCP servers the client passed added as the user's own."""
        from bearagent.app.runtime import open_runtime
        from bearagent.workspace import load_workspace

        root = Path(cwd)
        if not root.is_absolute() or not root.is_dir():
            raise _invalid(f"cwd {cwd[:300]!r} is not an absolute path of an existing directory")
        try:
            extra = client_mcp_servers(mcp_servers)
        except ValueError as exc:
            raise _invalid(str(exc)) from None
        try:
            loaded = load_workspace(root, env=self._env)
            if extra:
                loaded.mcp = _with_client_servers(loaded.mcp, extra)
            caps = self._client_caps
            replaced: dict[str, Any] = {}
            if caps is not None and caps.fs is not None and caps.fs.read_text_file:
                from bearagent.acp.client_fs import ClientRead

                replaced["Read"] = ClientRead(self._read_text_file)
            if self._client_terminal and caps is not None and caps.terminal:
                from bearagent.acp.client_terminal import ClientBash

                replaced["Bash"] = ClientBash(self._terminals())
            if replaced:
                loaded.use_tools(_with_client_tools(loaded.tools, replaced))
            runtime = open_runtime(loaded, permission_mode=self._mode)
            runtime.admit()
            agent = self._agent or loaded.config.default_agent
            runtime.plans.require_agent(agent)
        except BearAgentError as exc:
            raise refusal(exc) from None
        return runtime, agent

    async def _reopen(self, cwd: str, session_id: str, mcp_servers: Any = None) -> _Session:
        kept = self._sessions.get(session_id)
        if kept is not None:
            return kept
        runtime, agent = self._open(cwd, mcp_servers)
        try:
            record = await runtime.store.fetch_session(SessionId(session_id))
        except (BearAgentError, ValueError):
            record = None
        if record is None:
            await runtime.aclose()
            raise RequestError.resource_not_found(f"session {session_id[:100]}")
        active = record.active_agent_name or record.agent_name or agent
        session = _Session(session_id, runtime.root, runtime, active, self._model)
        for run in await runtime.store.fetch_runs(session_id=record.session_id, limit=10_000):
            session.totals["input"] += run.usage.input_tokens  # the session's usage so far, as its log says
            session.totals["output"] += run.usage.output_tokens
        return self._keep(session)

    def _keep(self, session: _Session) -> _Session:
        self._sessions[session.session_id] = session
        session.runtime.ask = self._asker(session)
        if len(self._sessions) > MAX_SESSIONS:
            idle = next((s for s in self._sessions.values() if s.task is None or s.task.done()), None)
            if idle is not None and idle is not session:
                self._sessions.pop(idle.session_id, None)
                asyncio.get_running_loop().create_task(self._close(idle))
        return session

    async def _close(self, session: _Session) -> None:
        if session.task is not None and not session.task.done():
            session.cancelled = True
            session.task.cancel()
            with contextlib.suppress(BaseException):
                await session.task
        with contextlib.suppress(Exception):
            await session.runtime.aclose()

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.resource_not_found(
                f"session {session_id[:100]} (open it with session/new or session/load)"
            )
        return session

    def _current_mode(self, session: _Session) -> str:
        spec = session.runtime.plans.require_agent(session.agent)
        return str(session.runtime.mode_in_force(spec).mode)

    def _modes(self, session: _Session) -> SessionModeState:
        return SessionModeState(
            current_mode_id=self._current_mode(session),
            available_modes=[
                SessionMode(id=mode, name=_MODE_NAMES[mode][0], description=_MODE_NAMES[mode][1])
                for mode in PERMISSION_MODES
            ],
        )

    def _usage(self, session: _Session) -> Usage:
        i, o = session.totals["input"], session.totals["output"]
        return Usage(total_tokens=i + o, input_tokens=i, output_tokens=o)

    def _asker(self, session: _Session) -> Any:
        async def ask(request: AskRequest) -> AskAnswer:
            """The gate's `ask` as `session/request_permission`; no answer (the prompt cancelled) is a denial."""
            conn, pump = self._conn, session.pump
            if conn is None:
                return "deny"
            call_id = str(request.context.tool_call_id or "")
            if pump is not None:
                await pump.flushed()  # the call's `tool_call` update reaches the client before the question
            update = ToolCallUpdate(
                tool_call_id=call_id,
                title=tool_title(request.tool_name, request.arguments),
                kind=tool_kind(request.tool_name),
                status="pending",
                locations=tool_locations(session.cwd, request.arguments),
                content=call_content(request.tool_name, session.cwd, request.arguments) or None,
                raw_input={"arguments": thaw_json_mapping(request.arguments), "reason": shown(request.reason, 4_000)},
            )
            options = list(_PERMISSION_OPTIONS)
            if request.suggested_rule:  # say which rule "always" keeps on the session
                options[1] = PermissionOption(
                    option_id="allow_always",
                    name=shown(f"Always allow {request.suggested_rule} in this session", 300),
                    kind="allow_always",
                )
            try:
                response = await conn.request_permission(
                    session_id=session.session_id, tool_call=update, options=options
                )
            except Exception:  # the client failed to answer (an error, gone): fail closed, the call is denied
                return "deny"
            outcome = response.outcome
            answer = _ANSWERS.get(outcome.option_id, "deny") if isinstance(outcome, AllowedOutcome) else "deny"
            if answer != "deny" and pump is not None:
                pump.send(
                    ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="in_progress")
                )
            return answer

        return ask

    async def _replay(self, session: _Session) -> None:
        """`session/load`: the session's history from the log, as the updates that made it."""
        assert self._conn is not None
        try:
            history: list[Message] = await asyncio.to_thread(
                session.runtime.sessions.session_history, SessionId(session.session_id)
            )
        except BearAgentError as exc:
            raise refusal(exc) from None
        for message in history[-MAX_REPLAYED_MESSAGES:]:
            for part in message.parts:
                update: Any = None
                if isinstance(part, TextPart):
                    block = TextContentBlock(type="text", text=shown(part.text))
                    if message.role == "user":
                        update = UserMessageChunk(session_update="user_message_chunk", content=block)
                    elif message.role == "assistant":
                        update = AgentMessageChunk(session_update="agent_message_chunk", content=block)
                elif isinstance(part, ToolCallPart):
                    update = tool_start(
                        session.cwd, str(part.tool_call_id), part.name, part.arguments, status="pending"
                    )
                else:
                    update = tool_done(str(part.tool_call_id), part.content, part.is_error)
                if update is not None:
                    await self._conn.session_update(session_id=session.session_id, update=update)
