"""Each handler type against real things: subprocesses (including Claude Code's doc scripts unchanged), a local HTTP
server, judge functions, and plugin Python callables."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import time
from pathlib import Path

import pytest
from tests.support.hooks import SCRIPTS_DIR, command, hook_server, install_doc_script, write_script

from bearagent.domain._base import JsonValue
from bearagent.domain.specs import HookHandlerSpec
from bearagent.hooks.hook_input import CommonInput, build_hook_input
from bearagent.hooks.protocol import HandlerFailure, HandlerResult, HookReply, JsonDict
from bearagent.hooks.runners import RunnerContext, judge_prompt, run_handler


def hook_input(workspace: Path, event: str, fields: dict[str, JsonValue]) -> JsonDict:
    common = CommonInput.model_validate(
        {
            "session_id": "s-1",
            "transcript_path": str(workspace / "t.jsonl"),
            "cwd": str(workspace),
            "hook_event_name": event,
            "run_id": "r-1",
            "agent_name": "build",
        }
    )
    return build_hook_input(common, fields)


def bash_input(workspace: Path, cmd: str) -> JsonDict:
    return hook_input(
        workspace, "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": cmd}, "tool_use_id": "toolu_1"}
    )


def ctx(workspace: Path) -> RunnerContext:
    return RunnerContext(workspace_root=workspace, env=dict(os.environ))


def run(spec: HookHandlerSpec, event: str, data: JsonDict, context: RunnerContext) -> HandlerResult:
    return asyncio.run(run_handler(spec, event, data, context))


# ---- command: Claude Code doc scripts, unchanged -------------------------------------------------------------


def test_doc_bash_guard_with_jq_blocks_rm_rf(tmp_path: Path) -> None:
    script = install_doc_script(tmp_path, "block-rm.sh")
    blocked = run(command(script), "PreToolUse", bash_input(tmp_path, "rm -rf /tmp/x"), ctx(tmp_path))
    assert isinstance(blocked, HookReply) and blocked.block
    assert blocked.block_reason == "Blocked: rm -rf commands are not allowed"
    allowed = run(command(script), "PreToolUse", bash_input(tmp_path, "ls -la"), ctx(tmp_path))
    assert isinstance(allowed, HookReply) and not allowed.block and allowed.permission is None


def test_doc_protect_files_script_reads_file_path(tmp_path: Path) -> None:
    script = install_doc_script(tmp_path, "protect-files.sh")
    data = hook_input(
        tmp_path,
        "PreToolUse",
        {"tool_name": "Write", "tool_input": {"file_path": ".env", "content": "X=1"}, "tool_use_id": "t"},
    )
    result = run(command(script), "PreToolUse", data, ctx(tmp_path))
    assert (
        isinstance(result, HookReply)
        and result.block
        and "matches protected pattern '.env'" in (result.block_reason or "")
    )


def test_doc_python_validator_exit_2_and_exit_1(tmp_path: Path) -> None:
    script = install_doc_script(tmp_path, "bash_command_validator.py")
    blocked = run(command(script), "PreToolUse", bash_input(tmp_path, "grep foo file.txt"), ctx(tmp_path))
    assert isinstance(blocked, HookReply) and blocked.block and "Use 'rg'" in (blocked.block_reason or "")
    other_tool = hook_input(
        tmp_path, "PreToolUse", {"tool_name": "Read", "tool_input": {"file_path": "a"}, "tool_use_id": "t"}
    )
    failure = run(command(script), "PreToolUse", other_tool, ctx(tmp_path))
    assert isinstance(failure, HandlerFailure) and failure.kind == "exit_status" and "status code 1" in failure.message


def test_doc_python_hook_printing_permission_decision_deny(tmp_path: Path) -> None:
    script = install_doc_script(tmp_path, "pretooluse_deny.py")
    result = run(command(script), "PreToolUse", bash_input(tmp_path, "rm -rf build"), ctx(tmp_path))
    assert isinstance(result, HookReply)
    assert (result.permission, result.permission_reason) == ("deny", "Destructive command blocked by hook")


def test_doc_legacy_approve_script(tmp_path: Path) -> None:
    script = install_doc_script(tmp_path, "approve_docs.py")
    data = hook_input(
        tmp_path, "PreToolUse", {"tool_name": "Read", "tool_input": {"file_path": "README.md"}, "tool_use_id": "t"}
    )
    result = run(command(script), "PreToolUse", data, ctx(tmp_path))
    assert isinstance(result, HookReply) and result.permission == "allow"


def test_doc_user_prompt_submit_adds_context_or_blocks(tmp_path: Path) -> None:
    script = install_doc_script(tmp_path, "user_prompt_context.py")
    ok = run(
        command(script),
        "UserPromptSubmit",
        hook_input(tmp_path, "UserPromptSubmit", {"prompt": "fix the bug"}),
        ctx(tmp_path),
    )
    assert isinstance(ok, HookReply) and (ok.additional_context or "").startswith("Current time: ")
    secret = hook_input(tmp_path, "UserPromptSubmit", {"prompt": "my password: hunter2"})
    blocked = run(command(script), "UserPromptSubmit", secret, ctx(tmp_path))
    assert (
        isinstance(blocked, HookReply) and blocked.block and "Security policy violation" in (blocked.block_reason or "")
    )


def test_doc_post_tool_use_logger_sees_tool_response(tmp_path: Path) -> None:
    script = install_doc_script(tmp_path, "log-tool-use.sh")
    data = hook_input(
        tmp_path,
        "PostToolUse",
        {
            "tool_name": "Bash",
            "tool_input": {"command": "echo hi"},
            "tool_response": {"stdout": "hi\n", "stderr": "", "exit_code": 0, "interrupted": False},
            "tool_use_id": "toolu_9",
        },
    )
    result = run(command(script), "PostToolUse", data, ctx(tmp_path))
    assert isinstance(result, HookReply) and not result.block
    line = json.loads((tmp_path / ".claude" / "tool-log.jsonl").read_text().strip())
    assert line == {
        "tool": "Bash",
        "input": {"command": "echo hi"},
        "response": {"stdout": "hi\n", "stderr": "", "exit_code": 0, "interrupted": False},
        "id": "toolu_9",
        "session": "s-1",
    }


def test_doc_scripts_are_byte_identical_to_the_shipped_copies(tmp_path: Path) -> None:
    relative = install_doc_script(tmp_path, "block-rm.sh")
    assert (tmp_path / relative).read_bytes() == (SCRIPTS_DIR / "block-rm.sh").read_bytes()


# ---- command: process handling -------------------------------------------------------------------------------


def test_exec_form_gets_no_shell_cwd_env_and_no_tty(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "probe.py",
        "#!/usr/bin/env python3\n"
        "import json, os, sys\n"
        "data = json.load(sys.stdin)\n"
        "try:\n    os.open('/dev/tty', os.O_RDWR); tty = True\nexcept OSError:\n    tty = False\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'additionalContext': json.dumps({"
        "'argv': sys.argv[1:], 'cwd': os.getcwd(), 'tty': tty, 'event': data['hook_event_name'],"
        "'b': os.environ['BEARAGENT_PROJECT_DIR'], 'c': os.environ['CLAUDE_PROJECT_DIR']})}}))\n",
    )
    spec = command("probe.py", args=["$HOME", "a b", "$CLAUDE_PROJECT_DIR/x"])
    spec = spec.model_copy(update={"command": "./probe.py"})
    result = run(spec, "PreToolUse", bash_input(tmp_path, "ls"), ctx(tmp_path))
    assert isinstance(result, HookReply) and result.additional_context is not None
    seen = json.loads(result.additional_context)
    assert seen["argv"] == ["$HOME", "a b", f"{tmp_path}/x"]  # no shell: $HOME stays literal
    assert seen["cwd"] == str(tmp_path) and seen["tty"] is False and seen["event"] == "PreToolUse"
    assert seen["b"] == seen["c"] == str(tmp_path)


def test_shell_form_runs_under_sh(tmp_path: Path) -> None:
    spec = command('echo "$CLAUDE_PROJECT_DIR" | tr a-z A-Z >&2; exit 2')
    result = run(spec, "PreToolUse", bash_input(tmp_path, "ls"), ctx(tmp_path))
    assert isinstance(result, HookReply) and result.block and result.block_reason == str(tmp_path).upper()


def test_shell_form_is_bash_so_a_script_without_a_shebang_line_runs_under_bash(tmp_path: Path) -> None:
    # Anthropic's plugins start hooks through `run-hook.cmd NAME.sh`: no `#!` line (it is also a cmd.exe batch file),
    # so the calling shell runs it, and its `${@:2}` is bash only (dash: "Bad substitution", exit 2)
    wrapper = tmp_path / "run-hook.cmd"
    wrapper.write_text(':; HERE="$(cd "$(dirname "$0")" && pwd)"\n:; exec bash "$HERE/$1" "${@:2}"\n')
    wrapper.chmod(0o755)
    write_script(tmp_path, "start.sh", '#!/bin/sh\necho "context from $1"\n')
    spec = command(f"{shlex.quote(str(wrapper))} start.sh hello")
    data = hook_input(tmp_path, "SessionStart", {"source": "startup"})
    result = run(spec, "SessionStart", data, ctx(tmp_path))
    assert isinstance(result, HookReply), result
    assert result.additional_context == "context from hello"


@pytest.mark.slow
def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    spec = command(f"sleep 30 & echo $! > {marker}; wait", timeout_s=0.5)
    started = time.monotonic()
    result = run(spec, "PreToolUse", bash_input(tmp_path, "ls"), ctx(tmp_path))
    assert time.monotonic() - started < 30  # the timeout, not the sleep's end, ended it
    assert (
        isinstance(result, HandlerFailure) and result.kind == "timeout" and "process group was killed" in result.message
    )
    child = int(marker.read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the hook's background child survived the timeout")


def test_background_child_holding_the_pipes_does_not_hang_the_hook(tmp_path: Path) -> None:
    spec = command("sleep 30 & echo '{}'", timeout_s=20)
    started = time.monotonic()
    result = run(spec, "PreToolUse", bash_input(tmp_path, "ls"), ctx(tmp_path))
    assert time.monotonic() - started < 20  # the hook's own exit ended it: neither its timeout nor the child
    assert isinstance(result, HookReply)


def test_missing_executable_at_run_time(tmp_path: Path) -> None:
    result = run(command("./nope.sh", args=[]), "PreToolUse", bash_input(tmp_path, "ls"), ctx(tmp_path))
    assert isinstance(result, HandlerFailure) and result.kind == "missing_executable" and "nope.sh" in result.message
    write_script(tmp_path, "noexec.sh", "#!/bin/sh\nexit 0\n").chmod(0o644)
    result = run(command("./noexec.sh", args=[]), "PreToolUse", bash_input(tmp_path, "ls"), ctx(tmp_path))
    assert isinstance(result, HandlerFailure) and "not executable" in result.message
    shell = run(command("./nope.sh"), "PreToolUse", bash_input(tmp_path, "ls"), ctx(tmp_path))
    assert isinstance(shell, HandlerFailure) and shell.kind == "missing_executable"


def test_huge_output_is_bounded(tmp_path: Path) -> None:
    spec = command("head -c 5000000 /dev/zero | tr '\\0' 'x'")
    result = run(spec, "UserPromptSubmit", hook_input(tmp_path, "UserPromptSubmit", {"prompt": "p"}), ctx(tmp_path))
    assert isinstance(result, HookReply) and result.additional_context is not None
    assert len(result.additional_context) <= 10_000


# ---- http ----------------------------------------------------------------------------------------------------


def test_http_handler_posts_the_json_with_expanded_headers(tmp_path: Path) -> None:
    with hook_server() as server:
        server.body = json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "ask",
                    "permissionDecisionReason": "r",
                }
            }
        )
        spec = HookHandlerSpec(
            type="http",
            url=f"{server.url}/hook?token=${{HOOK_TOKEN}}",
            headers={"Authorization": "Bearer ${HOOK_TOKEN}"},
        )
        context = RunnerContext(workspace_root=tmp_path, env={"HOOK_TOKEN": "s3cret"})
        result = run(spec, "PreToolUse", bash_input(tmp_path, "ls"), context)
        assert isinstance(result, HookReply) and result.permission == "ask"
        path, headers, body = server.received[0]
        assert path == "/hook?token=s3cret" and headers["authorization"] == "Bearer s3cret"
        assert (
            isinstance(body, dict)
            and body["tool_input"] == {"command": "ls"}
            and body["hook_event_name"] == "PreToolUse"
        )


def test_http_empty_2xx_is_success_and_errors_are_failures(tmp_path: Path) -> None:
    with hook_server() as server:
        spec = HookHandlerSpec(type="http", url=f"{server.url}/h?key=abc")
        context = RunnerContext(workspace_root=tmp_path, env={})
        server.body = ""
        assert run(spec, "PreToolUse", bash_input(tmp_path, "ls"), context) == HookReply()
        server.status = 500
        failure = run(spec, "PreToolUse", bash_input(tmp_path, "ls"), context)
        assert isinstance(failure, HandlerFailure) and failure.kind == "http_status" and "HTTP 500" in failure.message
        assert "key=abc" not in failure.message
        server.status, server.body = 200, "ok!"
        failure = run(spec, "PreToolUse", bash_input(tmp_path, "ls"), context)
        assert isinstance(failure, HandlerFailure) and failure.kind == "bad_output"


def test_http_missing_variable_and_unreachable_server(tmp_path: Path) -> None:
    spec = HookHandlerSpec(type="http", url="http://127.0.0.1:9/h", headers={"X-Key": "${MISSING_HOOK_KEY}"})
    failure = run(spec, "PreToolUse", bash_input(tmp_path, "ls"), RunnerContext(workspace_root=tmp_path, env={}))
    assert isinstance(failure, HandlerFailure) and "MISSING_HOOK_KEY is not set" in failure.message
    spec = HookHandlerSpec(type="http", url="http://127.0.0.1:9/h", timeout_s=2)
    failure = run(spec, "PreToolUse", bash_input(tmp_path, "ls"), RunnerContext(workspace_root=tmp_path, env={}))
    assert isinstance(failure, HandlerFailure) and "POST http://127.0.0.1:9/h failed" in failure.message


# ---- prompt / agent ------------------------------------------------------------------------------------------


class StrictJudge:
    """A real (tiny) judge: refuses any Bash command mentioning `prod`, records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str | None]] = []

    async def __call__(self, prompt: str, target: str | None) -> str:
        self.asked.append((prompt, target))
        if '"prod' in prompt or "prod" in prompt.split("Answer with")[0].split("$ARGUMENTS")[-1]:
            return '{"ok": false, "reason": "touches production"}'
        return '{"ok": true, "reason": "fine"}'


