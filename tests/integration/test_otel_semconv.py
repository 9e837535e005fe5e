"""The OpenTelemetry plugin names the provider and places content after the revision of the GenAI conventions that
`OTEL_SEMCONV_STABILITY_OPT_IN` selects (`bearagent_otel/semconv.py`): v1.36.0 by default (`gen_ai.system`, content
as span events), the latest with `gen_ai_latest_experimental` (`gen_ai.provider.name`, content as attributes),
never both. Real runs against local OpenAI-compatible and Anthropic servers on 127.0.0.1 record the provider in
`ModelCallRequested` v4; the spans carry it live and when built from the log afterwards."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from bearagent_otel import CONTENT_VAR, LiveExport, export_run
from bearagent_otel.semconv import OPT_IN_VAR, Semconv
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.support.config_ws import isolated_env, load, write
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import Answer, FakeOpenAI
from tests.support.otel_plugin import PLUGIN_SRC, installed_site, otlp_receiver
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.api import open_workspace
from bearagent.plugin import RegisterEventSink, hookimpl
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

PROVIDER_KEYS = ("gen_ai.system", "gen_ai.provider.name")
LATEST_CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments")


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAI, FakeAnthropic]]:
    with (
        FakeAnthropic("Bonjour from the quokka.") as claude,
        FakeOpenAI([Answer(text="Hello from the wombat.")] * 4) as local,
    ):
        yield local, claude


def workspace(tmp: Path, local: FakeOpenAI, claude: FakeAnthropic) -> tuple[Path, Path]:
    root, home = tmp / "ws", tmp / "home"
    config = (
        "default_agent: main\ndefault_model: local\nmodels:\n"
        f"  local: {{provider: openai-compatible, base_url: '{local.base_url}', model: m, api_key_env: FAKE_KEY}}\n"
        f"  claude: {{provider: anthropic, model: claude-fake, base_url: '{claude.url}', stream: false,"
        " api_key_env: FAKE_KEY}\n"
    )
    write(root, ".bearagent/config.yaml", config)
    write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary", tools="[Read]"))
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, home


class _Sink:
    def __init__(self, live: LiveExport) -> None:
        self.live = live

    @hookimpl
    def register_event_sinks(self, register: RegisterEventSink) -> None:
        register(self.live)


def run_live(root: Path, home: Path, env: Mapping[str, str], model: str) -> tuple[str, list[ReadableSpan]]:
    memory = InMemorySpanExporter()
    live = LiveExport(env, exporter_factory=lambda: memory)
    host = PluginHost()
    host.register(_Sink(live), "otel-test")
    with open_workspace(root, env={**isolated_env(home), "FAKE_KEY": "sk-fake"}, plugins=host) as ws:
        result = ws.run_sync("say hello to the quokka", model=model)
        assert result.status == "succeeded", result.error
        requested = [e for e in ws.events(str(result.run_id)) if e.event_type == "ModelCallRequested"]
    assert requested and all(e.schema_version == 4 for e in requested), "the provider is in the log"
    live.flush()
    return str(result.run_id), list(memory.get_finished_spans())


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def by_name(spans: list[ReadableSpan], prefix: str) -> ReadableSpan:
    return next(span for span in spans if span.name.startswith(prefix))


@pytest.mark.parametrize(
    ("model", "raw", "value"), [("local", "openai-compatible", "openai"), ("claude", "anthropic", "anthropic")]
)
def test_the_provider_is_named_per_the_conventions_live_and_from_the_log(
    tmp_path: Path, servers: tuple[FakeOpenAI, FakeAnthropic], model: str, raw: str, value: str
) -> None:
    root, home = workspace(tmp_path, *servers)
    for opt_in, key in (("", "gen_ai.system"), ("http, gen_ai_latest_experimental", "gen_ai.provider.name")):
        env = {OPT_IN_VAR: opt_in}
        run_id, spans = run_live(root, home, env, model)
        rebuilt = InMemorySpanExporter()
        assert export_run(root, run_id, rebuilt, env) == len(spans)
        for source in (spans, list(rebuilt.get_finished_spans())):
            for prefix in ("chat ", "invoke_agent main"):
                found = attrs(by_name(source, prefix))
                assert found[key] == value, (opt_in, prefix, found)
                assert found["bearagent.model.provider"] == raw
                other = next(k for k in PROVIDER_KEYS if k != key)
                assert other not in found, f"never both names ({opt_in!r})"


def test_content_follows_the_chosen_revision_and_is_off_by_default(
    tmp_path: Path, servers: tuple[FakeOpenAI, FakeAnthropic]
) -> None:
    root, home = workspace(tmp_path, *servers)
    # off by default, in both revisions: no attribute and no event holds what was said
    for opt_in in ("", "gen_ai_latest_experimental"):
        _, spans = run_live(root, home, {OPT_IN_VAR: opt_in}, "local")
        for span in spans:
            assert "quokka" not in json.dumps(attrs(span)) and not span.events, span.name

    # v1.36.0: content as span events, none of the latest revision's content attributes
    _, spans = run_live(root, home, {CONTENT_VAR: "true"}, "local")
    agent = by_name(spans, "invoke_agent main")
    events = {event.name: dict(event.attributes or {}) for event in agent.events}
    assert events["gen_ai.user.message"]["content"] == "say hello to the quokka"
    assert json.loads(str(events["gen_ai.choice"]["message"]))["content"] == "Hello from the wombat."
    chat = by_name(spans, "chat ")
    (choice,) = chat.events
    assert choice.name == "gen_ai.choice" and dict(choice.attributes or {})["finish_reason"] == "end_turn"
    assert chat.start_time is not None and choice.timestamp >= chat.start_time
    for span in spans:
        assert not set(LATEST_CONTENT) & set(attrs(span)), span.name

    # latest: content as attributes, no events
    _, spans = run_live(root, home, {CONTENT_VAR: "true", OPT_IN_VAR: "gen_ai_latest_experimental"}, "local")
    agent = by_name(spans, "invoke_agent main")
    assert json.loads(str(attrs(agent)["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "say hello to the quokka"}]}
    ]
    output = json.loads(str(attrs(by_name(spans, "chat "))["gen_ai.output.messages"]))
    assert output[0]["parts"] == [{"type": "text", "content": "Hello from the wombat."}]
    assert all(not span.events for span in spans)


def test_tool_content_per_revision(tmp_path: Path) -> None:
    """A tool call's arguments and result: attributes of the `execute_tool` span in the latest revision; in v1.36.0
    the arguments in the asking chat span's `gen_ai.choice` and the result a `gen_ai.tool.message` event."""

    script = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "Read it."
