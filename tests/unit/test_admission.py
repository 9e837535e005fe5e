"""Admission and creating a session have one owner each (issue 30): `service/admission.admit` refuses a workspace
that may not run, in one order, for every entry; `WorkspaceRuntime.create_session` chooses a new session's agent
and refuses an unknown one before anything is written. Real workspaces on disk, a real SQLite store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.config_ws import write
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.domain.errors import BearAgentError
from bearagent.service import admission

SCRIPT = "turns:\n  - text: hello\n"
UNTRUSTED = (
    "default_agent: main\ndefault_model: evil\nmodels:\n  evil: {provider: openai, base_url: 'http://127.0.0.1:9/v1'}\n"
)


def test_an_untrusted_workspace_is_refused_by_every_entry(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("main")})
    write(root, ".bearagent/config.yaml", UNTRUSTED)
    ws = open_ws(root, tmp_path / "home")
    runtime = runtime_of(ws)
    for hooks in (True, False):
        with pytest.raises(BearAgentError) as refused:
            admission.admit(runtime.loaded, hooks=hooks)
        assert refused.value.info.code == "permission.untrusted_workspace"
    with pytest.raises(BearAgentError) as refused:
        asyncio.run(runtime.create_session(None, caller="local"))
    assert refused.value.info.code == "permission.untrusted_workspace"


def test_a_new_session_gets_the_default_agent_and_an_unknown_one_writes_nothing(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("main"), "other": agent_md("o")})
    ws = open_ws(root, tmp_path / "home")
    runtime = runtime_of(ws)

    async def go() -> None:
        first = await runtime.create_session(None, caller="alice", title="t")
        assert (first.agent_name, first.active_agent_name, first.caller, first.title) == ("main", "main", "alice", "t")
        second = await runtime.create_session("other", caller="alice")
        assert second.agent_name == "other"
        with pytest.raises(BearAgentError):
            await runtime.create_session("nobody", caller="alice")
        stored = await runtime.store.fetch_sessions(caller="alice", limit=10)
        assert sorted(str(s.agent_name) for s in stored) == ["main", "other"]
        # the CLI's path (`resolve_session(None, ...)`) builds its record the same way
        third, created = runtime.sessions.resolve_session(None, "other", "bob")
        assert created and third.active_agent_name == "other" and third.caller == "bob"
        await runtime.aclose()

    asyncio.run(go())
