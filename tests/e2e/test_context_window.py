"""Context accounting against an OpenAI-compatible server on 127.0.0.1 (the official SDK, a fake server): the
model's window is read from the server's `/v1/models` listing once per provider, and a context overflow the
server reports (llama.cpp's own error body) makes the run compact its history once and try again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeVar, cast

from tests.support.config_ws import isolated_env, load, write
from tests.support.fake_openai import Answer, FakeOpenAI
from tests.support.run_ws import agent_md

from bearagent.api import Workspace, open_workspace
from bearagent.cli._run_common import failure_lines
from bearagent.domain.events import Event
from bearagent.domain.run_events import (
    ContextCompactedV1,
    ModelCallFailedV2,
    ModelCallRequestedV3,
    RunEventPayload,
    parse_run_event_payload,
)
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

P = TypeVar("P", bound=RunEventPayload)
OVERFLOW = "openai_chat/error_400_llamacpp_context_size.json"
MARKER = "FIRST-TURN-ONLY"


def _facts(events: Sequence[Event], kind: type[P]) -> list[P]:
    out: list[P] = []
    for event in events:
        payload = parse_run_event_payload(event.event_type, event.schema_version, event.payload)
        if isinstance(payload, kind):
            out.append(payload)
    return out


def _last_message(body: Mapping[str, object]) -> str:
    messages = cast(list[Mapping[str, object]], body["messages"])
    return str(messages[-1]["content"])


def _workspace(tmp_path: Path, base_url: str, extra: str = "") -> Workspace:
    root, home = tmp_path / "ws", tmp_path / "home"
    write(
        root,
        ".bearagent/config.yaml",
        "default_agent: main\ndefault_model: local\nmodels:\n"
        f"  local: {{provider: openai-compatible, base_url: '{base_url}', model: local-model, api_key_env: FAKE_KEY}}\n"
        + extra,
    )
    write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary", tools="[]"))
    env = {**isolated_env(home), "FAKE_KEY": "sk-fake"}
    trust(root, workspace_trust_surface(load(root, home)), env=env)
    return open_workspace(root, env=env, plugins=PluginHost())


def test_the_window_is_read_from_the_servers_model_listing_once(tmp_path: Path) -> None:
    listing = {"object": "list", "data": [{"id": "local-model", "object": "model", "meta": {"n_ctx_train": 4096}}]}
    with (
        FakeOpenAI([Answer(text="One."), Answer(text="Two.")], listing=listing) as server,
        _workspace(tmp_path, server.base_url) as ws,
    ):
        first = ws.run_sync("first")
        second = ws.run_sync("second", session=str(first.session_id))
        assert (first.status, second.status) == ("succeeded", "succeeded"), (first.error, second.error)
        requested = [r for run in (first, second) for r in _facts(ws.events(str(run.run_id)), ModelCallRequestedV3)]
    assert [(r.context_window, r.context_window_source) for r in requested] == [(4096, "server")] * 2
    assert [r.path for r in server.requests if r.method == "GET"] == ["/v1/models"]  # once, for both runs
    assert all(r.estimated_input_tokens > 0 and r.estimator.startswith(("chars/", "tiktoken:")) for r in requested)


def test_a_context_overflow_compacts_once_and_the_retry_succeeds(tmp_path: Path) -> None:
    answers = [
        Answer(text="Noted."),
        Answer(text="Noted again."),
        Answer(error_fixture=OVERFLOW),
        Answer(text="Summary: the user said the code is 7-4-1-9.", prompt_tokens=200, completion_tokens=12),
        Answer(text="The code is 7-4-1-9."),
    ]
    with (
        FakeOpenAI(answers) as server,
        _workspace(tmp_path, server.base_url, "compaction: {keep_recent_turns: 1}\n") as ws,
    ):  # no listing (404): the window is unknown, only the overflow compacts
        first = ws.run_sync(f"{MARKER}: the code is 7-4-1-9.")
        session = str(first.session_id)
        ws.run_sync("Second message.", session=session)
        third = ws.run_sync("What is the code?", session=session)
        events = ws.events(str(third.run_id))
    assert third.status == "succeeded", third.error
    assert third.final == "The code is 7-4-1-9."
    kinds = [e.event_type for e in events if e.event_type.startswith(("ModelCall", "ContextCompacted"))]
    assert kinds == [
        "ModelCallRequested",
        "ModelCallStarted",
        "ModelCallFailed",
        "ModelCallRequested",
        "ModelCallStarted",
        "ContextCompacted",
        "ModelCallRequested",
        "ModelCallStarted",
        "ModelCallCompleted",
    ]
    (failed,) = _facts(events, ModelCallFailedV2)
    assert failed.error.category == "context_overflow" and failed.will_retry
    (compacted,) = _facts(events, ContextCompactedV1)
    assert compacted.trigger == "overflow" and compacted.model_ref == "workspace/local"
    assert compacted.replaced_messages == 4 and compacted.kept_messages == 1
    assert [r.purpose for r in _facts(events, ModelCallRequestedV3)] == ["turn", "compaction", "turn"]
    assert third.usage.model_iterations == 3 and third.usage.input_tokens >= 200

    chats = server.chat_requests()
    summary_request, retried = chats[3], chats[4]
    assert MARKER in summary_request.text() and "tools" not in summary_request.body
    assert "Summary: the user said the code is 7-4-1-9." in retried.text()
    assert MARKER not in retried.text() and "Second message." not in retried.text()
    assert "What is the code?" in retried.text()


def test_an_overflow_after_the_compaction_fails_the_run_and_says_what_to_do(tmp_path: Path) -> None:
    answers = [
        Answer(text="Noted."),
        Answer(error_fixture=OVERFLOW),
        Answer(text="Summary: a note."),
        Answer(error_fixture=OVERFLOW),
    ]
    with (
        FakeOpenAI(answers) as server,
        _workspace(tmp_path, server.base_url, "compaction: {keep_recent_turns: 1}\n") as ws,
    ):
        first = ws.run_sync(f"{MARKER}.")
        second = ws.run_sync("Again.", session=str(first.session_id))
        events = ws.events(str(second.run_id))
    assert second.status == "failed" and second.error is not None
    assert second.error.category == "context_overflow"
    assert len(_facts(events, ContextCompactedV1)) == 1  # one compaction, then the second overflow ends the run
    lines = failure_lines(second)
    assert lines is not None and "even after compacting the history once" in lines[1]


def test_with_compaction_disabled_an_overflow_fails_the_run_without_a_summary_call(tmp_path: Path) -> None:
    with (
        FakeOpenAI([Answer(text="Noted."), Answer(error_fixture=OVERFLOW)]) as server,
        _workspace(tmp_path, server.base_url, "compaction: {enabled: false}\n") as ws,
    ):
        first = ws.run_sync(f"{MARKER}.")
        second = ws.run_sync("Again.", session=str(first.session_id))
    assert second.status == "failed" and second.error is not None
    assert second.error.category == "context_overflow"
    assert len(server.chat_requests()) == 2


def test_a_summary_request_the_summary_model_cannot_hold_is_sent_again_with_the_newer_half(tmp_path: Path) -> None:
    answers = [
        Answer(text="Noted."),
        Answer(error_fixture=OVERFLOW),  # the turn does not fit
        Answer(error_fixture=OVERFLOW),  # nor does the summary request
        Answer(text="Summary: a note."),
        Answer(text="Done."),
    ]
    with (
        FakeOpenAI(answers) as server,
        _workspace(tmp_path, server.base_url, "compaction: {keep_recent_turns: 1}\n") as ws,
    ):
        first = ws.run_sync(f"{MARKER}: " + "an old, long note. " * 40)
        second = ws.run_sync("Go on.", session=str(first.session_id))
        events = ws.events(str(second.run_id))
    assert second.status == "succeeded", second.error
    assert [r.purpose for r in _facts(events, ModelCallRequestedV3)] == ["turn", "compaction", "compaction", "turn"]
    assert [f.error.category for f in _facts(events, ModelCallFailedV2)] == ["context_overflow"] * 2
    chats = server.chat_requests()
    whole, half = (_last_message(chats[i].body) for i in (2, 3))
    assert MARKER in whole and "are left out" not in whole
    assert len(half) < len(whole) * 0.75 and "characters of the conversation are left out" in half


def test_an_overflow_with_nothing_to_compact_fails_at_once_and_says_it_will_not_retry(tmp_path: Path) -> None:
    with (
        FakeOpenAI([Answer(error_fixture=OVERFLOW)]) as server,
        _workspace(tmp_path, server.base_url) as ws,
    ):
        result = ws.run_sync("a first prompt that is already too long for the window")
        events = ws.events(str(result.run_id))
    assert result.status == "failed" and result.error is not None
    assert result.error.category == "context_overflow"
    (failed,) = _facts(events, ModelCallFailedV2)
    assert not failed.will_retry  # the goal alone is the conversation: there is nothing to summarise
    assert len(server.chat_requests()) == 1 and not _facts(events, ContextCompactedV1)
