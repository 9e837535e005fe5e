"""Rewinding and forking a session's conversation through real runs: a model that records every request it is sent
shows what the session's next run sees after `bearagent rewind --conversation` (and after a rewind of that rewind),
and after `bearagent sessions fork --at RUN[:SEQUENCE]` and `run --fork-session`; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import cast

import pytest
from click.testing import CliRunner, Result
from tests.security.test_shipped_logs_postgres import user_env
from tests.support import postgres_cluster
from tests.support.config_ws import isolated_env, load
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent import hookimpl
from bearagent.api import open_workspace
from bearagent.cli import main
from bearagent.domain.ids import SessionId
from bearagent.domain.models import ModelCompleted, ModelEvent, ModelRequest, TextDelta
from bearagent.domain.specs import ModelEntry
from bearagent.plugins.contributions import ProviderRegistration
from bearagent.plugins.manager import PluginHost
from bearagent.ports import ModelProvider
from bearagent.trust import trust, workspace_trust_surface

CONFIG = """
default_agent: main
default_model: rec
models:
  rec: {provider: recording}
  scripted: {provider: scripted, script: script.yaml}
"""
SCRIPT = "turns:\n" + "".join(f"  - text: scripted answer {i}\n" for i in range(6))


class Echo:
    """Answers `answer to <the last user message>` and keeps every request it was sent."""

    def __init__(self, requests: list[ModelRequest]) -> None:
        self._requests = requests

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self._requests.append(request)
        last = [m for m in request.messages if m.role == "user"][-1]
        yield TextDelta(text=f"answer to {last.text}")
        yield ModelCompleted(stop_reason="end_turn")


class Plugin:
    def __init__(self, requests: list[ModelRequest]) -> None:
        self.requests = requests

    @hookimpl
    def register_models(self, register: object) -> None:
        def factory(entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path) -> ModelProvider:
            return Echo(self.requests)

        cast(Callable[[ProviderRegistration], None], register)(ProviderRegistration(id="recording", factory=factory))


@pytest.fixture(params=["sqlite", "postgres"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    if request.param == "postgres":
        postgres_cluster.require()
        return user_env(tmp_path / "home", postgres_cluster.new_database())
    return isolated_env(tmp_path / "home")


class Session:
    """One workspace: runs through the Python API with the recording model, rewinds and forks through the CLI."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.env = env
        self.requests: list[ModelRequest] = []
        self.host = PluginHost()
        self.host.register(Plugin(self.requests), "recording")
        self.root = scripted_workspace(
            tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary", tools="[Read]")}, config=CONFIG
        )
        loaded = load(self.root, tmp_path / "home", plugins=self.host, env=env)
        trust(self.root, workspace_trust_surface(loaded), env=env)

    def run(self, prompt: str, session: str | None = None) -> tuple[str, str]:
        """(run id, session id)"""
        with open_workspace(self.root, env=self.env, plugins=self.host) as ws:
            result = ws.run_sync(prompt, session=session)
        assert result.status == "succeeded", result.error
        return str(result.run_id), str(result.session_id)

    def seen(self) -> list[str]:
        """The conversation the last request carried (besides the system prompt)."""
        return [m.text for m in self.requests[-1].messages if m.role != "system"]

    def cli(self, *args: str) -> Result:
        return CliRunner().invoke(main, [*args, "-w", str(self.root)], env=self.env, prog_name="bearagent")

    def events(self, run_id: str) -> list[dict[str, object]]:
        result = self.cli("events", run_id, "--json")
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in result.output.splitlines()]


