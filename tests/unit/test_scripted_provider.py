"""The scripted provider: a multi-turn conversation with tool calls, usage, failures, and clear script errors."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import DeterministicIdGenerator
from bearagent.domain.messages import Message, ToolCallPart, ToolResultPart
from bearagent.domain.models import ModelCompleted, ModelEvent, ModelRequest, ModelToolCall, TextDelta
from bearagent.providers.errors import ProviderStreamError
from bearagent.providers.scripted import ScriptedProvider, ScriptError, load_script, parse_script, split_deltas

CONVERSATION = """\
turns:
  - text: "Reading the file."
    tool_calls:
      - {name: Read, arguments: {file_path: docs/project.md}}
      - {name: Grep, arguments: {pattern: bear}, id: call_custom}
  - tool_calls: [{name: Write, arguments: {file_path: outputs/intro.md, content: "BearAgent is local-first.\\n"}}]
  - text: "Wrote outputs/intro.md."
    usage: {input_tokens: 180, output_tokens: 12}
"""


def _run(provider: ScriptedProvider, request: ModelRequest) -> list[ModelEvent]:
    async def main() -> list[ModelEvent]:
        return [event async for event in provider.stream(request)]

    return asyncio.run(main())


def _request(*messages: Message) -> ModelRequest:
    return ModelRequest(model="scripted-model", messages=messages or (Message.user("Write an intro."),))


def test_a_multi_turn_conversation_with_tool_calls(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(CONVERSATION, encoding="utf-8")
    provider = ScriptedProvider.from_file(script, entry_ref="workspace/demo", ids=DeterministicIdGenerator())
    history = [Message.user("Write an intro.")]

    first = _run(provider, _request(*history))
    deltas = [e for e in first if isinstance(e, TextDelta)]
    assert len(deltas) >= 3  # streamed as several deltas
    assert "".join(d.text for d in deltas) == "Reading the file."
    calls = [e for e in first if isinstance(e, ModelToolCall)]
    assert [(c.name, dict(c.arguments), c.provider_call_id) for c in calls] == [
        ("Read", {"file_path": "docs/project.md"}, "call_scripted_1_1"),
        ("Grep", {"pattern": "bear"}, "call_custom"),
    ]
    done = first[-1]
    assert isinstance(done, ModelCompleted) and done.stop_reason == "tool_use"
    assert done.usage.input_tokens == 4 and done.usage.output_tokens >= 1  # ceil(len("Write an intro.") / 4)
    assert done.provider_request_id == "scripted-1"

    parts = tuple(
        ToolCallPart(
            tool_call_id=c.tool_call_id, provider_call_id=c.provider_call_id, name=c.name, arguments=c.arguments
        )
        for c in calls
    )
    history.append(Message.assistant("Reading the file.", parts))
    for call in calls:
        history.append(Message.tool(ToolResultPart(tool_call_id=call.tool_call_id, name=call.name, content="ok")))
    second = _run(provider, _request(*history))
    assert [e.name for e in second if isinstance(e, ModelToolCall)] == ["Write"]
    write = next(e for e in second if isinstance(e, ModelToolCall))
    assert write.arguments["content"] == "BearAgent is local-first.\n"

    third = _run(provider, _request(*history))
    assert "".join(e.text for e in third if isinstance(e, TextDelta)) == "Wrote outputs/intro.md."
    final = third[-1]
    assert isinstance(final, ModelCompleted)
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (180, 12)
    assert provider.turns_left == 0

    with pytest.raises(BearAgentError) as caught:
        _run(provider, _request(*history))
    message = str(caught.value)
    assert str(script) in message and "holds 3 turns" in message and "model call 4" in message
    assert caught.value.info.code == "configuration.script_exhausted"


def test_default_usage_is_deterministic() -> None:
    script = parse_script("turns: [{text: hello world}]", Path("s.yaml"))
    a = _run(ScriptedProvider(script), _request())[-1]
    b = _run(ScriptedProvider(script), _request())[-1]
    assert isinstance(a, ModelCompleted) and isinstance(b, ModelCompleted)
    assert a.usage == b.usage
    assert a.usage.output_tokens == 3  # ceil(11 / 4)


def test_an_error_turn_fails_after_its_text_and_the_next_call_moves_on() -> None:
    script = parse_script(
        """
