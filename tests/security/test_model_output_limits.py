"""Model output beyond the limits (too many tool calls, an over-long text or tool name, arguments too large for the
turn, lone surrogates) is a recorded model turn plus a clear failed tool result or run error, never an internal
error. Real runs: the scripted model, and the OpenAI chat adapter against a local server (127.0.0.1)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import cast

import pytest
from click.testing import CliRunner
from tests.support.config_ws import isolated_env
from tests.support.providers import make_provider
from tests.support.run_ws import agent_md, scripted_workspace
from tests.support.runtime import scripted_plan

from bearagent.cli import main
from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.events import Event
from bearagent.domain.ids import DeterministicIdGenerator
from bearagent.domain.models import MAX_TOOL_CALLS_PER_TURN, MAX_TURN_TEXT_CHARS
from bearagent.ports import SystemClock
from bearagent.runtime.loop import AgentLoop, RunOutcome
from bearagent.runtime.plan import RunSpec
from bearagent.store.sqlite import SqliteEventStore

MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write, Glob]")}


# ---- a local OpenAI-compatible server that answers with the bodies a test queues ---------------------------------


class FakeOpenAI:
    """`POST /v1/chat/completions` answers with the next queued body (JSON, or SSE when it is a list of chunks)."""

    def __init__(self) -> None:
        self.bodies: list[object] = []
        self.requests: list[dict[str, object]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                outer.requests.append(cast(dict[str, object], json.loads(self.rfile.read(length))))
                body = outer.bodies.pop(0) if outer.bodies else {"error": {"message": "no more answers"}}
                if isinstance(body, list):
                    chunks = cast(list[object], body)
                    data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                    payload, kind = data.encode(), "text/event-stream"
                else:
                    payload, kind = json.dumps(body).encode(), "application/json"
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    try:
        yield server
    finally:
        server.close()


def completion(text: str | None = None, calls: Sequence[tuple[str, str]] = ()) -> dict[str, object]:
    """A non-streamed chat completion with `text` and `calls` as (name, argument text)."""
    message: dict[str, object] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
            for i, (name, arguments) in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def text_chunks(*pieces: str) -> list[object]:
    """A streamed chat completion of text `pieces`, then the finish and the usage."""
    base: dict[str, object] = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    usage: dict[str, object] = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    chunks: list[object] = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": p}, "finish_reason": None}]}
        for p in pieces
    ]
    finish: dict[str, object] = {"index": 0, "delta": {}, "finish_reason": "stop"}
    chunks.append({**base, "choices": [finish]})
    chunks.append({**base, "choices": [], "usage": usage})
    return chunks


def run_loop(
    root: Path,
    *,
    openai: FakeOpenAI | None = None,
    script: str = "turns: [{text: unused}]\n",
    stream: bool = False,
    **budgets: int,
) -> tuple[RunOutcome, list[Event]]:
    """One real run (loop, gate, native tools, SQLite log) with the scripted model, or the OpenAI chat adapter
    talking to `openai`."""
    plan = scripted_plan(root, script, tool_names=("Read", "Write", "Glob"))
    if openai is not None:
        plan = dataclasses.replace(plan, provider=make_provider("openai_chat", openai.url, stream=stream))
    store = SqliteEventStore(root / "state.db")
    try:
        loop = AgentLoop(store=store, clock=SystemClock(), ids=DeterministicIdGenerator())
        spec = RunSpec(goal="go", workspace_root=root, budgets=BudgetLimits(**budgets))
        outcome = asyncio.run(loop.run(spec, plan))
        return outcome, list(store.read_events(outcome.run_id))
    finally:
        store.close()


def of_type(events: list[Event], event_type: str) -> list[Mapping[str, object]]:
    return [e.payload for e in events if e.event_type == event_type]


def failed_codes(events: list[Event]) -> list[str]:
    out: list[str] = []
    for payload in of_type(events, "ToolCallFailed"):
        result = cast(Mapping[str, object], payload["result"])
        error = cast(Mapping[str, object], result["error"])
        out.append(cast(str, error["code"]))
    return out


def failed_messages(events: list[Event]) -> list[str]:
    return [cast(str, cast(Mapping[str, object], p["result"])["content"]) for p in of_type(events, "ToolCallFailed")]


def assert_log_is_json(events: list[Event]) -> None:
    """Every stored event serialises as strict UTF-8 JSON (what `events --json` prints)."""
    for event in events:
        json.dumps(event.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")


# ---- too many tool calls -------------------------------------------------------------------------------------------


def test_too_many_tool_calls_in_one_turn_is_a_recorded_turn_and_a_clear_run_error(tmp_path: Path) -> None:
    calls = "".join("      - {name: Glob, arguments: {pattern: '*.md'}}\n" for _ in range(600))
    outcome, events = run_loop(tmp_path, script=f"turns:\n  - text: 'Globbing a lot.'\n    tool_calls:\n{calls}")
    assert outcome.status == "failed" and outcome.error is not None
    assert outcome.error.code == "validation.too_many_tool_calls"
    assert "600 tool calls" in outcome.error.message and str(MAX_TOOL_CALLS_PER_TURN) in outcome.error.message
    (turn,) = of_type(events, "ModelCallCompleted")
    assert turn["text"] == "Globbing a lot."
    assert len(cast(Sequence[object], turn["tool_calls"])) == MAX_TOOL_CALLS_PER_TURN
    assert cast(Mapping[str, int], turn["usage"])["output_tokens"] > 0  # the turn's cost is not lost
    assert not of_type(events, "ToolCallRequested"), "no call of an over-full turn may run"
    assert [e.event_type for e in events][-1] == "RunFailed"
    assert_log_is_json(events)


def test_cli_reports_too_many_tool_calls_as_a_run_failure_not_an_internal_error(tmp_path: Path) -> None:
    calls = "".join("      - {name: Read, arguments: {file_path: notes.md}}\n" for _ in range(600))
    root = scripted_workspace(tmp_path / "ws", f"turns:\n  - tool_calls:\n{calls}", agents=MAIN)
    result = CliRunner().invoke(
        main, ["run", "-w", str(root), "--json", "go"], env=isolated_env(tmp_path), prog_name="bearagent"
    )
    assert result.exit_code == 1, result.output
    record = json.loads(result.output)
    assert record["status"] == "failed"
    assert record["error"]["category"] == "validation"
    assert record["error"]["code"] == "validation.too_many_tool_calls"
    assert "Traceback" not in result.output


# ---- over-long text ---------------------------------------------------------------------------------------------------


def test_over_long_text_is_recorded_cut_and_fails_the_run_clearly(tmp_path: Path, openai: FakeOpenAI) -> None:
    openai.bodies.append(completion("x" * (MAX_TURN_TEXT_CHARS + 150_000)))
    outcome, events = run_loop(tmp_path, openai=openai)
    assert outcome.status == "failed" and outcome.error is not None
    assert outcome.error.code == "validation.model_text_too_long"
    assert f"{MAX_TURN_TEXT_CHARS + 150_000:,} characters" in outcome.error.message
    (turn,) = of_type(events, "ModelCallCompleted")
    assert len(cast(str, turn["text"])) == MAX_TURN_TEXT_CHARS
    assert cast(Mapping[str, int], turn["usage"])["output_tokens"] == 7
    assert not of_type(events, "ModelCallFailed")


def test_over_long_streamed_text_fails_the_run_the_same_way(tmp_path: Path, openai: FakeOpenAI) -> None:
    piece = "y" * 400_000
    openai.bodies.append(text_chunks(piece, piece, piece))
    outcome, events = run_loop(tmp_path, openai=openai, stream=True)
    assert outcome.error is not None and outcome.error.code == "validation.model_text_too_long"
    (turn,) = of_type(events, "ModelCallCompleted")
    assert len(cast(str, turn["text"])) == MAX_TURN_TEXT_CHARS


# ---- lone surrogates -------------------------------------------------------------------------------------------------


def test_lone_surrogate_in_streamed_text_becomes_a_replacement_character(tmp_path: Path, openai: FakeOpenAI) -> None:
    openai.bodies.append(text_chunks("half an emoji: \ud83d", " and a low one \udc00 too"))
    outcome, events = run_loop(tmp_path, openai=openai, stream=True)
    assert outcome.status == "succeeded", outcome.error
    assert outcome.final_text == "half an emoji: \ufffd and a low one \ufffd too"
    assert_log_is_json(events)


def test_lone_surrogate_in_scripted_text_and_arguments(tmp_path: Path) -> None:
    script = r"""
