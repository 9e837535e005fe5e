"""The log is the whole story: a history rebuilt from it equals what the model was sent, request by request, even
when hooks added context to the prompt or made the agent continue; session hook executions are facts too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import cast

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent import hookimpl
from bearagent.api import open_workspace
from bearagent.domain._base import JsonValue, frozen_json
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message
from bearagent.domain.models import ModelCompleted, ModelEvent, ModelRequest, ModelToolCall, TextDelta
from bearagent.domain.specs import ModelEntry
from bearagent.plugins.contributions import ProviderRegistration
from bearagent.plugins.manager import PluginHost
from bearagent.ports import ModelProvider
from bearagent.runtime.history import history_from_events
from bearagent.trust import trust, workspace_trust_surface


class RecordingProvider:
    """Answers from a fixed list of turns and keeps every request it was sent."""

    def __init__(self, turns: list[str | dict[str, object]], requests: list[ModelRequest]) -> None:
        self._turns = turns
        self._requests = requests

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self._requests.append(request)
        turn = self._turns[min(len(self._requests) - 1, len(self._turns) - 1)]
        if isinstance(turn, str):
            yield TextDelta(text=turn)
            yield ModelCompleted(stop_reason="end_turn")
            return
        arguments = frozen_json(cast(dict[str, JsonValue], turn["arguments"]))
        yield ModelToolCall(
            tool_call_id=ToolCallId.new(), provider_call_id="c1", name=str(turn["name"]), arguments=arguments
        )
        yield ModelCompleted(stop_reason="tool_use")


class Plugin:
    def __init__(self, turns: list[str | dict[str, object]], requests: list[ModelRequest]) -> None:
        self.turns = turns
        self.requests = requests

    @hookimpl
    def register_models(self, register: object) -> None:
        def factory(entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path) -> ModelProvider:
            return RecordingProvider(self.turns, self.requests)

        cast(Callable[[ProviderRegistration], None], register)(ProviderRegistration(id="recording", factory=factory))


HOOK = """#!/usr/bin/env python3
import json, os, sys
data = json.load(sys.stdin)
event = data["hook_event_name"]
if event == "UserPromptSubmit":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": "Project rule: be brief."}}))
elif event == "Stop":
    marker = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "stopped-once")
    if not os.path.exists(marker):
        open(marker, "w").close()
        print(json.dumps({"decision": "block", "reason": "run the tests first"}))
"""

CONFIG = """
default_agent: main
default_model: rec
models:
  rec: {provider: recording}
hooks:
  SessionStart:
    - hooks: [{type: command, command: .bearagent/hooks/h.py}]
  UserPromptSubmit:
    - hooks: [{type: command, command: .bearagent/hooks/h.py}]
  Stop:
    - hooks: [{type: command, command: .bearagent/hooks/h.py}]
"""


def conversation(request: ModelRequest) -> list[Message]:
    """What the model saw besides the system prompt."""
    return [m for m in request.messages if m.role != "system"]


def test_a_rebuilt_history_equals_what_the_model_was_sent(tmp_path: Path) -> None:
    requests: list[ModelRequest] = []
    turns: list[str | dict[str, object]] = [
        {"name": "Read", "arguments": {"file_path": "notes.md"}},
        "first answer",
        "second answer, after the Stop hook",
        "answer of the second run",
    ]
    root = scripted_workspace(
        tmp_path / "ws",
        "turns:\n  - text: unused\n",
        agents={"main": agent_md("Main.", mode="primary", tools="[Read]")},
        config=CONFIG,
    )
    write(root, ".bearagent/hooks/h.py", HOOK, executable=True)
    write(root, "notes.md", "the notes\n")
    home = tmp_path / "home"
    host = PluginHost()
    host.register(Plugin(turns, requests), "recording")
    loaded = load(root, home, plugins=host)
    trust(root, workspace_trust_surface(loaded), env=isolated_env(home))

    with open_workspace(root, env=isolated_env(home), plugins=host) as ws:
        first = ws.run_sync("summarise the notes")
        assert first.status == "succeeded", first.error
        assert first.final == "second answer, after the Stop hook"
        second = ws.run_sync("and now?", session=str(first.session_id))
        assert second.status == "succeeded", second.error
        events_first = ws.events(str(first.run_id))

    # every request names the prompt it was built from: the hash RunCreated recorded (issue 31)
    assert events_first[0].event_type == "RunCreated"
    assert {r.prompt_version for r in requests[:3]} == {f"sha256:{events_first[0].payload['prompt_hash']}"}

    # request by request, the conversation of run 1 is a prefix of what the log rebuilds
    rebuilt = history_from_events([events_first])
    for request in requests[:3]:
        sent = conversation(request)
        assert rebuilt[: len(sent)] == sent
    # the second run's request starts with exactly the rebuilt history of the first
    sent_second = conversation(requests[3])
    assert sent_second[:-1] == rebuilt
    assert sent_second[0].text == "summarise the notes\n\nProject rule: be brief."
    assert any(m.role == "user" and m.text == "Stop hook feedback: run the tests first" for m in rebuilt)

    types = [e.event_type for e in events_first]
    injected = [e.payload for e in events_first if e.event_type == "MessageInjected"]
    assert [p["kind"] for p in injected] == ["prompt_context", "stop_feedback"]
    session_start = [
        e for e in events_first if e.event_type == "HookExecuted" and e.payload["hook_event"] == "SessionStart"
    ]
    assert len(session_start) == 1 and types.index("HookExecuted") > types.index("RunStarted")
    assert injected[0]["text"] == "Project rule: be brief."
