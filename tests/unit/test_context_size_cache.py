"""A request's size is estimated on every turn from the whole history: each message is rendered and counted once
while it lives (messages are frozen), so an estimate costs what the new messages cost, not the history's length."""

from __future__ import annotations

import gc

import pytest

from bearagent.domain.messages import Message
from bearagent.domain.models import ModelRequest, ToolDescriptor
from bearagent.runtime import context_size


def test_each_message_is_counted_once_and_forgotten_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[int] = []
    real = context_size._message_text  # pyright: ignore[reportPrivateUsage]

    def counting(message: Message) -> str:
        rendered.append(id(message))
        return real(message)

    monkeypatch.setattr(context_size, "_message_text", counting)
    history = [Message.user(f"turn {n} " + "x" * 500) for n in range(50)]
    first = context_size.raw_estimate(history)
    assert len(rendered) == 50
    history.append(Message.user("one more"))
    second = context_size.raw_estimate(history)
    assert len(rendered) == 51  # only the new message was rendered
    assert second > first
    assert context_size.raw_estimate(list(history)) == second  # the same messages, the same figure

    before = len(context_size._COUNTED)  # pyright: ignore[reportPrivateUsage]
    del history
    gc.collect()
    assert len(context_size._COUNTED) <= before - 51  # pyright: ignore[reportPrivateUsage]


def test_a_runs_estimates_equal_raw_estimate_as_its_history_grows_shrinks_and_changes() -> None:
    """`Calibration.estimate` keeps a running sum over the last request's messages and the tool text of the last
    tool list: it must give `raw_estimate`'s figure for a grown history, a compacted one, one changed in the middle,
    and new tools."""
    lookup = ToolDescriptor(name="lookup", description="Look up i.", input_schema={"type": "object"})
    other = ToolDescriptor(name="other", description="Another tool " * 20, input_schema={"type": "object"})
    calibration = context_size.Calibration()
    history = [Message.system("You are careful."), *(Message.user(f"turn {n} " + "y" * n) for n in range(30))]

    def check(messages: list[Message], tools: tuple[ToolDescriptor, ...]) -> None:
        request = ModelRequest(model="m", messages=tuple(messages), tools=tools)
        raw, corrected = calibration.estimate(request)
        assert raw == context_size.raw_estimate(messages, tools)
        assert corrected == calibration.apply(raw)

    tools = (lookup,)
    check(history, tools)
    history.append(Message.user("grown"))
    check(history, tools)
    check([history[0], Message.user("summary of the earlier turns"), *history[-3:]], tools)  # compacted
    history[10] = Message.user("changed in the middle " * 10)
    check(history, tools)
    check(history, (lookup, other))
    check(history, ())
    check(history[:5], (other,))
