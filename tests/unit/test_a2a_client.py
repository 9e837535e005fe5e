"""The A2A client side's own rules, against a hostile or broken remote (an httpx transport in the test plays the
remote agent): an `a2a_agents:` entry's shape checks, a card that names another origin, an answer over the size
bounds, a failed remote task; and the entry as the workspace loads it (a tool, on the trust surface)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from tests.support.config_ws import isolated_env
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.a2a.specs import A2AAgentSpec, parse_a2a_agents
from bearagent.a2a.tool import RemoteAgentTool
from bearagent.domain.ids import ToolCallId
from bearagent.plugins.manager import PluginHost
from bearagent.ports import ToolContext
from bearagent.trust import workspace_trust_surface
from bearagent.workspace import load_workspace

BASE = "http://remote.test/a2a/x"


def _card(url: str = BASE, *, streaming: bool = False) -> dict[str, Any]:
    return {
        "name": "x",
        "description": "a remote",
        "version": "1",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": streaming},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }


def _task(state: str, text: str = "", *, message: str = "") -> dict[str, Any]:
    task: dict[str, Any] = {"id": "t-1", "contextId": "c-1", "status": {"state": state}}
    if text:
        task["artifacts"] = [{"artifactId": "a", "name": "answer", "parts": [{"text": text}]}]
    if message:
        task["status"]["message"] = {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": message}]}
    return task


class Remote:
    """Answers the card and one JSON-RPC call; records what was sent."""

    def __init__(self, card: dict[str, Any], result: dict[str, Any] | bytes) -> None:
        self.card, self.result = card, result
        self.posts: list[dict[str, Any]] = []
        self.headers: list[httpx.Headers] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.headers.append(request.headers)
        if request.method == "GET":
            return httpx.Response(200, json=self.card)
        body = json.loads(request.content)
        self.posts.append(body)
        if isinstance(self.result, bytes):
            return httpx.Response(200, content=self.result, headers={"content-type": "application/json"})
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": self.result})


def _call(remote: Remote, spec: A2AAgentSpec | None = None, **arguments: str) -> Any:
    spec = spec or A2AAgentSpec(name="x", url=BASE, headers={"Authorization": "Bearer ${TOKEN}"})
    tool = RemoteAgentTool(spec, {"TOKEN": "sekret"}, transport=httpx.MockTransport(remote))
    context = ToolContext(workspace_root=Path("/tmp"), tool_call_id=ToolCallId("00000000-0000-4000-8000-000000000001"))
    args = tool.prepare({"prompt": "do it", **arguments}, context)
    return asyncio.run(tool.execute(args, context))


def test_the_remote_answer_is_the_result_with_its_ids_and_the_headers_expanded() -> None:
    remote = Remote(_card(), {"task": _task("TASK_STATE_COMPLETED", "forty-two")})
    result = _call(remote, context_id="c-0")
    assert result.status == "succeeded", result.content
    assert result.content.startswith("forty-two") and "task_id t-1, context_id c-1" in result.content
    assert result.data["state"] == "completed"
    assert remote.headers[0]["authorization"] == "Bearer sekret"
    sent = remote.posts[0]["params"]["message"]
    assert sent["contextId"] == "c-0" and sent["parts"][0]["text"] == "do it"


def test_a_card_naming_another_origin_is_refused_and_nothing_is_sent() -> None:
    remote = Remote(_card("http://elsewhere.test/a2a/x"), {"task": _task("TASK_STATE_COMPLETED", "x")})
    result = _call(remote)
    assert result.status == "failed" and result.error.code == "permission.a2a_foreign_interface"
    assert "elsewhere.test" in result.content and remote.posts == []


def test_an_answer_over_max_response_chars_is_cut_and_says_so() -> None:
    remote = Remote(_card(), {"task": _task("TASK_STATE_COMPLETED", "y" * 5_000)})
    spec = A2AAgentSpec(name="x", url=BASE, max_response_chars=1_000)
    result = _call(remote, spec)
    assert result.status == "succeeded" and result.truncated
    assert result.content.count("y") == 1_000 and "cut at 1000 characters" in result.content


def test_a_body_over_the_byte_bound_stops_the_call(monkeypatch: Any) -> None:
    import bearagent.a2a.tool as tool_module

    monkeypatch.setattr(tool_module, "MAX_BYTES", 50_000)
    huge = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"task": _task("TASK_STATE_COMPLETED", "z" * 100_000)}})
    result = _call(Remote(_card(), huge.encode()))
    assert result.status == "failed" and "more than 50000 bytes" in result.content


def test_a_failed_remote_task_is_a_failed_result_and_input_required_names_the_task() -> None:
    failed = _call(Remote(_card(), {"task": _task("TASK_STATE_FAILED", message="no disk left")}))
    assert failed.status == "failed" and "no disk left" in failed.content and failed.error.code == "tool.a2a_failed"
    asking = _call(Remote(_card(), {"task": _task("TASK_STATE_INPUT_REQUIRED", message="Write needs approval")}))
    assert asking.status == "succeeded" and "Write needs approval" in asking.content
    assert "task_id t-1" in asking.content and asking.data["state"] == "input-required"


def test_a_missing_variable_fails_the_call_naming_it() -> None:
    remote = Remote(_card(), {"task": _task("TASK_STATE_COMPLETED", "x")})
    spec = A2AAgentSpec(name="x", url=BASE, headers={"Authorization": "Bearer ${NOPE}"})
    result = _call(remote, spec)
    assert result.status == "failed" and "NOPE is not set" in result.content and remote.headers == []


def test_entries_are_checked_and_a_broken_one_is_left_out_naming_its_field(tmp_path: Path) -> None:
    raw: dict[str, object] = {
        "good": {"url": "https://a.example/a2a", "timeout_s": 30},
        "bad name": {"url": "https://a.example"},
        "nourl": {"headers": {}},
        "ftp": {"url": "ftp://a.example"},
        "typo": {"url": "https://a.example", "header": {}},
        "slow": {"url": "https://a.example", "timeout_s": 99_999},
        "hdr": {"url": "https://a.example", "headers": {"X": 1}},
    }
    specs, diags = parse_a2a_agents(raw, path=tmp_path / "config.yaml", level="workspace")
    assert [s.name for s in specs] == ["good"] and specs[0].timeout_s == 30
    fields = [d.field for d in diags]
    assert fields == [
        "a2a_agents.bad name",
        "a2a_agents.nourl.url",
        "a2a_agents.ftp.url",
        "a2a_agents.typo.header",
        "a2a_agents.slow",
        "a2a_agents.hdr.headers",
    ]
    assert all(d.severity == "error" and d.fix for d in diags)


def test_a_workspace_entry_is_a_default_tool_and_on_the_trust_surface(tmp_path: Path) -> None:
    config = CONFIG + "a2a_agents:\n  helper: {url: 'https://agents.example/a2a/h', description: Knows things.}\n"
    root = scripted_workspace(
        tmp_path / "ws", "turns: []\n", agents={"main": agent_md("M.", mode="primary")}, config=config
    )
    home = tmp_path / "home"
    home.mkdir()
    loaded = load_workspace(root, env=isolated_env(home), plugins=PluginHost())
    projection = loaded.project("main", require_model=False)
    tool = projection.lookup("a2a__helper")
    assert tool is not None and "Knows things." in tool.spec.description and tool.spec.side_effect == "execute"
    surface = workspace_trust_surface(loaded)
    assert [i.key for i in surface.items if i.kind == "a2a"] == ["a2a helper"]
    assert "remote A2A agent" in surface.describe()


def test_a_v0_3_agent_such_as_fasta2a_or_langgraph_is_called_with_v0_3_methods() -> None:
    card = {
        "protocolVersion": "0.3.0",
        "name": "legacy",
        "description": "a v0.3 agent",
        "url": BASE,
        "preferredTransport": "JSONRPC",
        "version": "1",
        "capabilities": {"streaming": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }
    task = {
        "kind": "task",
        "id": "t-3",
        "contextId": "c-3",
        "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "old but fine"}]}],
    }
    remote = Remote(card, task)
    result = _call(remote)
    assert remote.posts[0]["method"] == "message/send"
    assert result.status == "succeeded" and result.content.startswith("old but fine"), result.content
    assert result.data["task_id"] == "t-3"
