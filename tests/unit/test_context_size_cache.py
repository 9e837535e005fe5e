"""A request's size is estimated on every turn from the whole history: each message is rendered and counted once
while it lives (messages are frozen), so an estimate costs what the new messages cost, not the history's length."""

from __future__ import annotations

import gc

import pytest

from bearagent.domain.messages import Message
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