turns:
  - text: "bad \ud800 text"
    tool_calls: [{name: Read, arguments: {file_path: "no\udfffte.md"}}]
  - text: "done"
"""
    outcome, events = run_loop(tmp_path, script=script)
    assert outcome.status == "succeeded", outcome.error
    assert failed_codes(events) == ["validation.invalid_tool_arguments"]
    (message,) = failed_messages(events)
    assert "not valid Unicode" in message and "arguments.file_path" in message
    turns = of_type(events, "ModelCallCompleted")
    assert turns[0]["text"] == "bad \ufffd text"
    recorded = cast(Sequence[Mapping[str, object]], turns[0]["tool_calls"])[0]
    assert recorded["arguments"] == {"file_path": "no\ufffdte.md"}
    assert "not valid Unicode" in cast(str, recorded["invalid_arguments"])
    assert_log_is_json(events)


def test_lone_surrogate_in_adapter_tool_arguments_and_name(tmp_path: Path, openai: FakeOpenAI) -> None:
    openai.bodies.append(
        completion(
            None,
            [
                ("Read", json.dumps({"file_path": "a\ud800.md"})),
                ("Re\udc01ad", json.dumps({"file_path": "a.md"})),
                ("Glob", json.dumps({"pattern": "*.md", "\ud800": 1})),
            ],
        )
    )
    openai.bodies.append(completion("done"))
    outcome, events = run_loop(tmp_path, openai=openai)
    assert outcome.status == "succeeded", outcome.error
    assert failed_codes(events) == [
        "validation.invalid_tool_arguments",
        "tool.unknown_tool",
        "validation.invalid_tool_arguments",
    ]
    messages = failed_messages(events)
    assert "arguments.file_path" in messages[0]
    assert "'Re\ufffdad'" in messages[1]
    assert "a key of arguments" in messages[2]
    assert_log_is_json(events)


# ---- over-long tool name ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [129, 300, 5_000])
def test_over_long_tool_name_is_a_failed_call_naming_the_limit(tmp_path: Path, openai: FakeOpenAI, length: int) -> None:
    openai.bodies.append(completion(None, [("T" * length, "{}"), ("Glob", json.dumps({"pattern": "*.md"}))]))
    openai.bodies.append(completion("done"))
    outcome, events = run_loop(tmp_path, openai=openai)
    assert outcome.status == "succeeded", outcome.error
    assert failed_codes(events) == ["validation.tool_name_too_long"]
    (message,) = failed_messages(events)
    assert "at most 128 characters" in message
    assert (f"{length} characters" if length < 256 else "256 or more characters") in message
    assert len(of_type(events, "ToolCallCompleted")) == 1  # the other call of the turn ran


def test_scripted_over_long_tool_name(tmp_path: Path) -> None:
    outcome, events = run_loop(tmp_path, script=f"turns:\n  - tool_calls: [{{name: {'N' * 300}}}]\n  - text: ok\n")
    assert outcome.status == "succeeded", outcome.error
    assert failed_codes(events) == ["validation.tool_name_too_long"]


# ---- arguments over the bounds --------------------------------------------------------------------------------------


def test_arguments_over_the_size_bound_are_a_failed_call(tmp_path: Path, openai: FakeOpenAI) -> None:
    too_long = json.dumps({"file_path": "big.txt", "content": "z" * 1_100_000})
    openai.bodies.append(completion(None, [("Write", too_long)]))
    openai.bodies.append(completion("done"))
    outcome, events = run_loop(tmp_path, openai=openai)
    assert outcome.status == "succeeded", outcome.error
    assert failed_codes(events) == ["validation.invalid_tool_arguments"]
    (message,) = failed_messages(events)
    assert "max_string_chars=1048576" in message
    assert not (tmp_path / "big.txt").exists()


def test_calls_whose_arguments_together_overflow_the_turn_fail_past_the_limit(
    tmp_path: Path, openai: FakeOpenAI
) -> None:
    content = "w" * 1_000_000  # each within the per-string bound; five of them are more than one turn records
    calls = [("Write", json.dumps({"file_path": f"part{i}.txt", "content": content})) for i in range(5)]
    openai.bodies.append(completion(None, calls))
    openai.bodies.append(completion("done"))
    outcome, events = run_loop(tmp_path, openai=openai)
    assert outcome.status == "succeeded", outcome.error
    codes = failed_codes(events)
    assert codes and set(codes) == {"validation.tool_arguments_too_large"}, codes
    assert len(codes) < 5
    assert "Call fewer tools at once" in failed_messages(events)[0]
    (first_turn, _) = of_type(events, "ModelCallCompleted")
    recorded = cast(Sequence[Mapping[str, object]], first_turn["tool_calls"])
    assert [c["arguments"] == {} for c in recorded][-len(codes) :] == [True] * len(codes)
    assert (tmp_path / "part0.txt").stat().st_size == 1_000_000


def test_many_small_calls_that_overflow_the_turns_json_values_fail_past_the_limit(tmp_path: Path) -> None:
    args = "{pattern: '*.md', " + ", ".join(f"k{i}: {i}" for i in range(24)) + "}"
    calls = "".join(f"      - {{name: Glob, arguments: {args}}}\n" for _ in range(500))
    outcome, events = run_loop(
        tmp_path, script=f"turns:\n  - tool_calls:\n{calls}  - text: done\n", max_tool_calls=1_000
    )
    assert outcome.status == "succeeded", outcome.error
    codes = failed_codes(events)
    too_large = [c for c in codes if c == "validation.tool_arguments_too_large"]
    assert 0 < len(too_large) < 500
    assert codes[-len(too_large) :] == too_large  # the calls past the limit, in order
    assert_log_is_json(events)