"""
    root = scripted_workspace(
        tmp_path / "ws", script, agents={"main": agent_md("Main.", mode="primary", tools="[Read]")}
    )
    write(root, "notes.md", "the platypus hides here\n")
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))

    _, old = run_live(root, home, {CONTENT_VAR: "1"}, "scripted")
    tool = by_name(old, "execute_tool Read")
    (message,) = tool.events
    assert message.name == "gen_ai.tool.message" and "platypus" in str(dict(message.attributes or {})["content"])
    asking = next(
        s for s in old if s.name.startswith("chat ") and s.events and "tool_calls" in str(s.events[0].attributes)
    )
    call = json.loads(str(dict(asking.events[0].attributes or {})["message"]))["tool_calls"][0]
    assert call["function"] == {"name": "Read", "arguments": {"file_path": "notes.md"}}
    assert attrs(by_name(old, "chat "))["gen_ai.system"] == "scripted", "an id the conventions do not know, as is"

    _, new = run_live(root, home, {CONTENT_VAR: "1", OPT_IN_VAR: "gen_ai_latest_experimental"}, "scripted")
    tool_attrs = attrs(by_name(new, "execute_tool Read"))
    assert json.loads(str(tool_attrs["gen_ai.tool.call.arguments"])) == {"file_path": "notes.md"}
    assert "platypus" in str(tool_attrs["gen_ai.tool.call.result"])


def test_well_known_values_of_each_revision() -> None:
    old, new = Semconv(), Semconv.from_env({OPT_IN_VAR: "gen_ai_latest_experimental"})
    assert (old.provider_key, new.provider_key) == ("gen_ai.system", "gen_ai.provider.name")
    for raw, before, after in [
        ("openai", "openai", "openai"),
        ("openai-compatible", "openai", "openai"),
        ("anthropic", "anthropic", "anthropic"),
        ("azure-openai", "az.ai.openai", "azure.ai.openai"),
        ("xai", "xai", "x_ai"),
        ("bedrock", "aws.bedrock", "aws.bedrock"),
        ("my-plugin-llm", "my-plugin-llm", "my-plugin-llm"),
    ]:
        assert (old.provider_value(raw), new.provider_value(raw)) == (before, after), raw
    # the SDK's own lists of well-known values agree with ours
    genai: Any = importlib.import_module("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
    systems = {v.value for v in genai.GenAiSystemValues}
    providers = {v.value for v in genai.GenAiProviderNameValues}
    from bearagent_otel.semconv import WELL_KNOWN

    assert {before for before, _ in WELL_KNOWN.values()} <= systems
    assert {after for _, after in WELL_KNOWN.values()} <= providers
    assert not Semconv.from_env({OPT_IN_VAR: "database, http"}).latest


@pytest.mark.slow
def test_a_real_process_exports_the_provider_over_otlp_http(
    tmp_path: Path, servers: tuple[FakeOpenAI, FakeAnthropic]
) -> None:
    root, home = workspace(tmp_path, *servers)
    site = installed_site(tmp_path)
    bearagent = str(Path(sys.executable).with_name("bearagent"))
    with otlp_receiver() as receiver:
        env = {
            **isolated_env(home),
            "FAKE_KEY": "sk-fake",
            "BEARAGENT_LOAD_PLUGINS": "otel",
            "PYTHONPATH": os.pathsep.join([str(site), str(PLUGIN_SRC)]),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            OPT_IN_VAR: "gen_ai_latest_experimental",
        }
        done = subprocess.run(
            [bearagent, "run", "-w", str(root), "--json", "say hello"],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        chat = next(span for span in receiver.spans if span.name.startswith("chat "))
        decoded = {a.key: a.value.string_value for a in chat.attributes}
        assert decoded["gen_ai.provider.name"] == "openai" and "gen_ai.system" not in decoded
        assert decoded["bearagent.model.provider"] == "openai-compatible"


def test_failures_carry_their_error_category_hooks_are_children_and_cost_is_counted(tmp_path: Path) -> None:
    """A failed tool call, a retried model call that failed (rate limit), a failed run (authentication), each span
    ERROR with `error.type` the error's category; a command hook's execution (PreToolUse) a `hook {event}` child of the run's span; the
    model calls' tokens and cost as attributes."""
    script = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: missing.md}}]
    usage: {input_tokens: 1000, output_tokens: 10}
  - error: {category: rate_limit, message: "slow down", retryable: true, retry_after_s: 0.01}
  - error: {category: authentication, message: "the key was revoked", retryable: false}