def test_prompt_handler_uses_the_judge(tmp_path: Path) -> None:
    judge = StrictJudge()
    spec = HookHandlerSpec(type="prompt", prompt="Is this safe? $ARGUMENTS", model="fast")
    context = RunnerContext(workspace_root=tmp_path, env={}, judge=judge)
    blocked = run(spec, "PreToolUse", bash_input(tmp_path, "deploy prod"), context)
    assert isinstance(blocked, HookReply) and blocked.block and blocked.block_reason == "touches production"
    allowed = run(spec, "PreToolUse", bash_input(tmp_path, "ls"), context)
    assert isinstance(allowed, HookReply) and not allowed.block
    prompt, model = judge.asked[0]
    assert model == "fast" and prompt.startswith("Is this safe? {") and '"command": "deploy prod"' in prompt


def test_agent_handler_and_missing_judge(tmp_path: Path) -> None:
    async def reviewer(prompt: str, agent: str | None) -> str:
        return json.dumps({"ok": agent == "explore", "reason": f"reviewed by {agent}"})

    spec = HookHandlerSpec(type="agent", agent="explore", prompt="Check $ARGUMENTS")
    result = run(
        spec,
        "Stop",
        hook_input(tmp_path, "Stop", {}),
        RunnerContext(workspace_root=tmp_path, env={}, agent_judge=reviewer),
    )
    assert isinstance(result, HookReply) and not result.block
    missing = run(spec, "Stop", hook_input(tmp_path, "Stop", {}), RunnerContext(workspace_root=tmp_path, env={}))
    assert isinstance(missing, HandlerFailure) and "no subagent is available" in missing.message


