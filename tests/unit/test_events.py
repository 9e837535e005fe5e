"""The Event envelope and the typed run event payloads: exact (type, version) lookup, fail closed otherwise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType

import pytest
from pydantic import ValidationError

from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import Event
from bearagent.domain.ids import ActivityId, ArtifactId, EventId, ModelCallId, RunId, SessionId, ToolCallId
from bearagent.domain.run_events import (
    LATEST_VERSIONS,
    RUN_EVENT_PAYLOADS,
    ModelCallCompletedV2,
    ModelCallRequestedV3,
    ModelCallRequestedV4,
    RunCreatedV1,
    RunCreatedV2,
    ToolCallRequestedV2,
    event_type_of,
    parse_run_event_payload,
    payload_type_for,
)

ACT, MC, TC, RUN, SESSION = ActivityId.new(), ModelCallId.new(), ToolCallId.new(), RunId.new(), SessionId.new()
ERROR: dict[str, JsonValue] = {"category": "tool", "code": "tool.failed", "message": "boom", "retryable": False}
TOOL_RESULT: dict[str, JsonValue] = {
    "tool_call_id": str(TC),
    "tool_name": "Read",
    "status": "succeeded",
    "content": "text",
    "artifacts": [
        {"artifact_id": str(ArtifactId.new()), "path": "out.md", "size_bytes": 3, "sha256": "a" * 64},
    ],
}
OWNER: dict[str, JsonValue] = {"host": "host-a", "boot_id": "b-1", "pid": 4242, "process_start": 1234}
MODEL: dict[str, JsonValue] = {"activity_id": str(ACT), "model_call_id": str(MC)}
TOOL: dict[str, JsonValue] = {"activity_id": str(ACT), "tool_call_id": str(TC)}

# One valid stored payload per registered (event_type, schema_version): what an old or new log may contain.
SAMPLES: dict[tuple[str, int], dict[str, JsonValue]] = {
    ("RunCreated", 1): {"session_id": str(SESSION), "budget_limits": {"max_tool_calls": 3}},
    ("RunCreated", 2): {
        "budget_limits": {},
        "goal": "summarise docs/project.md",
        "agent_name": "build",
        "prompt_hash": "0" * 64,
        "tool_spec_versions": {"Read": "1"},
        "parent_run_id": str(RUN),
        "trigger_type": "subagent",
        "depth": 1,
    },
    ("RunCreated", 3): {
        "budget_limits": {},
        "goal": "summarise docs/project.md",
        "agent_name": "build",
        "prompt_hash": "0" * 64,
        "trigger_type": "api_action",
        "trigger_ref": "summarise",
        "request": {
            "initiator_ref": "user:ada",
            "auth_context": {"subject_ref": "user:ada", "scopes": ["runs:write"]},
            "model_override": "fast",
            "allowed_tools": ["Bash(git status)"],
        },
    },
    ("RunCreated", 4): {
        "budget_limits": {},
        "goal": "summarise docs/project.md",
        "agent_name": "build",
        "prompt_hash": "0" * 64,
        "request": {"initiator_ref": "user:ada"},
        "planned": False,
    },
    ("RunStarted", 1): {},
    ("RunSucceeded", 1): {},
    ("RunSucceeded", 2): {"final_text": "done", "stop_reason": "end_turn"},
    ("RunFailed", 1): {},
    ("RunFailed", 2): {"error": ERROR, "partial_text": "half"},
    ("RunCancelled", 1): {"reason": "user pressed Ctrl-C"},
    ("ModelCallRequested", 1): MODEL,
    ("ModelCallRequested", 2): {**MODEL, "model_ref": "openai/gpt-x", "attempt": 2},
    ("ModelCallStarted", 1): MODEL,
    ("ModelCallCompleted", 1): {**MODEL, "usage": {"input_tokens": 10, "output_tokens": 2}, "cost_microusd": 7},
    ("ModelCallCompleted", 2): {
        **MODEL,
        "text": "hello",
        "tool_calls": [{"tool_call_id": str(TC), "provider_call_id": "c1", "name": "Read", "arguments": {"p": 1}}],
        "provider_request_id": "req_1",
        "stop_reason": "tool_use",
    },
    ("ModelCallFailed", 1): MODEL,
    ("ModelCallFailed", 2): {**MODEL, "error": {**ERROR, "category": "network", "code": "network.reset"}},
    ("ToolCallRequested", 1): {**TOOL, "tool_name": "Read"},
    ("ToolCallRequested", 2): {**TOOL, "tool_name": "Read", "arguments": {"path": "a"}, "source": "mcp"},
    ("ToolCallStarted", 1): TOOL,
    ("ToolCallCompleted", 1): TOOL,
    ("ToolCallCompleted", 2): {**TOOL, "result": TOOL_RESULT},
    ("ToolCallFailed", 1): TOOL,
    ("ToolCallFailed", 2): {**TOOL, "result": {**TOOL_RESULT, "status": "failed", "error": ERROR, "artifacts": []}},
    ("AgentSwitched", 1): {"from_agent": "plan", "to_agent": "build", "switch_count": 1},
    ("HookExecuted", 1): {
        "hook_event": "PreToolUse",
        "handler": "scripts/check.sh",
        "handler_type": "command",
        "duration_ms": 12,
        "decision": "deny",
        "output": {"reason": "no"},
    },
    ("TodosUpdated", 1): {"todos": [{"text": "write tests", "done": False}]},
    ("ChildRunStarted", 1): {"child_run_id": str(RUN), "agent_name": "explore", "tool_call_id": str(TC)},
    ("ChildRunFinished", 1): {"child_run_id": str(RUN), "status": "succeeded"},
    ("MessageInjected", 1): {"kind": "stop_feedback", "text": "Stop hook feedback: run the tests"},
    ("MessageInjected", 2): {"kind": "continuation", "text": "Continue exactly where it stopped."},
    ("ModelCallRequested", 3): {
        **MODEL,
        "model_ref": "workspace/summariser",
        "purpose": "compaction",
        "estimated_input_tokens": 1_234,
        "estimator": "chars/3.5 ×0.91",
        "context_window": 8_192,
        "context_window_source": "server",
    },
    ("ModelCallRequested", 4): {
        **MODEL,
        "model_ref": "workspace/local",
        "estimated_input_tokens": 512,
        "estimator": "tiktoken:o200k_base",
        "provider": "openai-compatible",
    },
    ("ContextCompacted", 1): {
        **MODEL,
        "usage": {"input_tokens": 900, "output_tokens": 80},
        "summary": "The user asked for the release date; docs/project.md says 2026-03-01.",
        "replaced_messages": 6,
        "kept_messages": 3,
        "tokens_before": 7_000,
        "tokens_after": 1_100,
        "trigger": "threshold",
        "model_ref": "workspace/summariser",
    },
    ("FilesChanged", 1): {
        "tool_call_id": str(TC),
        "tool_name": "Bash",
        "changes": [
            {"path": "a.txt", "before": {"kind": "file", "mode": 0o644, "size": 3, "sha256": "a" * 64}, "after": None},
            {"path": "link", "after": {"kind": "symlink", "mode": 0o777, "target": "a.txt"}},
            {"path": "big.bin", "after": {"kind": "file", "mode": 0o600, "sha256": "b" * 64, "restorable": False}},
        ],
    },
    ("FilesRewound", 1): {
        "changes": [{"path": "a.txt", "before": None, "after": {"kind": "file", "mode": 0o644, "sha256": "a" * 64}}],
        "forced": ["a.txt"],
    },
    ("ConversationRewound", 1): {"to_run_id": str(RUN), "to_sequence": 3, "to_tool_call_id": str(TC)},
    ("ChildRunFinished", 2): {
        "child_run_id": str(RUN),
        "status": "succeeded",
        "usage": {"model_iterations": 2, "tool_calls": 1, "input_tokens": 30, "output_tokens": 5, "cost_microusd": 7},
    },
    ("RunStarted", 2): {"owner": OWNER},
    ("RunStarted", 3): {
        "owner": OWNER,
        "plan": {"prompt_hash": "a" * 64, "tool_spec_versions": {"Read": "1"}, "model_ref": "workspace/fast"},
    },
    ("RunInterrupted", 1): {
        "reason": "its process (pid 4242 on host-a) is gone",
        "owner": OWNER,
        "last_seen_at": "2026-03-01T12:00:05Z",
        "in_flight": {"activity_id": str(ACT), "kind": "tool_call", "name": "Bash", "tool_call_id": str(TC)},
    },
    ("RunResumed", 1): {"owner": OWNER, "reason": "interrupted", "changes": ["agent build: its prompt changed"]},
    ("ToolCallAbandoned", 1): {
        "tool_call_id": str(TC),
        "tool_name": "Bash",
        "side_effect": "execute",
        "message": "interrupted; the outcome is unknown: check before you redo it",
    },
    ("ApprovalRequested", 1): {
        **TOOL,
        "approval_id": "ap_1",
        "tool_name": "Bash",
        "arguments": {"command": "rm -rf build"},
        "reason": "Bash asks for approval in default mode",
        "suggested_rule": "Bash(rm -rf build)",
    },
    ("ApprovalResolved", 1): {"approval_id": "ap_1", "decision": "allow_once", "answered_by": "cli:alice"},
    ("ElicitationRequested", 1): {
        "elicitation_id": "el_1",
        "server": "asker",
        "message": "Really deploy to prod?",
        "requested_schema": {"type": "object", "properties": {"proceed": {"type": "boolean"}}},
    },
    ("ElicitationResolved", 1): {
        "elicitation_id": "el_1",
        "action": "accept",
        "content": {"proceed": True},
        "answered_by": "alice",
        "waited_ms": 1200,
    },
}


def envelope(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "event_id": str(EventId.new()),
        "run_id": str(RUN),
        "sequence": 1,
        "event_type": "RunStarted",
        "schema_version": 1,
        "occurred_at": "2026-03-01T12:00:00+00:00",
        "payload": {},
    }
    base.update(overrides)
    return base


# ---- envelope ------------------------------------------------------------------------------------------------


def test_envelope_round_trips_through_json() -> None:
    event = Event.model_validate(envelope(payload={"a": [1, {"b": None}]}, causation_id=str(EventId.new())))
    back = Event.model_validate_json(event.model_dump_json())
    assert back == event
    assert back.model_dump(mode="json")["payload"] == {"a": [1, {"b": None}]}


def test_occurred_at_is_normalised_to_utc() -> None:
    plus_two = datetime(2026, 3, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    event = Event.model_validate(envelope(occurred_at=plus_two))
    assert event.occurred_at.tzinfo is UTC
    assert event.occurred_at == datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    from_text = Event.model_validate(envelope(occurred_at="2026-03-01T07:00:00-05:00"))
    assert from_text.occurred_at.isoformat() == "2026-03-01T12:00:00+00:00"
    assert event.model_dump(mode="json")["occurred_at"] == "2026-03-01T12:00:00Z"


@pytest.mark.parametrize("naive", [datetime(2026, 3, 1, 12, 0), "2026-03-01T12:00:00"])
def test_naive_occurred_at_is_rejected(naive: object) -> None:
    with pytest.raises(ValidationError, match="occurred_at must carry a time zone"):
        Event.model_validate(envelope(occurred_at=naive))


@pytest.mark.parametrize("bad", ["runStarted", "Run Started", "run.started", "R", "Run-Started", "X" * 65])
def test_bad_event_type_is_rejected(bad: str) -> None:
    with pytest.raises(ValidationError, match="event_type"):
        Event.model_validate(envelope(event_type=bad))


def test_sequence_and_version_start_at_one() -> None:
    with pytest.raises(ValidationError, match="sequence"):
        Event.model_validate(envelope(sequence=0))
    with pytest.raises(ValidationError, match="schema_version"):
        Event.model_validate(envelope(schema_version=0))


def test_envelope_ids_are_typed() -> None:
    with pytest.raises(ValidationError, match="expected CausationId, got EventId"):
        Event.model_validate(envelope(causation_id=EventId.new()))
    with pytest.raises(ValidationError, match="expected RunId, got SessionId"):
        Event.model_validate(envelope(run_id=SessionId.new()))


def test_envelope_payload_is_frozen_and_copied() -> None:
    inner: dict[str, JsonValue] = {"encoding": "utf-8"}
    payload: dict[str, JsonValue] = {"path": "docs/index.md", "options": inner}
    event = Event.model_validate(envelope(payload=payload))
    inner["encoding"] = "latin-1"
    payload["path"] = "elsewhere"
    assert event.payload == {"path": "docs/index.md", "options": {"encoding": "utf-8"}}
    assert isinstance(event.payload, MappingProxyType)
    with pytest.raises(ValidationError, match="frozen"):
        event.sequence = 2  # pyright: ignore[reportAttributeAccessIssue]


def test_envelope_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Event.model_validate(envelope(actor="me"))


# ---- typed payloads -------------------------------------------------------------------------------------------


def test_samples_cover_every_registered_pair() -> None:
    assert set(SAMPLES) == set(RUN_EVENT_PAYLOADS), "add a sample payload for every new (event_type, version)"


@pytest.mark.parametrize("pair", sorted(RUN_EVENT_PAYLOADS), ids=lambda p: f"{p[0]}.v{p[1]}")
def test_every_registered_pair_parses(pair: tuple[str, int]) -> None:
    event_type, version = pair
    payload = parse_run_event_payload(event_type, version, SAMPLES[pair])
    assert type(payload) is RUN_EVENT_PAYLOADS[pair]
    assert event_type_of(payload) == pair
    assert payload_type_for(event_type, version) is RUN_EVENT_PAYLOADS[pair]
    # What the store writes is what it reads back.
    again = parse_run_event_payload(event_type, version, payload.model_dump(mode="json"))
    assert again == payload


@pytest.mark.parametrize("pair", sorted(RUN_EVENT_PAYLOADS), ids=lambda p: f"{p[0]}.v{p[1]}")
def test_every_pair_travels_inside_an_envelope(pair: tuple[str, int]) -> None:
    event_type, version = pair
    typed = parse_run_event_payload(event_type, version, SAMPLES[pair])
    event = Event.model_validate(
        envelope(event_type=event_type, schema_version=version, payload=typed.model_dump(mode="json"))
    )
    stored = Event.model_validate_json(event.model_dump_json())
    assert parse_run_event_payload(stored.event_type, stored.schema_version, stored.payload) == typed


def test_unknown_event_type_fails_closed_with_a_clear_message() -> None:
    with pytest.raises(BearAgentError) as caught:
        parse_run_event_payload("RunTeleported", 1, {})
    assert caught.value.code == "validation.unknown_event"
    assert str(caught.value) == (
        "unknown run event 'RunTeleported' v1 (no such event type is known); upgrade BearAgent to read this log"
    )


def test_unknown_version_fails_closed_and_lists_the_known_ones() -> None:
    with pytest.raises(BearAgentError) as caught:
        parse_run_event_payload("RunCreated", 99, SAMPLES[("RunCreated", 2)])
    assert caught.value.code == "validation.unknown_event"
    assert "'RunCreated' v99 (known versions of RunCreated: [1, 2, 3, 4])" in str(caught.value)
    assert "upgrade BearAgent" in str(caught.value)


def test_payload_of_the_wrong_shape_fails_naming_the_field() -> None:
    with pytest.raises(BearAgentError) as caught:
        parse_run_event_payload("ToolCallRequested", 2, {**TOOL, "tool_name": "Read"})
    assert caught.value.code == "validation.invalid_event_payload"
    assert str(caught.value) == "ToolCallRequested v2: arguments: Field required"
    assert isinstance(caught.value.__cause__, ValidationError)


def test_unknown_payload_fields_fail_closed() -> None:
    # An unknown field means a newer writer: it must not be silently dropped.
    with pytest.raises(BearAgentError, match="RunStarted v1: surprise: Extra inputs are not permitted"):
        parse_run_event_payload("RunStarted", 1, {"surprise": 1})


def test_v1_payloads_still_parse_with_their_old_meaning() -> None:
    old = parse_run_event_payload("RunCreated", 1, {"budget_limits": {"max_tool_calls": 3}})
    assert isinstance(old, RunCreatedV1)
    assert old.budget_limits.max_tool_calls == 3
    assert old.session_id is None
    # A v2 field in a v1 payload is not quietly accepted: v1 never changes meaning.
    with pytest.raises(BearAgentError, match="RunCreated v1: goal: Extra inputs are not permitted"):
        parse_run_event_payload("RunCreated", 1, {"budget_limits": {}, "goal": "x"})
    for (event_type, version), model in RUN_EVENT_PAYLOADS.items():
        if version == 1:
            assert parse_run_event_payload(event_type, 1, SAMPLES[(event_type, 1)]).__class__ is model


def test_model_call_requested_v4_names_the_provider_and_reads_as_v3() -> None:
    v4 = parse_run_event_payload("ModelCallRequested", 4, SAMPLES[("ModelCallRequested", 4)])
    assert isinstance(v4, ModelCallRequestedV4)
    assert v4.provider == "openai-compatible"
    # readers that type v3 (run_steps, the reducer's accounting) take a v4 as the v3 it extends
    assert isinstance(v4, ModelCallRequestedV3)
    assert event_type_of(v4) == ("ModelCallRequested", 4)
    # an older version never gains the field: a v3 naming a provider is refused, not quietly read
    with pytest.raises(BearAgentError, match="ModelCallRequested v3: provider: Extra inputs are not permitted"):
        parse_run_event_payload("ModelCallRequested", 3, {**SAMPLES[("ModelCallRequested", 3)], "provider": "x"})
    # a v4 without one (a plan built outside the planner) reads as unknown
    bare = {k: v for k, v in SAMPLES[("ModelCallRequested", 4)].items() if k != "provider"}
    bare_v4 = parse_run_event_payload("ModelCallRequested", 4, bare)
    assert isinstance(bare_v4, ModelCallRequestedV4)
    assert bare_v4.provider is None


def test_latest_versions() -> None:
    assert LATEST_VERSIONS["RunCreated"] == 4
    assert LATEST_VERSIONS["ModelCallRequested"] == 4
    assert LATEST_VERSIONS["RunStarted"] == 3
    assert set(LATEST_VERSIONS) == {t for (t, _v) in RUN_EVENT_PAYLOADS}


def test_event_type_of_an_unregistered_payload() -> None:
    class Unregistered(RunCreatedV1):
        pass

    with pytest.raises(KeyError, match="Unregistered is not a registered run event payload"):
        event_type_of(Unregistered(budget_limits={}))  # pyright: ignore[reportArgumentType]


def test_payloads_are_frozen_copies() -> None:
    arguments: dict[str, JsonValue] = {"path": "a"}
    raw: dict[str, JsonValue] = {**TOOL, "tool_name": "Read", "arguments": arguments}
    payload = parse_run_event_payload("ToolCallRequested", 2, raw)
    assert isinstance(payload, ToolCallRequestedV2)
    arguments["path"] = "b"
    raw["tool_name"] = "Write"
    assert payload.arguments == {"path": "a"}
    assert payload.tool_name == "Read"
    with pytest.raises(TypeError):
        payload.arguments["path"] = "c"  # type: ignore[index]
    with pytest.raises(ValidationError, match="frozen"):
        payload.tool_name = "Write"  # pyright: ignore[reportAttributeAccessIssue]


def test_nested_payload_collections_are_read_only() -> None:
    versions: dict[str, JsonValue] = {"Read": "1"}
    created = parse_run_event_payload("RunCreated", 2, {**SAMPLES[("RunCreated", 2)], "tool_spec_versions": versions})
    assert isinstance(created, RunCreatedV2)
    versions["Read"] = "2"
    assert created.tool_spec_versions == {"Read": "1"}
    with pytest.raises(TypeError):
        created.tool_spec_versions["Write"] = "1"  # type: ignore[index]
    completed = parse_run_event_payload("ModelCallCompleted", 2, SAMPLES[("ModelCallCompleted", 2)])
    assert isinstance(completed, ModelCallCompletedV2)
    assert isinstance(completed.tool_calls, tuple)
    with pytest.raises(TypeError):
        completed.tool_calls[0].arguments["p"] = 2  # type: ignore[index]
    assert completed.model_dump(mode="json")["tool_calls"][0]["arguments"] == {"p": 1}


def test_old_versions_are_catalogued_without_loading_their_models() -> None:
    """The pairs BearAgent no longer writes are known to `run_events` by name and defined in `run_events_legacy`,
    which a run does not import (issue 37); the two lists agree, and looking one up or importing its name from
    `run_events` gives the same model."""
    from bearagent.domain import run_events, run_events_legacy

    assert dict(run_events.LEGACY_PAIRS) == {
        pair: model.__name__ for pair, model in run_events_legacy.LEGACY_RUN_EVENT_PAYLOADS.items()
    }
    for pair, name in run_events.LEGACY_PAIRS.items():
        model = getattr(run_events_legacy, name)
        assert pair in RUN_EVENT_PAYLOADS and RUN_EVENT_PAYLOADS[pair] is model
        assert getattr(run_events, name) is model
        assert event_type_of(model.model_construct()) == pair
    # no pair is both old and current, and no old version is an event type's latest
    assert len(set(RUN_EVENT_PAYLOADS)) == len(RUN_EVENT_PAYLOADS) == len(list(RUN_EVENT_PAYLOADS.items()))
    assert all(run_events.LATEST_VERSIONS[t] > v for (t, v) in run_events.LEGACY_PAIRS)
    with pytest.raises(AttributeError, match="no attribute 'RunCreatedV9'"):
        getattr(run_events, "RunCreatedV9")  # noqa: B009 - the module's __getattr__ is what is tested
