"""Message role/part rules of seed 000, the two identities of a tool call, and duplicate call ids."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from pydantic import ValidationError

from bearagent.domain._base import JsonValue
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message, TextPart, ToolCallPart, ToolResultPart


def call(name: str = "Read", *, call_id: ToolCallId | None = None, provider: str | None = "call_abc") -> ToolCallPart:
    return ToolCallPart(
        tool_call_id=call_id or ToolCallId.new(), provider_call_id=provider, name=name, arguments={"path": "a.md"}
    )


def result(call_id: ToolCallId | None = None, content: str = "ok") -> ToolResultPart:
    return ToolResultPart(tool_call_id=call_id or ToolCallId.new(), name="Read", content=content)


# ---- system and user: non-empty text only ----------------------------------------------------------------------


@pytest.mark.parametrize("role", ["system", "user"])
def test_system_and_user_accept_text(role: str) -> None:
    message = Message.model_validate(
        {"role": role, "parts": [{"kind": "text", "text": "hi"}, {"kind": "text", "text": " there"}]}
    )
    assert message.text == "hi there"
    assert message.tool_calls == ()


@pytest.mark.parametrize("role", ["system", "user"])
def test_system_and_user_reject_a_tool_call(role: str) -> None:
    with pytest.raises(ValidationError, match=f"a {role} message may only contain text, got tool_call"):
        Message.model_validate({"role": role, "parts": [TextPart(text="x"), call()]})


@pytest.mark.parametrize("role", ["system", "user"])
def test_system_and_user_reject_a_tool_result(role: str) -> None:
    with pytest.raises(ValidationError, match=f"a {role} message may only contain text, got tool_result"):
        Message.model_validate({"role": role, "parts": [result()]})


@pytest.mark.parametrize("role", ["system", "user", "assistant"])
def test_text_must_not_be_empty(role: str) -> None:
    with pytest.raises(ValidationError, match="at least 1 character"):
        Message.model_validate({"role": role, "parts": [{"kind": "text", "text": ""}]})


@pytest.mark.parametrize("role", ["system", "user", "assistant", "tool"])
def test_a_message_has_at_least_one_part(role: str) -> None:
    with pytest.raises(ValidationError, match="at least 1 item"):
        Message.model_validate({"role": role, "parts": []})


def test_shorthands_build_valid_messages() -> None:
    assert Message.system("be brief").role == "system"
    assert Message.user("hello").text == "hello"
    with pytest.raises(ValidationError, match="at least 1 character"):
        Message.user("")


# ---- assistant: text and tool calls, never a tool result -------------------------------------------------------


def test_assistant_mixes_text_and_tool_calls() -> None:
    first, second = call("Read"), call("Grep", provider="call_def")
    message = Message.assistant("looking", (first, second))
    assert message.text == "looking"
    assert message.tool_calls == (first, second)


def test_assistant_may_hold_only_tool_calls() -> None:
    message = Message.assistant(tool_calls=(call(),))
    assert message.text == ""
    assert len(message.tool_calls) == 1


def test_assistant_with_nothing_is_rejected() -> None:
    with pytest.raises(ValidationError, match="at least 1 item"):
        Message.assistant()


def test_assistant_rejects_a_tool_result() -> None:
    with pytest.raises(ValidationError, match="an assistant message may not contain a tool result"):
        Message(role="assistant", parts=(TextPart(text="x"), result()))


def test_assistant_rejects_a_duplicate_tool_call_id() -> None:
    shared = ToolCallId.new()
    with pytest.raises(ValidationError, match=f"duplicate tool_call_id {shared} in one assistant message"):
        Message.assistant("x", (call("Read", call_id=shared), call("Grep", call_id=shared, provider="other")))


def test_same_provider_id_with_different_tool_call_ids_is_allowed() -> None:
    # Only BearAgent's own id must be unique; what a provider sends is its business.
    message = Message.assistant(tool_calls=(call(provider="dup"), call(provider="dup")))
    assert len(message.tool_calls) == 2


# ---- tool: exactly one tool result ---------------------------------------------------------------------------


def test_tool_message_with_one_result() -> None:
    part = result(content="file text")
    message = Message.tool(part)
    assert message.parts == (part,)
    assert message.text == ""


def test_tool_message_with_two_results_is_rejected() -> None:
    with pytest.raises(ValidationError, match="a tool message must contain exactly one tool result"):
        Message(role="tool", parts=(result(), result()))


@pytest.mark.parametrize("extra", ["text", "tool_call"])
def test_tool_message_with_anything_else_is_rejected(extra: str) -> None:
    other = TextPart(text="x") if extra == "text" else call()
    with pytest.raises(ValidationError, match="a tool message must contain exactly one tool result"):
        Message(role="tool", parts=(other,))
    with pytest.raises(ValidationError, match="a tool message must contain exactly one tool result"):
        Message(role="tool", parts=(result(), other))


def test_tool_result_content_may_be_empty_but_bounded() -> None:
    assert Message.tool(result(content="")).parts[0]
    with pytest.raises(ValidationError, match="at most 1048576 characters"):
        result(content="x" * 1_048_577)


# ---- the rest of the boundary --------------------------------------------------------------------------------


def test_unknown_role_and_part_kind_are_rejected() -> None:
    with pytest.raises(ValidationError, match="role"):
        Message.model_validate({"role": "developer", "parts": [{"kind": "text", "text": "x"}]})
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        Message.model_validate({"role": "user", "parts": [{"kind": "image", "url": "x"}]})


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Message.model_validate({"role": "user", "parts": [{"kind": "text", "text": "x"}], "name": "bob"})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Message.model_validate({"role": "user", "parts": [{"kind": "text", "text": "x", "cache": True}]})


def test_messages_are_frozen() -> None:
    message = Message.user("x")
    with pytest.raises(ValidationError, match="frozen"):
        message.role = "system"  # pyright: ignore[reportAttributeAccessIssue]


# ---- ToolCallPart: two identities kept apart -----------------------------------------------------------------


def test_tool_call_part_keeps_both_ids_apart() -> None:
    ours = ToolCallId.new()
    part = ToolCallPart(tool_call_id=ours, provider_call_id="toolu_01ABC", name="Read", arguments={})
    assert part.tool_call_id == ours
    assert type(part.tool_call_id) is ToolCallId
    assert part.provider_call_id == "toolu_01ABC"
    dumped = part.model_dump(mode="json")
    assert dumped["tool_call_id"] == str(ours)
    assert dumped["provider_call_id"] == "toolu_01ABC"
    back = ToolCallPart.model_validate_json(part.model_dump_json())
    assert back == part
    assert (back.tool_call_id, back.provider_call_id) == (ours, "toolu_01ABC")


def test_provider_call_id_is_optional_and_never_replaces_ours() -> None:
    part = ToolCallPart(tool_call_id=ToolCallId.new(), name="Read", arguments={})
    assert part.provider_call_id is None
    # A provider's id is not a UUID4: it cannot be smuggled in as BearAgent's own id.
    with pytest.raises(ValidationError, match="is not a UUID"):
        ToolCallPart.model_validate({"tool_call_id": "call_abc", "name": "Read", "arguments": {}})


def test_tool_result_part_carries_both_ids_too() -> None:
    ours = ToolCallId.new()
    part = ToolResultPart(tool_call_id=ours, provider_call_id="call_9", name="Read", content="x", is_error=True)
    back = ToolResultPart.model_validate_json(part.model_dump_json())
    assert (back.tool_call_id, back.provider_call_id, back.is_error) == (ours, "call_9", True)


def test_tool_call_arguments_are_a_frozen_copy() -> None:
    options: dict[str, JsonValue] = {"encoding": "utf-8"}
    arguments: dict[str, JsonValue] = {"path": "a.md", "options": options}
    part = ToolCallPart(tool_call_id=ToolCallId.new(), name="Read", arguments=arguments)
    options["encoding"] = "latin-1"  # the caller mutates its dict after construction...
    assert part.arguments["options"] == {"encoding": "utf-8"}  # ...the recorded fact does not change
    assert isinstance(part.arguments, MappingProxyType)
    with pytest.raises(TypeError):
        part.arguments["path"] = "b.md"  # type: ignore[index]


def test_tool_call_arguments_must_be_an_object() -> None:
    with pytest.raises(ValidationError, match="value must be a JSON object, got list"):
        ToolCallPart.model_validate({"tool_call_id": str(ToolCallId.new()), "name": "Read", "arguments": [1, 2]})


def test_conversation_round_trips_through_json() -> None:
    ours = ToolCallId.new()
    conversation = (
        Message.system("sys"),
        Message.user("read it"),
        Message.assistant("sure", (call(call_id=ours),)),
        Message.tool(result(ours, "text")),
    )
    for message in conversation:
        assert Message.model_validate_json(message.model_dump_json()) == message
