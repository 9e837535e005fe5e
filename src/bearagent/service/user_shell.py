"""`!cmd` in the interactive session (Claude Code's bash mode): the user's shell command, run as a run of the
session whose one tool call is `Bash{command}`.

The run goes through the loop like any other, so the command meets everything a model's Bash call meets: the
agent's tool grant (an agent without Bash cannot run it), the permission rules and mode (an `ask` is asked), the
hooks (PreToolUse sees it), the sandbox, and the log (ToolCallRequested, the result, as facts of the run). Only the
model is replaced, by `UserShellProvider`, which "answers" the first call with that tool call and the second with a
short line saying the user ran it; both calls are recorded with the model `user-shell` and no tokens. So the
command and its output are in the session's history, and the next prompt's model sees them as Claude Code's model
sees a `!` command's output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

from bearagent.domain.budgets import TokenUsage
from bearagent.domain.ids import IdGenerator, ToolCallId, Uuid4IdGenerator
from bearagent.domain.models import ModelCompleted, ModelEvent, ModelRequest, ModelToolCall, text_deltas
from bearagent.runtime.plan import AgentPlan

USER_SHELL_MODEL = "user-shell"
MAX_SHELL_COMMAND_CHARS = 10_000


class UserShellProvider:
    """The stand-in model of a `!cmd` run: first the `Bash` call, then a one-line answer; no tokens."""

    def __init__(self, command: str, ids: IdGenerator | None = None) -> None:
        self.command = command
        self._ids = ids or Uuid4IdGenerator()
        self._calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self._calls += 1
        if self._calls == 1:
            yield ModelToolCall.from_model(
                self._ids.new(ToolCallId),
                "call_user_shell_1",
                "Bash",
                {"command": self.command, "description": "the user's ! command"},
            )
            yield ModelCompleted(
                provider_request_id="user-shell-1", model=USER_SHELL_MODEL, stop_reason="tool_use", usage=TokenUsage()
            )
            return
        for delta in text_deltas(f"(the user ran `{self.command}` with `!`; its output is above)"):
            yield delta
        yield ModelCompleted(
            provider_request_id=f"user-shell-{self._calls}",
            model=USER_SHELL_MODEL,
            stop_reason="end_turn",
            usage=TokenUsage(),
        )


def user_shell_plan(plan: AgentPlan, command: str) -> AgentPlan:
    """`plan` with its model replaced by `UserShellProvider` for `command` (never compacted: no summary call)."""
    return dataclasses.replace(
        plan,
        provider=UserShellProvider(command),
        model_ref=USER_SHELL_MODEL,
        model_name=USER_SHELL_MODEL,
        price=None,
        compaction=None,
        max_output_continuations=0,
    )