def test_a_rewound_conversation_is_what_the_next_run_sees_and_the_rewind_can_be_rewound(
    tmp_path: Path, env: dict[str, str]
) -> None:
    ws = Session(tmp_path, env)
    _r1, session = ws.run("one")
    r2, _ = ws.run("two", session)
    r3, _ = ws.run("three", session)
    assert ws.seen() == ["one", "answer to one", "two", "answer to two", "three"]

    dry = ws.cli("rewind", r2[:8], "--conversation", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"would rewind the conversation to before run {r2}" in dry.output

    done = ws.cli("rewind", r2[:8], "--conversation")
    assert done.exit_code == 0, done.output
    assert "the session's next run continues from there" in done.output
    # the fact is in the session's latest run (a finished run accepts it), naming the point
    rewound = [e for e in ws.events(r3) if e["event_type"] == "ConversationRewound"]
    assert len(rewound) == 1 and cast(dict[str, object], rewound[0]["payload"])["to_run_id"] == r2

    again = ws.cli("rewind", r2[:8], "--conversation")
    assert again.exit_code == 0 and "nothing to rewind" in again.output, again.output

    r4, _ = ws.run("four", session)
    assert ws.seen() == ["one", "answer to one", "four"]

    # the rewind is a fact, and can be rewound: back to before it, the conversation it replaced returns
    seq = cast(int, rewound[0]["sequence"])
    undo = ws.cli("rewind", r3[:8], "--conversation", "--to-event", str(seq))
    assert undo.exit_code == 0, undo.output
    ws.run("five", session)
    assert ws.seen() == ["one", "answer to one", "two", "answer to two", "three", "answer to three", "five"]
    assert r4  # run four stays in the log; the conversation went back to before it

    # the log keeps everything: every run is still listed
    listed = ws.cli("runs", "list", "--json")
    assert listed.exit_code == 0 and all(r in listed.output for r in (r2, r3, r4)), listed.output


def test_a_fork_at_a_run_or_an_event_sees_exactly_the_history_up_to_it(tmp_path: Path, env: dict[str, str]) -> None:
    ws = Session(tmp_path, env)
    r1, session = ws.run("one")
    r2, _ = ws.run("two", session)

    forked = ws.cli("sessions", "fork", session[:8], "--at", r1[:8], "--json")
    assert forked.exit_code == 0, forked.output
    fork = json.loads(forked.output)
    assert fork["forked_from"] == {"session_id": session, "run_id": r1, "sequence": None}
    assert fork["session_id"] != session
    _, in_fork = ws.run("after the fork", fork["session_id"])
    assert in_fork == fork["session_id"]
    assert ws.seen() == ["one", "answer to one", "after the fork"]
    listed = {s["session_id"]: s for s in json.loads(ws.cli("sessions", "list", "--json").output)}
    assert listed[fork["session_id"]]["forked_from"] == fork["forked_from"] and listed[session]["forked_from"] is None

    # at an event: through event 1 of run two (its RunCreated: the prompt, not yet answered)
    assert ws.events(r2)[0]["event_type"] == "RunCreated"
    at_event = ws.cli("sessions", "fork", session, "--at", f"{r2}:1", "--json")
    assert at_event.exit_code == 0, at_event.output
    ws.run("next", json.loads(at_event.output)["session_id"])
    assert ws.seen() == ["one", "answer to one", "two", "next"]

    # a fork of the fork starts from the fork's history
    nested = ws.cli("sessions", "fork", fork["session_id"], "--json")
    assert nested.exit_code == 0, nested.output
    ws.run("deeper", json.loads(nested.output)["session_id"])
    assert ws.seen() == ["one", "answer to one", "after the fork", "answer to after the fork", "deeper"]

    # the origin is untouched
    ws.run("three", session)
    assert ws.seen() == ["one", "answer to one", "two", "answer to two", "three"]


def test_run_fork_session_continues_in_a_new_session(tmp_path: Path, env: dict[str, str]) -> None:
    # all through the CLI, with the scripted model; the histories read back as a next run is given them
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary")})

    def cli(*args: str) -> Result:
        return CliRunner().invoke(main, [*args, "-w", str(root)], env=env, prog_name="bearagent")

    first = cli("run", "--json", "one")
    assert first.exit_code == 0, first.output
    session = json.loads(first.output)["session_id"]
    clash = cli("run", "--fork-session", session, "--session", session, "x")
    assert clash.exit_code == 2 and "exclude each other" in clash.output
    forked = cli("run", "--fork-session", session[:8], "--json", "in the fork")
    assert forked.exit_code == 0, forked.output
    in_fork = json.loads(forked.output)["session_id"]
    assert in_fork != session

    with open_workspace(root, env=env, plugins=PluginHost()) as ws:
        history = ws._runtime.sessions.session_history  # pyright: ignore[reportPrivateUsage]
        assert [m.text for m in history(SessionId(in_fork))] == [
            "one",
            "scripted answer 0",
            "in the fork",
            "scripted answer 0",  # a new session's scripted model starts at the script's first turn
        ]
        assert [m.text for m in history(SessionId(session))] == ["one", "scripted answer 0"]


def test_bad_points_are_refused_naming_the_fix(tmp_path: Path, env: dict[str, str]) -> None:
    ws = Session(tmp_path, env)
    r1, session = ws.run("one")
    _r2, other = ws.run("elsewhere")
    wrong = ws.cli("sessions", "fork", session, "--at", _r2)
    assert wrong.exit_code == 2 and f"is not a top-level run of session {session}" in wrong.output
    beyond = ws.cli("sessions", "fork", session, "--at", f"{r1}:999")
    assert beyond.exit_code == 2 and "has no event 999" in beyond.output
    missing = ws.cli("sessions", "fork", "nosuchsession")
    assert missing.exit_code == 2 and "bearagent sessions list" in missing.output
    both = ws.cli("rewind", r1, "--to", "abcdefgh", "--to-event", "2")
    assert both.exit_code == 2 and "exclude each other" in both.output
    assert other != session
