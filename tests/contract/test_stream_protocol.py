"""The stream protocol (SPEC §14): the same JSON samples parse in the Python models, validate against the committed
JSON Schema, type-check against the TypeScript types and decode with the TypeScript decoder; invalid samples fail
everywhere; samples with unknown extra fields (a newer producer) are tolerated everywhere.

Samples live in schemas/samples/: valid.jsonl (every event type), forward_compat.jsonl (known types with fields an
old client does not know), invalid.json (each with the reason it must be rejected).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import cast

import jsonschema
import pytest
from tests.support.typescript import ensure_tsc, node_missing_reason, run_tsc

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId
from bearagent.domain.stream import (
    MAX_STREAM_LINE_CHARS,
    STREAM_EVENT_MODELS,
    STREAM_EVENT_TYPES,
    FinalEvent,
    RunFailedEvent,
    StepEvent,
    StreamError,
    TokenEvent,
    ToolCallEvent,
    encode_stream_event,
    parse_stream_event,
    parse_stream_event_json,
    stream_json_schema,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
SAMPLES = SCHEMAS / "samples"


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


VALID = _lines(SAMPLES / "valid.jsonl")
FORWARD = _lines(SAMPLES / "forward_compat.jsonl")
INVALID = cast(list[dict[str, object]], json.loads((SAMPLES / "invalid.json").read_text(encoding="utf-8")))


def _load(line: str) -> dict[str, object]:
    return cast(dict[str, object], json.loads(line))


# ---- Python: decoding is the trust boundary --------------------------------------------------------------------


def test_valid_samples_cover_every_event_type() -> None:
    assert {_load(line)["type"] for line in VALID} == set(STREAM_EVENT_TYPES)
    assert set(STREAM_EVENT_MODELS) == set(STREAM_EVENT_TYPES)


@pytest.mark.parametrize("line", VALID, ids=lambda line: str(_load(line)["type"]))
def test_valid_sample_parses_and_round_trips_exactly(line: str) -> None:
    event = parse_stream_event_json(line)
    assert type(event) is STREAM_EVENT_MODELS[event.type]
    encoded = encode_stream_event(event)
    assert json.loads(encoded) == json.loads(line)  # nothing lost, nothing added
    assert parse_stream_event_json(encoded) == event
    assert parse_stream_event(_load(line)) == event
    assert "\n" not in encoded


@pytest.mark.parametrize("line", FORWARD, ids=lambda line: str(_load(line)["type"]))
def test_unknown_fields_of_a_known_type_are_ignored(line: str) -> None:
    event = parse_stream_event_json(line)
    known = set(type(event).model_fields)
    extra = set(_load(line)) - known
    assert extra, "a forward-compat sample must carry at least one field this version does not know"
    # the known fields survive exactly; unset optional fields stay off the wire
    assert set(json.loads(encode_stream_event(event))) == known & set(_load(line))


@pytest.mark.parametrize("sample", INVALID, ids=lambda s: str(s["why"]))
def test_invalid_sample_is_rejected(sample: dict[str, object]) -> None:
    with pytest.raises(BearAgentError) as caught:
        parse_stream_event(sample["event"])
    assert caught.value.code == "validation.stream_event"
    assert caught.value.hint, "every decode error says how to fix it"
    with pytest.raises(BearAgentError):
        parse_stream_event_json(json.dumps(sample["event"]))


def test_unknown_type_fails_clearly() -> None:
    with pytest.raises(BearAgentError) as caught:
        parse_stream_event_json('{"type": "thinking", "text": "hmm"}')
    assert str(caught.value) == (
        "unknown stream event type 'thinking'; known types: run.started, step, token, tool_call, tool_result, final, "
        "run.succeeded, run.failed, agent.switched, subagent.started, subagent.finished, approval.requested, "
        "approval.resolved, elicitation.requested, elicitation.resolved"
    )
    assert (
        caught.value.hint == "upgrade the client if the producer is a newer BearAgent, otherwise fix the 'type' value"
    )


def test_wrong_field_is_named() -> None:
    with pytest.raises(BearAgentError) as caught:
        parse_stream_event({"type": "run.failed", "run_id": str(RunId.new()), "error": {"category": "tool"}})
    assert str(caught.value) == "invalid 'run.failed' stream event: field error.code: Field required"
    assert caught.value.hint == "see docs/stream-protocol.md for the fields of 'run.failed'"


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"type": "step", "index": "1", "kind": "final"}, "index"),
        ({"type": "step", "index": True, "kind": "final"}, "index"),
        ({"type": "step", "index": -1, "kind": "final"}, "index"),
        ({"type": "tool_result", "id": "c", "name": "n", "result": "r", "is_error": 0}, "is_error"),
        ({"type": "run.started", "run_id": "r_d98c8f3c"}, "run_id"),
        ({"type": "tool_call", "id": "", "name": "n", "arguments": {}}, "id"),
        ({"type": "token", "text": "x", "seq": 0}, "seq"),
        ({"type": "token", "text": "x", "seq": True}, "seq"),
        ({"type": "token", "text": "x", "offset": -1}, "offset"),
        ({"type": "token", "text": "x", "activity_id": ""}, "activity_id"),
        ({"type": "final", "content": "x", "run_id": "r_d98c8f3c"}, "run_id"),
    ],
)
def test_types_are_strict(event: dict[str, object], field: str) -> None:
    with pytest.raises(BearAgentError, match=f"field {field}: "):
        parse_stream_event(event)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "stream event line is not valid JSON"),
        ("[1, 2]", "a stream event must be a JSON object, got list"),
        ('"token"', "a stream event must be a JSON object, got str"),
        ('{"text": "no type"}', "a stream event needs a string field 'type'"),
        ('{"type": 7}', "a stream event needs a string field 'type'"),
        (b'{"type": "token", "text": "\xff"}', "stream event line is not valid JSON"),
    ],
)
def test_malformed_lines_fail_clearly(line: str | bytes, message: str) -> None:
    with pytest.raises(BearAgentError, match=re.escape(message)) as caught:
        parse_stream_event_json(line)
    assert caught.value.hint


def test_oversized_line_is_refused_before_parsing() -> None:
    line = json.dumps({"type": "token", "text": "x" * MAX_STREAM_LINE_CHARS})
    with pytest.raises(BearAgentError, match=f"exceeds the limit of {MAX_STREAM_LINE_CHARS}"):
        parse_stream_event_json(line)


def test_producer_side_construction() -> None:
    run_id = RunId.new()
    error = ErrorInfo.of("budget", "max_tool_calls", "out of tool calls", limit=3)
    failed = RunFailedEvent(run_id=run_id, error=StreamError.from_info(error))
    assert json.loads(encode_stream_event(failed)) == {
        "type": "run.failed",
        "run_id": str(run_id),
        "error": {
            "category": "budget",
            "code": "budget.max_tool_calls",
            "message": "out of tool calls",
            "retryable": False,
        },
    }
    assert encode_stream_event(TokenEvent(text="hi")) == '{"type":"token","text":"hi"}'
    assert encode_stream_event(StepEvent(index=0, kind="final")) == '{"type":"step","index":0,"kind":"final"}'
    call = ToolCallEvent(id="c1", name="Read", arguments={"path": "a"})
    assert parse_stream_event_json(encode_stream_event(call)) == call
    with pytest.raises(Exception, match="frozen"):
        FinalEvent(content="x").content = "y"  # pyright: ignore[reportAttributeAccessIssue]


# ---- the committed JSON Schema -------------------------------------------------------------------------------


def _schema() -> dict[str, object]:
    return cast(dict[str, object], json.loads((SCHEMAS / "stream.schema.json").read_text(encoding="utf-8")))


def test_committed_schema_is_current() -> None:
    assert _schema() == stream_json_schema(), "regenerate with `uv run python scripts/update_schemas.py`"


def test_schema_discriminates_on_every_type() -> None:
    discriminator = cast(dict[str, object], _schema()["discriminator"])
    assert discriminator["propertyName"] == "type"
    assert set(cast(dict[str, str], discriminator["mapping"])) == set(STREAM_EVENT_TYPES)


@pytest.mark.parametrize("line", VALID + FORWARD)
def test_samples_validate_against_the_schema(line: str) -> None:
    jsonschema.validate(_load(line), _schema())


@pytest.mark.parametrize("sample", INVALID, ids=lambda s: str(s["why"]))
def test_invalid_samples_fail_the_schema(sample: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(sample["event"], _schema())


# ---- TypeScript --------------------------------------------------------------------------------------------------


def test_typescript_union_lists_the_same_types() -> None:
    # A cheap check that runs even without node: the discriminants written in stream.ts.
    source = (SCHEMAS / "stream.ts").read_text(encoding="utf-8")
    union = source[source.index("export type AgentEvent =") : source.index("export type AgentEventType")]
    assert set(re.findall(r'type: "([a-z._]+)"', union)) == set(STREAM_EVENT_TYPES)
    code = re.sub(r"//.*", "", source)
    assert not re.search(r"\b(enum|namespace|module)\s+\w+\s*\{", code), "stream.ts must use erasable syntax only"


@pytest.fixture(scope="module")
def ts_workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    reason = node_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    tsc = ensure_tsc()
    assert tsc is not None
    workdir = tmp_path_factory.mktemp("stream-ts")
    shutil.copy(SCHEMAS / "stream.ts", workdir / "stream.ts")
    yield tsc, workdir


def _literal(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False)


TSC_FLAGS = ("--strict", "--erasableSyntaxOnly", "--target", "es2022", "--module", "commonjs", "--skipLibCheck")


@pytest.mark.slow
def test_samples_type_check_against_the_typescript_union(ts_workdir: tuple[Path, Path]) -> None:
    tsc, workdir = ts_workdir
    lines = ['import type { AgentEvent, AgentEventType } from "./stream";', ""]
    for i, line in enumerate(VALID):
        lines.append(f"export const valid{i}: AgentEvent = {_literal(_load(line))};")
    # A newer producer's extra fields reach an old client through decode or a variable, never as a fresh literal;
    # structural typing accepts them there.
    for i, line in enumerate(FORWARD):
        lines.append(f"const forwardRaw{i} = {_literal(_load(line))} as const;")
        lines.append(f"export const forward{i}: AgentEvent = forwardRaw{i};")
    # Exactly the Python types: a missing key or an unknown key is a compile error.
    every = ", ".join(f"{_literal(t)}: true" for t in STREAM_EVENT_TYPES)
    lines.append(f"export const everyType: Record<AgentEventType, true> = {{ {every} }};")
    (workdir / "samples.ts").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = run_tsc(tsc, "--noEmit", *TSC_FLAGS, "samples.ts", cwd=workdir)
    assert done.returncode == 0, f"samples do not type-check against schemas/stream.ts:\n{done.stdout}{done.stderr}"


@pytest.mark.slow
def test_invalid_samples_do_not_type_check(ts_workdir: tuple[Path, Path]) -> None:
    tsc, workdir = ts_workdir
    header = ['import type { AgentEvent } from "./stream";', ""]
    body = [f"export const invalid{i}: AgentEvent = {_literal(s['event'])};" for i, s in enumerate(INVALID)]
    (workdir / "negatives.ts").write_text("\n".join(header + body) + "\n", encoding="utf-8")
    done = run_tsc(tsc, "--noEmit", *TSC_FLAGS, "negatives.ts", cwd=workdir)
    assert done.returncode != 0, "the invalid samples type-checked: the TypeScript union is too loose"
    failing_lines = {int(m) for m in re.findall(r"^negatives\.ts\((\d+),\d+\): error TS", done.stdout, re.MULTILINE)}
    assert not re.search(r"^stream\.ts\(", done.stdout, re.MULTILINE), f"stream.ts itself has errors:\n{done.stdout}"
    for i, sample in enumerate(INVALID):
        assert len(header) + i + 1 in failing_lines, f"invalid sample {sample['why']!r} type-checked:\n{done.stdout}"


@pytest.mark.slow
def test_typescript_decoder_agrees_with_python(ts_workdir: tuple[Path, Path]) -> None:
    tsc, workdir = ts_workdir
    node = shutil.which("node")
    assert node is not None
    # values a type cannot rule out (TypeScript has no integer >= 1): only the decoders must refuse them
    out_of_range = [
        {"type": "token", "text": "x", "seq": 0},
        {"type": "token", "text": "x", "offset": -1},
        {"type": "token", "text": "x", "activity_id": ""},
        {"type": "step", "index": 0, "kind": "final", "seq": 1.5},
    ]
    for event in out_of_range:
        with pytest.raises(BearAgentError):
            parse_stream_event(event)
    invalid_lines = [json.dumps(s["event"]) for s in INVALID] + ["[1]", "not json"]
    invalid_lines += [json.dumps(event) for event in out_of_range]
    program = [
        'import { decode, describe } from "./stream";',
        f"const VALID: string[] = {_literal(VALID)};",
        f"const FORWARD: string[] = {_literal(FORWARD)};",
        f"const INVALID: string[] = {_literal(invalid_lines)};",
        "const attempt = (line: string): string => { try { decode(line); return 'ACCEPTED'; }"
        " catch (e) { return (e as Error).message; } };",
        "console.log(JSON.stringify({",
        "  valid: VALID.map((l) => decode(l)),",
        "  described: VALID.map((l) => describe(decode(l))),",
        "  forward: FORWARD.map((l) => decode(l)),",
        "  invalid: INVALID.map(attempt),",
        "}));",
    ]
    (workdir / "decode_check.ts").write_text("\n".join(program) + "\n", encoding="utf-8")
    done = run_tsc(tsc, *TSC_FLAGS, "--outDir", "out", "decode_check.ts", cwd=workdir)
    assert done.returncode == 0, f"{done.stdout}{done.stderr}"
    ran = subprocess.run([node, str(workdir / "out" / "decode_check.js")], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    result = cast(dict[str, list[object]], json.loads(ran.stdout))
    # Both decoders produce the same objects from the same lines (Python's view is its JSON dump).
    assert result["valid"] == [json.loads(encode_stream_event(parse_stream_event_json(line))) for line in VALID]
    assert result["forward"] == [json.loads(encode_stream_event(parse_stream_event_json(line))) for line in FORWARD]
    assert all(isinstance(text, str) and text for text in result["described"])
    for line, outcome in zip(invalid_lines, result["invalid"], strict=True):
        assert outcome != "ACCEPTED", f"the TypeScript decoder accepted {line}"
    assert result["invalid"][0] == (
        'unknown stream event type "thinking"; known types: run.started, step, token, tool_call, tool_result, final, '
        "run.succeeded, run.failed, agent.switched, subagent.started, subagent.finished, approval.requested, "
        "approval.resolved, elicitation.requested, elicitation.resolved"
    )


def test_read_only_mappings_from_python_code_decode_like_json() -> None:
    run_id = RunId.new()
    error = MappingProxyType({"category": "tool", "code": "tool.x", "message": "m", "retryable": False})
    event = parse_stream_event(MappingProxyType({"type": "run.failed", "run_id": run_id, "error": error}))
    assert isinstance(event, RunFailedEvent)
    assert (event.run_id, event.error.code) == (run_id, "tool.x")
    call = parse_stream_event({"type": "tool_call", "id": "c", "name": "n", "arguments": MappingProxyType({"a": (1,)})})
    assert isinstance(call, ToolCallEvent)
    assert json.loads(encode_stream_event(call))["arguments"] == {"a": [1]}
