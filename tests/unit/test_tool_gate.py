"""The tool gate: every failure is a failed ToolResult the model can read; hooks and policy folded in."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest
from tests.support.tools import context_for, native_gate, request

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.grant import ToolGrant
from bearagent.domain.tools import ToolRequest, ToolResult, ToolSpec
from bearagent.ports import PostToolDecision, PreToolDecision, ToolContext
from bearagent.tools.base import NativeTool, str_arg
from bearagent.tools.gate import AskRequest, ToolGate, tools_by_name
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.policy import ToolPolicy


class EchoTool(NativeTool):
    """Echoes `text`; `sleep` seconds first; `boom` raises; `big` returns a huge output."""

    def __init__(self, side_effect: str = "read_only", timeout_ms: int = 2_000) -> None:
        super().__init__(
            ToolSpec(
                name="Echo",
                description="echo",
                input_schema=frozen_json(
                    {
                        "type": "object",
                        "properties": {
                            "text": {"type": "string", "maxLength": 50},
                            "sleep": {"type": "number"},
                            "boom": {"type": "boolean"},
                            "big": {"type": "integer"},
                        },
                        "required": ["text"],
                        "additionalProperties": False,
                    }
                ),
                side_effect=side_effect,  # type: ignore[arg-type]
                timeout_ms=timeout_ms,
                max_input_bytes=2_000,
                max_output_chars=1_000,
            )
        )
        self.calls: list[JsonMapping] = []

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        return {**arguments, "text": str_arg(arguments, "text").strip()}

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        self.calls.append(arguments)
        sleep = arguments.get("sleep")
        if isinstance(sleep, (int, float)):
            await asyncio.sleep(sleep)
        if arguments.get("boom") is True:
            raise RuntimeError("kaboom inside the tool")
        big = arguments.get("big")
        text = "x" * big if isinstance(big, int) else str_arg(arguments, "text")
        return self.ok(context, text, {"text": text})


def gate_with(tool: EchoTool, **kwargs: object) -> ToolGate:
    return ToolGate(tools_by_name([tool]), **kwargs)  # type: ignore[arg-type]


def run(gate: ToolGate, tmp_path: Path, arguments: Mapping[str, object], name: str = "Echo") -> ToolResult:
    return asyncio.run(gate.call(request(name, arguments), context_for(tmp_path)))


def test_success_carries_the_request_ids_and_prepared_arguments(tmp_path: Path) -> None:
    tool = EchoTool()
    req = request("Echo", {"text": "  hi  "})
    result = asyncio.run(gate_with(tool).call(req, context_for(tmp_path)))
    assert result.status == "succeeded" and result.content == "hi"
    assert result.tool_call_id == req.tool_call_id and result.tool_name == "Echo"
    assert tool.calls[0]["text"] == "hi"


def test_unknown_tool_lists_available_names(tmp_path: Path) -> None:
    result = asyncio.run(native_gate().call(request("read", {"file_path": "x"}), context_for(tmp_path)))
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "tool.not_available"
    assert "'read' is not available to this agent" in result.content
    assert "Read" in result.content and "call one of these names exactly" in result.content.lower()


def test_validation_error_names_the_field(tmp_path: Path) -> None:
    result = run(gate_with(EchoTool()), tmp_path, {"text": 5})
    assert result.error is not None and result.error.category == "validation"
    assert "Invalid arguments for Echo: text:" in result.content and "input schema" in result.content
    missing = run(gate_with(EchoTool()), tmp_path, {})
    assert "'text' is a required property" in missing.content
    extra = run(gate_with(EchoTool()), tmp_path, {"text": "a", "nope": 1})
    assert "nope" in extra.content


def test_input_size_cap(tmp_path: Path) -> None:
    result = run(gate_with(EchoTool()), tmp_path, {"text": "a", "pad": "p" * 5_000})
    assert result.error is not None and result.error.code == "validation.input_too_large"
    assert "limit is 2000" in result.content


def test_exception_inside_a_tool_is_a_failed_result(tmp_path: Path) -> None:
    result = run(gate_with(EchoTool()), tmp_path, {"text": "a", "boom": True})
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "tool.crashed"
    assert "RuntimeError: kaboom inside the tool" in result.content


def test_timeout_is_a_failed_result(tmp_path: Path) -> None:
    result = run(gate_with(EchoTool(timeout_ms=100)), tmp_path, {"text": "a", "sleep": 5})
    assert result.error is not None and result.error.category == "timeout"
    assert "did not finish within 0.1 s" in result.content
    assert result.duration_ms < 2_000


def test_output_cap_truncates_with_a_visible_note(tmp_path: Path) -> None:
    result = run(gate_with(EchoTool()), tmp_path, {"text": "a", "big": 5_000})
    assert result.status == "succeeded" and result.truncated
    assert len(result.content) <= 1_000
    assert "[output truncated: 4000 of 5000 characters cut, limit 1000]" in result.content


def test_cancellation_propagates(tmp_path: Path) -> None:
    async def main() -> None:
        task = asyncio.create_task(
            gate_with(EchoTool()).call(request("Echo", {"text": "a", "sleep": 5}), context_for(tmp_path))
        )
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_policy_denial_from_a_rule(tmp_path: Path) -> None:
    policy = ToolPolicy(rules=PermissionRules.parse(deny=["Echo(text:secret*)"]))
    result = run(gate_with(EchoTool(), policy=policy), tmp_path, {"text": "secret stuff"})
    assert result.error is not None and result.error.code == "permission.denied"
    assert (
        "denied by the permission rule 'Echo(text:secret*)'" in result.content and "Remove or narrow" in result.content
    )


def test_agent_allowlist_hides_and_denies(tmp_path: Path) -> None:
    gate = gate_with(EchoTool(), policy=ToolPolicy(grant=ToolGrant.resolve(["Read"])))
    result = run(gate, tmp_path, {"text": "a"})
    assert result.error is not None and result.error.code == "tool.not_available"
    gate = gate_with(EchoTool(), policy=ToolPolicy(grant=ToolGrant.resolve(["*"], ["Echo"])))
    assert gate.specs() == []


def test_chat_workspace_allows_no_tool(tmp_path: Path) -> None:
    gate = gate_with(EchoTool(), policy=ToolPolicy(workspace_kind="chat"))
    result = run(gate, tmp_path, {"text": "a"})
    assert result.status == "failed"
    assert gate.specs() == []


def test_ask_without_an_asker_is_a_denial_naming_the_config_line(tmp_path: Path) -> None:
    gate = native_gate(ToolPolicy(mode="default"))
    result = asyncio.run(gate.call(request("Bash", {"command": "git commit -m x"}), context_for(tmp_path)))
    assert result.error is not None and result.error.code == "permission.denied"
    assert "Nobody can approve it" in result.content
    assert 'permissions: {allow: ["Bash(git commit *)"]}' in result.content
    assert not (tmp_path / ".git").exists()


def test_ask_rule_goes_to_the_asker(tmp_path: Path) -> None:
    seen: list[AskRequest] = []
    answers = ["deny", "allow_once", "allow_always"]

    async def asker(ask: AskRequest) -> str:
        seen.append(ask)
        return answers[len(seen) - 1]

    policy = ToolPolicy(rules=PermissionRules.parse(ask=["Echo"]), mode="bypassPermissions")
    tool = EchoTool()
    gate = ToolGate(tools_by_name([tool]), policy=policy, ask=asker)  # type: ignore[arg-type]
    first = run(gate, tmp_path, {"text": "a"})
    assert first.error is not None and "denied by the user" in first.content
    assert run(gate, tmp_path, {"text": "b"}).status == "succeeded"
    assert run(gate, tmp_path, {"text": "c"}).status == "succeeded"
    assert len(seen) == 3 and seen[0].tool_name == "Echo"


def test_allow_always_remembers_the_rule(tmp_path: Path) -> None:
    asked: list[str] = []

    async def asker(ask: AskRequest) -> str:
        asked.append(str(ask.suggested_rule))
        return "allow_always"

    gate = ToolGate(tools_by_name([EchoTool(side_effect="write")]), policy=ToolPolicy(mode="default"), ask=asker)  # type: ignore[arg-type]
    assert run(gate, tmp_path, {"text": "a"}).status == "succeeded"
    assert run(gate, tmp_path, {"text": "b"}).status == "succeeded"
    assert asked == ["Echo"]


class Interceptor:
    def __init__(self, pre: PreToolDecision, post: PostToolDecision | None = None) -> None:
        self.pre = pre
        self.post = post or PostToolDecision()
        self.after: list[ToolResult] = []

    async def before_tool(self, request: ToolRequest, spec: ToolSpec, context: ToolContext) -> PreToolDecision:
        return self.pre

    async def after_tool(
        self, request: ToolRequest, spec: ToolSpec, result: ToolResult, context: ToolContext
    ) -> PostToolDecision:
        self.after.append(result)
        return self.post


def test_interceptor_block(tmp_path: Path) -> None:
    tool = EchoTool()
    gate = gate_with(tool, interceptor=Interceptor(PreToolDecision(block=True, reason="no echo on fridays")))
    result = run(gate, tmp_path, {"text": "a"})
    assert result.error is not None and result.error.code == "permission.blocked_by_hook"
    assert "blocked by a PreToolUse hook: no echo on fridays" in result.content
    assert tool.calls == []


def test_interceptor_deny_beats_bypass_mode(tmp_path: Path) -> None:
    gate = gate_with(
        EchoTool(),
        policy=ToolPolicy(mode="bypassPermissions"),
        interceptor=Interceptor(PreToolDecision(permission="deny", reason="nope")),
    )
    assert run(gate, tmp_path, {"text": "a"}).status == "failed"


def test_interceptor_allow_skips_the_prompt_but_not_a_deny_rule(tmp_path: Path) -> None:
    allow = Interceptor(PreToolDecision(permission="allow"))
    gate = gate_with(EchoTool(side_effect="write"), policy=ToolPolicy(mode="default"), interceptor=allow)
    assert run(gate, tmp_path, {"text": "a"}).status == "succeeded"
    denying = ToolPolicy(rules=PermissionRules.parse(deny=["Echo"]))
    gate = gate_with(EchoTool(), policy=denying, interceptor=allow)
    assert run(gate, tmp_path, {"text": "a"}).status == "failed"


def test_interceptor_ask_without_asker_denies(tmp_path: Path) -> None:
    gate = gate_with(EchoTool(), interceptor=Interceptor(PreToolDecision(permission="ask", reason="check it")))
    result = run(gate, tmp_path, {"text": "a"})
    assert result.status == "failed" and "check it" in result.content


def test_interceptor_rewrite_is_re_prepared(tmp_path: Path) -> None:
    tool = EchoTool()
    gate = gate_with(
        tool, interceptor=Interceptor(PreToolDecision(updated_arguments=frozen_json({"text": "  rewritten "})))
    )
    result = run(gate, tmp_path, {"text": "orig"})
    assert result.content == "rewritten"
    bad = gate_with(EchoTool(), interceptor=Interceptor(PreToolDecision(updated_arguments=frozen_json({"text": 3}))))
    failed = run(bad, tmp_path, {"text": "orig"})
    assert failed.error is not None and failed.error.category == "validation"
    assert "PreToolUse hook rewrote the arguments" in failed.content


def test_interceptor_context_and_post_feedback_reach_the_model(tmp_path: Path) -> None:
    hook = Interceptor(
        PreToolDecision(additional_context="pre: remember the style guide"),
        PostToolDecision(block_reason="output looks wrong", additional_context="post: lint passed"),
    )
    result = run(gate_with(EchoTool(), interceptor=hook), tmp_path, {"text": "hello"})
    assert result.status == "succeeded"
    assert result.content.startswith("hello")
    assert "pre: remember the style guide" in result.content
    assert "post: lint passed" in result.content
    assert "PostToolUse hook feedback: output looks wrong" in result.content
    assert hook.after[0].content == "hello"


def test_a_crashing_interceptor_does_not_raise(tmp_path: Path) -> None:
    class Broken(Interceptor):
        async def before_tool(self, request: ToolRequest, spec: ToolSpec, context: ToolContext) -> PreToolDecision:
            raise ValueError("hook bug")

    result = run(gate_with(EchoTool(), interceptor=Broken(PreToolDecision())), tmp_path, {"text": "a"})
    assert result.status == "failed" and "ValueError: hook bug" in result.content


def test_read_deny_rules_hide_files_from_searches(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("API_TOKEN=hunter2\n")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "k.txt").write_text("hunter2 key\n")
    (tmp_path / "app.py").write_text("token = 'hunter2'\n")
    policy = ToolPolicy(rules=PermissionRules.parse(deny=["Read(.env)"], ask=["Read(/secrets/**)"]))
    gate = native_gate(policy)

    async def go() -> None:
        grep = await gate.call(request("Grep", {"pattern": "hunter2", "output_mode": "content"}), context_for(tmp_path))
        assert grep.content == "app.py:1:token = 'hunter2'"
        glob = await gate.call(request("Glob", {"pattern": "**/*"}), context_for(tmp_path))
        assert glob.content == "app.py"
        direct = await gate.call(request("Grep", {"pattern": "x", "path": ".env"}), context_for(tmp_path))
        assert direct.status == "failed" and "Read(.env)" in direct.content

    asyncio.run(go())


def test_a_hook_allow_cannot_lift_the_ask_on_a_control_file(tmp_path: Path) -> None:
    # A trusted hook may auto-approve ordinary calls; a change to the workspace's control files needs a person.
    allow = Interceptor(PreToolDecision(permission="allow", reason="auto-approve edits"))
    tools = dict(native_gate().tools)
    gate = ToolGate(tools, policy=ToolPolicy(mode="acceptEdits", root=tmp_path), interceptor=allow)
    ctx = context_for(tmp_path)
    control = asyncio.run(gate.call(request("Write", {"file_path": ".bearagent/config.yaml", "content": "x"}), ctx))
    assert control.status == "failed" and control.error is not None and control.error.code == "permission.denied"
    assert not (tmp_path / ".bearagent" / "config.yaml").exists()
    plain = asyncio.run(gate.call(request("Write", {"file_path": "notes.md", "content": "x"}), ctx))
    assert plain.status == "succeeded" and (tmp_path / "notes.md").read_text() == "x"
