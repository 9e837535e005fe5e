"""The session's conversation with its rewinds applied (`runtime/session_history.py`): a rewind sets it back to a
point before itself, a rewind to before a rewind brings back what it replaced, a rewind naming no earlier point of
the session changes nothing, and `through` / `before` name the points a fork and a rewind start from."""

from __future__ import annotations

from tests.support.events import EventFactory

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.messages import Message, TextPart
from bearagent.domain.run_events import ConversationRewoundV1, RunCreatedV2, RunStartedV1, RunSucceededV1
from bearagent.runtime.session_history import Timeline

HASH = "0" * 64


def run(goal: str, *rewinds: ConversationRewoundV1) -> tuple[RunId, list[Event]]:
    f = EventFactory(RunId.new())  # each run its own id
    events = [
        f.event(RunCreatedV2(budget_limits=BudgetLimits(), goal=goal, agent_name="main", prompt_hash=HASH)),
        f.event(RunStartedV1()),
        f.event(RunSucceededV1()),
        *(f.event(r) for r in rewinds),
    ]
    return f.run_id, events


def texts(messages: list[Message] | None) -> list[str]:
    assert messages is not None
    return [m.text for m in messages]


def test_a_rewind_sets_the_conversation_back_and_a_rewind_of_it_brings_it_back() -> None:
    one, two = run("one"), run("two")
    three = run("three", ConversationRewoundV1(to_run_id=two[0]))
    assert texts(Timeline([one, two, three]).end) == ["one"]
    # a fourth run starts from the rewound conversation
    four = run("four")
    assert texts(Timeline([one, two, three, four]).end) == ["one", "four"]
    # a rewind (recorded in run five, once it ended) to before the first rewind's fact (event 4 of run three): the
    # conversation up to that fact returns, runs four and five are left out
    undo = run("five", ConversationRewoundV1(to_run_id=three[0], to_sequence=4))
    timeline = Timeline([one, two, three, four, undo])
    assert texts(timeline.end) == ["one", "two", "three"]
    assert texts(timeline.before(four[0])) == ["one"]
    assert texts(timeline.through(three[0])) == ["one"]  # run three with its rewind
    assert texts(timeline.through(three[0], 3)) == ["one", "two", "three"]  # before its rewind


def test_a_rewind_to_a_point_not_before_it_changes_nothing() -> None:
    one = run("one")
    later = run("later")
    # names a run that is not (yet) in the session's timeline, then a point after itself: both ignored
    two = run("two", ConversationRewoundV1(to_run_id=later[0]), ConversationRewoundV1(to_run_id=RunId.new()))
    same = run("same", ConversationRewoundV1(to_run_id=one[0], to_sequence=3))
    timeline = Timeline([one, two, same])
    assert texts(timeline.end) == ["one"]  # the last one: before event 3 of run one (its goal only)
    assert texts(Timeline([one, two]).end) == ["one", "two"]
    assert RunId.new() not in timeline and one[0] in timeline
    assert timeline.before(RunId.new()) is None and timeline.through(RunId.new()) is None


def test_a_fork_base_comes_first() -> None:
    base = [Message(role="user", parts=(TextPart(text="from the origin"),))]
    one = run("one", ConversationRewoundV1(to_run_id=RunId.new()))
    timeline = Timeline([one], base)
    assert texts(timeline.end) == ["from the origin", "one"]
    assert texts(timeline.before(one[0])) == ["from the origin"]


def test_the_messages_follow_the_rewinds_and_the_fork_origin() -> None:
    one, two = run("one"), run("two")
    three = run("three", ConversationRewoundV1(to_run_id=two[0]))
    timeline = Timeline([one, two, three])
    assert [(m.run_id, m.message.text, m.number) for m in timeline.messages] == [(one[0], "one", 1)]
    assert [m.message.text for m in timeline.messages_through(two[0]) or []] == ["one", "two"]
    assert [m.message.text for m in timeline.messages_through(three[0], 3) or []] == ["one", "two", "three"]
    fork = Timeline([run("own")], timeline.through(two[0]) or [], timeline.messages_through(two[0]) or [])
    assert [m.message.text for m in fork.messages] == ["one", "two", "own"]
    assert fork.messages[0].run_id == one[0] and fork.messages[2].number == 1
