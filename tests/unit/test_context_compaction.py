"""Context accounting and compaction, the pure parts: the windows of well-known model names and of a server's
model listing, which messages a compaction replaces (never a tool call without its result), what the summariser
reads, and every error a `compaction:` or `context_window` setting can hit (each names its file and field)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.cli import main
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message, TextPart, ToolCallPart, ToolResultPart
from bearagent.providers.model_listing import lists_windows, window_from_listing
from bearagent.runtime.compaction import split_point, summary_message, transcript
from bearagent.runtime.context_size import default_context_window


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("claude-sonnet-4-5", 200_000),
        ("claude-3-5-haiku-latest", 200_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4.1-nano", 1_047_576),
        ("gpt-5-mini", 400_000),
        ("gpt-4", 8_192),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("o1-mini", 128_000),
        ("meta-llama/Llama-3.1-8B-Instruct", 131_072),
        ("llama3:8b", 8_192),
        ("qwen2.5-coder:7b", 32_768),
        ("Qwen/Qwen3-8B", 32_768),
        ("scripted", None),
        ("my-finetune", None),
    ],
)
def test_well_known_model_names_have_a_default_window(name: str, window: int | None) -> None:
    assert default_context_window(name) == window


def test_a_servers_listing_says_the_window_in_its_own_words() -> None:
    llama = {"data": [{"id": "m", "meta": {"n_ctx_train": 32768, "n_vocab": 1}}]}
    llama_started_smaller = {"data": [{"id": "m", "meta": {"n_ctx_train": 32768, "n_ctx": 4096}}]}
    vllm = {"object": "list", "data": [{"id": "Qwen/Qwen2.5-7B", "max_model_len": 16384}]}
    lmstudio = {"data": [{"id": "a", "context_length": 8192}, {"id": "b", "context_length": 2048}]}
    assert window_from_listing(llama, "m") == 32768
    assert window_from_listing(llama_started_smaller, "m") == 4096  # what requests really get
    assert window_from_listing(vllm, "local-alias") == 16384  # the only model served
    assert window_from_listing(lmstudio, "b") == 2048
    assert window_from_listing(lmstudio, "c") is None  # several models, none of that name
    assert window_from_listing({"data": [{"id": "gpt-4o"}]}, "gpt-4o") is None
    assert window_from_listing(["not", "a", "listing"], "m") is None
    assert not lists_windows("https://api.openai.com/v1") and lists_windows("http://127.0.0.1:8080/v1")


def _call(n: int) -> tuple[Message, Message]:
    call = ToolCallPart(tool_call_id=ToolCallId(f"10000000-0000-4000-8000-00000000000{n}"), name="Read", arguments={})
    result = ToolResultPart(tool_call_id=call.tool_call_id, name="Read", content=f"result {n}")
    return Message(role="assistant", parts=(TextPart(text=f"reading {n}"), call)), Message.tool(result)


def test_a_compaction_keeps_whole_turns_and_never_splits_a_call_from_its_result() -> None:
    ask1, (call1, result1), (call2, result2) = Message.user("task"), _call(1), _call(2)
    conversation = [ask1, call1, result1, call2, result2]
    assert split_point(conversation, 1) == 3  # keeps the last call with its result
    assert split_point(conversation, 2) == 1  # keeps both calls: only the user's message is summarised
    assert split_point(conversation, 3) == 0  # nothing older than the turns kept
    assert split_point(conversation, 0) == 5
    assert split_point([summary_message("earlier"), call2, result2], 1) == 0  # only the summary before: nothing new
    assert split_point([summary_message("earlier"), ask1, call2, result2], 1) == 2


def test_the_summariser_reads_a_plain_transcript_cut_from_its_oldest_part() -> None:
    ask, (call, result) = Message.user("OLDEST " + "x" * 500), _call(1)
    text = transcript([ask, call, Message.user("newest")], max_chars=100_000)
    assert "[user]\nOLDEST" in text and "[assistant calls Read] {}" in text and text.endswith("[user]\nnewest")
    cut = transcript([ask, call, result, Message.user("newest")], max_chars=120)
    assert "OLDEST" not in cut and cut.endswith("newest") and "characters of the conversation are left out" in cut


def test_bad_compaction_settings_in_config_name_the_file_and_the_field(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(
        root,
        ".bearagent/config.yaml",
        "compaction: {threshold: 2, keep_recent_turns: -1, enabled: maybe, model: '', treshold: 0.5}\n",
    )
    diags = load(root, tmp_path / "home").diagnostics()
    by_field = {d.field: d for d in diags if d.field and d.field.startswith("compaction")}
    assert set(by_field) == {
        "compaction.threshold",
        "compaction.keep_recent_turns",
        "compaction.enabled",
        "compaction.model",
        "compaction.treshold",
    }
    threshold = by_field["compaction.threshold"]
    assert threshold.severity == "error" and threshold.source == str(root / ".bearagent/config.yaml")
    assert "must be a number above 0 and at most 1, got 2" in threshold.message
    assert threshold.fix == "write `threshold: 0.8`"
    assert "whole number from 0 to 1000, got -1" in by_field["compaction.keep_recent_turns"].message
    assert "did you mean 'threshold'" in by_field["compaction.treshold"].message
    assert by_field["compaction.treshold"].severity == "warning"
    not_a_mapping = tmp_path / "ws2"
    write(not_a_mapping, ".bearagent/config.yaml", "compaction: 0.8\n")
    (problem,) = [d for d in load(not_a_mapping, tmp_path / "home").diagnostics() if d.field == "compaction"]
    assert "must be a mapping, got float" in problem.message and "threshold: 0.8" in (problem.fix or "")


def test_bad_compaction_policy_in_an_agent_names_the_agent_file_and_the_field(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(
        root, ".bearagent/agents/a.md", agent_md("A.", policy="{compaction: {keep_recent_turns: lots, threshold: 0.6}}")
    )
    loaded = load(root, tmp_path / "home")
    (problem,) = [d for d in loaded.diagnostics() if d.field == "policy.compaction.keep_recent_turns"]
    assert problem.source == str(root / ".bearagent/agents/a.md") and problem.line == 3
    assert "policy.compaction.keep_recent_turns: must be a whole number" in problem.message
    agent = loaded.agents.get("a")
    assert agent is not None and agent.policy.compaction.threshold == 0.6  # the good field still applies


def test_an_unknown_compaction_model_fails_the_run_naming_the_setting(tmp_path: Path) -> None:
    config = (
        "default_agent: main\ndefault_model: scripted\nmodels:\n  scripted: {provider: scripted, script: script.yaml}\n"
        "compaction: {model: summarizer}\n"
    )
    root = scripted_workspace(
        tmp_path / "ws", "turns: [{text: hi}]\n", agents={"main": agent_md("M.", mode="primary")}, config=config
    )
    with open_ws(root, tmp_path / "home") as ws, pytest.raises(BearAgentError) as caught:
        ws.run_sync("hello")
    assert "compaction.model in config.yaml: unknown model 'summarizer'" in caught.value.info.message
    assert "use one of: workspace/scripted" in (caught.value.hint or "")


def test_a_context_window_too_small_to_be_real_is_an_error_on_the_model_entry(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, ".bearagent/config.yaml", "models:\n  tiny: {provider: scripted, script: s.yaml, context_window: 10}\n")
    write(root, ".bearagent/s.yaml", "turns: [{text: hi}]\n")
    (problem,) = [d for d in load(root, tmp_path / "home").diagnostics() if d.field == "models.tiny.context_window"]
    assert problem.severity == "error" and "greater than or equal to 256" in problem.message
    assert problem.fix == "fix models.tiny.context_window"


def test_models_show_says_where_an_entrys_window_comes_from(tmp_path: Path) -> None:

    root = tmp_path / "ws"
    write(
        root,
        ".bearagent/config.yaml",
        "models:\n"
        "  claude: {provider: anthropic, model: claude-sonnet-4-5, api_key_env: K}\n"
        "  local: {provider: openai-compatible, model: my-finetune, base_url: 'http://127.0.0.1:9/v1'}\n"
        "  sized: {provider: openai-compatible, model: m, base_url: 'http://127.0.0.1:9/v1', context_window: 8192}\n",
    )

    def show(name: str) -> str:
        result = CliRunner().invoke(
            main, ["models", "show", name, "-w", str(root)], env=isolated_env(tmp_path / "home")
        )
        assert result.exit_code == 0, result.output
        return " ".join(result.output.split())

    assert "context_window 200,000 by default for claude-sonnet-4-5" in show("claude")
    assert "context_window unknown (the server's /v1/models listing is asked" in show("local")
    assert "context_window 8192" in show("sized")