turns:
  - text: "partial answer"
    error: {category: rate_limit, message: "slow down", retry_after_s: 0.5}
  - error: {category: max_output_tokens, message: "cut"}
  - text: "recovered"
    delay_ms: 5
  - refusal: "I can't help with that."
""",
        Path("retry.yaml"),
    )
    provider = ScriptedProvider(script)
    events: list[ModelEvent] = []

    async def first() -> None:
        async for event in provider.stream(_request()):
            events.append(event)

    with pytest.raises(ProviderStreamError) as caught:
        asyncio.run(first())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "partial answer"
    info = caught.value.info
    assert (info.category, info.code, info.retryable, info.retry_after_s) == (
        "rate_limit",
        "rate_limit.scripted",
        True,
        0.5,
    )
    assert caught.value.partial_text == "partial answer"
    with pytest.raises(ProviderStreamError) as second:
        _run(provider, _request())
    assert second.value.info.category == "max_output_tokens" and not second.value.info.retryable
    third = _run(provider, _request())
    assert "".join(e.text for e in third if isinstance(e, TextDelta)) == "recovered"
    refusal = _run(provider, _request())[-1]
    assert isinstance(refusal, ModelCompleted)
    assert refusal.stop_reason == "refusal" and refusal.refusal == "I can't help with that."


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("turns:\n  - text: [unclosed\n", 3, "not valid YAML"),
        ("turns:\n  - txt: hello\n", 2, "unknown key `txt`"),
        ("turns:\n  - text: ok\n  - tool_calls:\n      - {name: Read, arguments: [1, 2]}\n", 4, "JSON object"),
        ("turns:\n  - tool_calls:\n      - {arguments: {}}\n", 3, "has no `name`"),
        ("turns:\n  - error: {category: flaky, message: x}\n", 2, "unknown error category `flaky`"),
        ("turns: []\n", 1, "non-empty list"),
        ("turns:\n  - {}\n", 2, "is empty"),
        ("other: 1\n", 1, "unknown key `other`"),
    ],
)
def test_a_broken_script_names_file_line_and_fix(text: str, line: int, needle: str) -> None:
    with pytest.raises(ScriptError) as caught:
        parse_script(text, Path("scripts/broken.yaml"))
    message = str(caught.value)
    assert f"scripts/broken.yaml, line {line}" in message
    assert needle in message
    assert caught.value.info.category == "configuration"


def test_did_you_mean_for_a_misspelt_key() -> None:
    with pytest.raises(ScriptError, match="Did you mean `tool_calls`"):
        parse_script("turns:\n  - tool_call: []\n", Path("s.yaml"))


def test_a_missing_script_file_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="script file not found"):
        load_script(tmp_path / "nope.yaml")


def test_split_deltas_round_trips() -> None:
    text = "  Hello,  world!\nSecond line.  "
    pieces = split_deltas(text)
    assert "".join(pieces) == text and len(pieces) > 2
    assert split_deltas("") == []


def test_delta_delay_ms_waits_before_each_streamed_word() -> None:
    script = parse_script('turns:\n  - text: "one two three"\n    delta_delay_ms: 30\n', Path("slow.yaml"))
    provider = ScriptedProvider(script)
    stamps: list[float] = []

    async def collect() -> None:
        async for event in provider.stream(_request()):
            if isinstance(event, TextDelta):
                stamps.append(time.monotonic())

    start = time.monotonic()
    asyncio.run(collect())
    assert len(stamps) == 3
    assert stamps[0] - start >= 0.025
    assert stamps[2] - stamps[0] >= 0.05


def test_wait_for_file_holds_the_turn_until_the_file_exists(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text('turns:\n  - text: "released"\n    wait_for_file: go\n')
    provider = ScriptedProvider.from_file(path)

    async def main() -> list[ModelEvent]:
        task = asyncio.create_task(_collect(provider))
        await asyncio.sleep(0.2)
        assert not task.done()  # held: the file does not exist yet
        (tmp_path / "go").touch()
        return await asyncio.wait_for(task, 30)  # generous: only a loaded machine would need more than a poll

    events = asyncio.run(main())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "released"


async def _collect(provider: ScriptedProvider) -> list[ModelEvent]:
    return [event async for event in provider.stream(_request())]


def test_a_held_turn_is_cancellable_and_a_timeout_fails_naming_the_file_line_and_fix(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(
        'turns:\n  - text: "a"\n    wait_for_file: never\n  - text: "b"\n    wait_for_file: never\n'
        "    wait_timeout_ms: 50\n"
    )
    provider = ScriptedProvider.from_file(path)

    async def cancelled() -> bool:
        task = asyncio.create_task(_collect(provider))
        await asyncio.sleep(0.1)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(cancelled())
    with pytest.raises(ProviderStreamError) as raised:
        _run(provider, _request())
    info = raised.value.info
    assert info.code == "configuration.script_wait_timeout" and not info.retryable
    assert str(tmp_path / "never") in info.message and "line 4" in info.message and "wait_timeout_ms" in info.message


@pytest.mark.parametrize(
    ("turn", "complaint"),
    [
        ('    wait_for_file: ""\n', "line 3: turns[0].wait_for_file is empty"),
        ("    wait_timeout_ms: 10\n", "line 3: turns[0].wait_timeout_ms must come with `wait_for_file`"),
        ("    wait_for_file: go\n    wait_timeout_ms: 600001\n", "line 4: turns[0].wait_timeout_ms must come with"),
    ],
)
def test_bad_wait_keys_fail_at_load_with_the_line(turn: str, complaint: str) -> None:
    with pytest.raises(ScriptError) as raised:
        parse_script(f'turns:\n  - text: "x"\n{turn}', Path("w.yaml"))
    assert complaint in raised.value.info.message and "w.yaml, line " in raised.value.info.message


def test_request_conversation_calls_places_it_in_the_script(tmp_path: Path) -> None:
    """A fresh instance told the conversation's place by the request (a later run of a session in a new process)
    answers with the turn after the calls the log counts; later calls of the run go on from there."""
    provider = ScriptedProvider(parse_script(CONVERSATION, tmp_path / "script.yaml"), ids=DeterministicIdGenerator())
    told = _request().model_copy(update={"conversation_calls": 1})
    events = _run(provider, told)
    assert isinstance(events[0], ModelToolCall) and events[0].name == "Write"
    assert provider.turns_used == 2
    events = _run(provider, _request())  # not told again: the next turn
    assert [e.text for e in events if isinstance(e, TextDelta)] and provider.turns_used == 3
    past_end = _request().model_copy(update={"conversation_calls": 99})
    with pytest.raises(ProviderStreamError, match="ran out of turns"):
        _run(provider, past_end)


def test_a_script_read_again_unchanged_is_not_parsed_again_and_an_edit_is(tmp_path: Path) -> None:
    """A server builds a provider per session: the second read of the same text reuses the parsed script, each
    provider still keeps its own position, and an edited file is parsed again (so is a broken one, every time)."""
    path = tmp_path / "script.yaml"
    path.write_text('turns:\n  - text: "one"\n  - text: "two"\n')
    first, second = ScriptedProvider.from_file(path), ScriptedProvider.from_file(path)
    assert first.script is second.script
    _run(first, _request())
    assert (first.turns_left, second.turns_left) == (1, 2)
    path.write_text('turns:\n  - text: "edited"\n')
    edited = load_script(path)
    assert edited is not first.script and edited.turns[0].text == "edited"
    path.write_text("turns: [\n")
    for _ in range(2):
        with pytest.raises(ScriptError, match="not valid YAML"):
            load_script(path)