def test_judge_that_hangs_times_out(tmp_path: Path) -> None:
    async def slow(prompt: str, model: str | None) -> str:
        await asyncio.sleep(30)
        return '{"ok": true}'

    spec = HookHandlerSpec(type="prompt", prompt="x", timeout_s=0.2)
    result = run(
        spec, "Stop", hook_input(tmp_path, "Stop", {}), RunnerContext(workspace_root=tmp_path, env={}, judge=slow)
    )
    assert isinstance(result, HandlerFailure) and result.kind == "timeout"


def test_judge_prompt_appends_arguments_when_absent() -> None:
    text = judge_prompt("Review the change.", {"prompt": "hi"})
    assert text.startswith("Review the change.\n\n{") and '"ok": false' in text


# ---- python --------------------------------------------------------------------------------------------------


def test_python_handlers_sync_async_none_and_errors(tmp_path: Path) -> None:
    def deny_rm(data: JsonDict) -> JsonDict | None:
        tool_input = data["tool_input"]
        if isinstance(tool_input, dict) and "rm" in str(tool_input.get("command")):
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "rm",
                }
            }
        return None

    async def add_context(data: JsonDict) -> JsonDict:
        return {"hookSpecificOutput": {"additionalContext": f"run {data['run_id']}"}}

    def crash(data: JsonDict) -> JsonDict:
        raise RuntimeError("plugin bug")

    def bad(data: JsonDict) -> JsonDict:
        return {"continue": "maybe"}

    handlers = {"p:deny": deny_rm, "p:ctx": add_context, "p:crash": crash, "p:bad": bad}
    context = RunnerContext(workspace_root=tmp_path, env={}, python_handlers=handlers)

    def spec(name: str) -> HookHandlerSpec:
        return HookHandlerSpec(type="python", handler=name)

    denied = run(spec("p:deny"), "PreToolUse", bash_input(tmp_path, "rm x"), context)
    assert isinstance(denied, HookReply) and denied.permission == "deny"
    assert run(spec("p:deny"), "PreToolUse", bash_input(tmp_path, "ls"), context) == HookReply()
    ctx_reply = run(spec("p:ctx"), "PreToolUse", bash_input(tmp_path, "ls"), context)
    assert isinstance(ctx_reply, HookReply) and ctx_reply.additional_context == "run r-1"
    crashed = run(spec("p:crash"), "PreToolUse", bash_input(tmp_path, "ls"), context)
    assert (
        isinstance(crashed, HandlerFailure)
        and crashed.kind == "crashed"
        and "RuntimeError: plugin bug" in crashed.message
    )
    broken = run(spec("p:bad"), "PreToolUse", bash_input(tmp_path, "ls"), context)
    assert isinstance(broken, HandlerFailure) and broken.kind == "bad_output" and "continue" in broken.message
    unknown = run(spec("p:nope"), "PreToolUse", bash_input(tmp_path, "ls"), context)
    assert isinstance(unknown, HandlerFailure) and "no Python hook handler named 'p:nope'" in unknown.message
    assert "p:crash" in unknown.message  # lists the known ones
