"""The conversation's place reaches the provider through the normal request, once: `positioned` copies
`RunSpec.conversation_calls` onto the first request to the conversation's own provider and never again, and never
onto a call to another provider (a summary model of its own)."""

from __future__ import annotations

from bearagent.domain.messages import Message
from bearagent.domain.models import ModelRequest
from bearagent.runtime.loop_state import LoopState
from bearagent.runtime.model_calls import positioned
from bearagent.runtime.plan import AgentPlan


class _Plan:
    def __init__(self, provider: object) -> None:
        self.provider = provider


def _request() -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("hi"),))


def test_first_call_to_the_conversation_provider_is_told_once() -> None:
    conversation, summary = object(), object()
    state = LoopState(plan=_Plan(conversation), conversation_calls=7, position_provider=conversation)  # pyright: ignore[reportArgumentType]
    other: AgentPlan = _Plan(summary)  # pyright: ignore[reportAssignmentType]
    own: AgentPlan = _Plan(conversation)  # pyright: ignore[reportAssignmentType]
    assert positioned(state, other, _request()).conversation_calls is None  # a summary model of its own
    assert state.conversation_calls == 7
    assert positioned(state, own, _request()).conversation_calls == 7
    assert state.conversation_calls is None
    assert positioned(state, own, _request()).conversation_calls is None  # the provider counts on from there


def test_a_new_conversation_is_told_nothing() -> None:
    conversation = object()
    state = LoopState(plan=_Plan(conversation), conversation_calls=None, position_provider=conversation)  # pyright: ignore[reportArgumentType]
    own: AgentPlan = _Plan(conversation)  # pyright: ignore[reportAssignmentType]
    request = _request()
    assert positioned(state, own, request) is request
