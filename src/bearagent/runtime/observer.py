"""What the loop tells live consumers while a run goes on (tokens are streamed here, never stored one by one)."""

from __future__ import annotations

from typing import Protocol

from bearagent.domain._base import JsonMapping
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import RunId


class RunObserver(Protocol):
    def run_started(self, run_id: RunId, agent: str) -> None: ...

    def step(self, run_id: RunId, index: int, kind: str) -> None: ...

    def token(self, run_id: RunId, text: str) -> None: ...

    def tool_call(self, run_id: RunId, call_id: str, name: str, arguments: JsonMapping) -> None: ...

    def tool_result(self, run_id: RunId, call_id: str, name: str, result: str, is_error: bool) -> None: ...

    def final(self, run_id: RunId, content: str) -> None: ...

    def run_succeeded(self, run_id: RunId, steps: int) -> None: ...

    def run_failed(self, run_id: RunId, error: ErrorInfo) -> None: ...

    def agent_switched(self, run_id: RunId, from_agent: str, to_agent: str) -> None: ...

    def subagent_started(self, run_id: RunId, parent_run_id: RunId, agent: str) -> None: ...

    def subagent_finished(self, run_id: RunId, parent_run_id: RunId, agent: str, status: str) -> None: ...

    def notice(self, run_id: RunId, text: str) -> None:
        """Something the user should see that is not model output (a retry, a hook's systemMessage)."""
        ...


class NullObserver:
    """Observes nothing: for runs nobody watches live (tests, child runs without a UI)."""

    def run_started(self, run_id: RunId, agent: str) -> None:
        return None

    def step(self, run_id: RunId, index: int, kind: str) -> None:
        return None

    def token(self, run_id: RunId, text: str) -> None:
        return None

    def tool_call(self, run_id: RunId, call_id: str, name: str, arguments: JsonMapping) -> None:
        return None

    def tool_result(self, run_id: RunId, call_id: str, name: str, result: str, is_error: bool) -> None:
        return None

    def final(self, run_id: RunId, content: str) -> None:
        return None

    def run_succeeded(self, run_id: RunId, steps: int) -> None:
        return None

    def run_failed(self, run_id: RunId, error: ErrorInfo) -> None:
        return None

    def agent_switched(self, run_id: RunId, from_agent: str, to_agent: str) -> None:
        return None

    def subagent_started(self, run_id: RunId, parent_run_id: RunId, agent: str) -> None:
        return None

    def subagent_finished(self, run_id: RunId, parent_run_id: RunId, agent: str, status: str) -> None:
        return None

    def notice(self, run_id: RunId, text: str) -> None:
        return None


class ChildRunObserver(NullObserver):
    """What a child run (a subagent, an action tool) shows on its parent's observer: its tool calls and results, its
    own subagents and notices, under the child's run id (the renderer nests them under the `Task`); its text is not
    shown live, it comes back as the Task's result."""

    def __init__(self, parent: RunObserver) -> None:
        self._parent = parent

    def tool_call(self, run_id: RunId, call_id: str, name: str, arguments: JsonMapping) -> None:
        self._parent.tool_call(run_id, call_id, name, arguments)

    def tool_result(self, run_id: RunId, call_id: str, name: str, result: str, is_error: bool) -> None:
        self._parent.tool_result(run_id, call_id, name, result, is_error)

    def subagent_started(self, run_id: RunId, parent_run_id: RunId, agent: str) -> None:
        self._parent.subagent_started(run_id, parent_run_id, agent)

    def subagent_finished(self, run_id: RunId, parent_run_id: RunId, agent: str, status: str) -> None:
        self._parent.subagent_finished(run_id, parent_run_id, agent, status)

    def notice(self, run_id: RunId, text: str) -> None:
        self._parent.notice(run_id, text)