"""
    config = (
        "default_agent: main\ndefault_model: scripted\nmodels:\n"
        "  scripted: {provider: scripted, script: script.yaml, price: {input_usd_per_mtok: 2.0, output_usd_per_mtok: 8.0}}\n"
        "hooks:\n  PreToolUse:\n    - matcher: Read\n      hooks: [{type: command, command: 'true'}]\n"
    )
    root = scripted_workspace(
        tmp_path / "ws", script, agents={"main": agent_md("Main.", mode="primary", tools="[Read]")}, config=config
    )
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    memory = InMemorySpanExporter()
    live = LiveExport({}, exporter_factory=lambda: memory)
    host = PluginHost()
    host.register(_Sink(live), "otel-test")
    with open_workspace(root, env=isolated_env(home), plugins=host) as ws:
        result = ws.run_sync("read missing.md")
    assert result.status == "failed" and result.error is not None and result.error.category == "authentication"
    live.flush()
    spans = list(memory.get_finished_spans())

    run = by_name(spans, "invoke_agent main")
    assert run.status.status_code.name == "ERROR" and attrs(run)["error.type"] == "authentication"
    tool = by_name(spans, "execute_tool Read")
    assert tool.status.status_code.name == "ERROR" and attrs(tool)["error.type"]
    chats = sorted((s for s in spans if s.name.startswith("chat ")), key=lambda s: s.start_time or 0)
    assert [attrs(c).get("error.type") for c in chats] == [None, "rate_limit", "authentication"]
    assert attrs(chats[0])["gen_ai.usage.input_tokens"] == 1000
    assert attrs(chats[0])["bearagent.cost_usd"] == pytest.approx((1000 * 2.0 + 10 * 8.0) / 1_000_000)
    assert [attrs(c)["bearagent.model_call.attempt"] for c in chats] == [1, 1, 2]
    hook = by_name(spans, "hook PreToolUse")
    assert hook.parent is not None and run.context is not None and hook.parent.span_id == run.context.span_id
    assert attrs(hook)["bearagent.hook.handler_type"] == "command"
