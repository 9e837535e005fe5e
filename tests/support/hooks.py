"""Helpers for the hook tests: executable scripts in a temp workspace, a dispatcher rig that keeps every recorded
`HookExecutedV1`, and a real HTTP hook server on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import stat
import threading
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import cast

from bearagent.domain._base import JsonValue
from bearagent.domain.run_events import HookExecutedV1
from bearagent.domain.specs import HookEventName, HookHandlerSpec, HookMatcherSpec
from bearagent.hooks.dispatcher import HookDispatcher, HookSettings
from bearagent.hooks.runners import AgentJudge, Judge, PythonHookFunction
from bearagent.hooks.transcript import TranscriptWriter

SCRIPTS_DIR = Path(__file__).parent / "hook_scripts"
SESSION_ID = "5b0c4a8e-3f7b-4d1e-9c55-2f1a0d9e7b11"


def write_script(directory: Path, name: str, body: str) -> Path:
    """Write an executable script (body should start with a shebang)."""
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def install_doc_script(workspace: Path, name: str) -> str:
    """Copy a Claude Code doc script into `<ws>/.claude/hooks/` and return its workspace-relative path."""
    target = workspace / ".claude" / "hooks" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(SCRIPTS_DIR / name, target)
    return f".claude/hooks/{name}"


def command(cmd: str, *, args: Sequence[str] | None = None, **fields: object) -> HookHandlerSpec:
    data: dict[str, object] = {"type": "command", "command": cmd, **fields}
    if args is not None:
        data["args"] = tuple(args)
    return HookHandlerSpec.model_validate(data)


def group(
    event: HookEventName, *handlers: HookHandlerSpec, matcher: str | None = None, **fields: object
) -> HookMatcherSpec:
    return HookMatcherSpec.model_validate({"event": event, "matcher": matcher, "hooks": handlers, **fields})


@dataclass
class HookRig:
    """A dispatcher over a real temp workspace; `records` holds every HookExecutedV1 it emitted."""

    workspace: Path
    dispatcher: HookDispatcher
    records: list[HookExecutedV1] = field(default_factory=list[HookExecutedV1])


def make_rig(
    workspace: Path,
    groups: Sequence[HookMatcherSpec],
    *,
    python_handlers: Mapping[str, PythonHookFunction] | None = None,
    judge: Judge | None = None,
    agent_judge: AgentJudge | None = None,
    stop_block_cap: int = 8,
    env: Mapping[str, str] | None = None,
) -> HookRig:
    records: list[HookExecutedV1] = []
    transcript = TranscriptWriter.for_session(workspace / ".bearagent", SESSION_ID, cwd=workspace)
    dispatcher = HookDispatcher(
        groups,
        python_handlers=python_handlers,
        judge=judge,
        agent_judge=agent_judge,
        record=records.append,
        transcript=transcript,
        settings=HookSettings(workspace_root=workspace, session_id=SESSION_ID, stop_block_cap=stop_block_cap, env=env),
    )
    return HookRig(workspace, dispatcher, records)


def bash_payload(command_text: str, tool_use_id: str = "toolu_01") -> dict[str, JsonValue]:
    return {"tool_name": "Bash", "tool_input": {"command": command_text}, "tool_use_id": tool_use_id}


@dataclass
class HookServer:
    """A real HTTP server on 127.0.0.1 answering hook POSTs with `status` and `body`; keeps what it received."""

    url: str
    received: list[tuple[str, dict[str, str], JsonValue]] = field(
        default_factory=list[tuple[str, dict[str, str], JsonValue]]
    )
    status: int = 200
    body: str = ""


@contextmanager
def hook_server() -> Generator[HookServer]:
    state = HookServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            state.received.append(
                (self.path, {k.lower(): v for k, v in self.headers.items()}, cast(JsonValue, json.loads(raw)))
            )
            data = state.body.encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
