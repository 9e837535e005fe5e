"""Tool-name projection, argument parsing, error classification, retry-after and cost."""

from __future__ import annotations

import email.utils
import time

import pytest

from bearagent.domain.budgets import TokenUsage
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.pricing import cost_microusd
from bearagent.domain.specs import ModelPrice
from bearagent.providers._base import parse_arguments
from bearagent.providers.errors import (
    CallContext,
    ProviderFailure,
    SecretRedactor,
    classify_failure,
    is_context_overflow,
    length_stop_category,
    parse_retry_after,
)
from bearagent.providers.tool_names import SAFE_NAME_RE, ToolNameMap

CTX = CallContext("OpenAI", "workspace/gpt", "gpt-5", "https://api.openai.com/v1", "OPENAI_API_KEY", 120.0)


def test_legal_names_pass_unchanged_and_illegal_ones_are_projected_reversibly() -> None:
    names = ["Read", "mcp.time.now", "mcp_time_now", "Bash(git status)", "x" * 80, "ünïcode", "a/b", "a.b"]
    mapping = ToolNameMap(names)
    safe = {name: mapping.to_provider(name) for name in names}
    assert safe["Read"] == "Read"
    assert safe["mcp_time_now"] == "mcp_time_now"  # the legal name keeps its spelling
    assert safe["mcp.time.now"] != "mcp_time_now" and safe["mcp.time.now"].startswith("mcp_time_now_")
    assert safe["Bash(git status)"] == "Bash_git_status_"
    assert len(safe["x" * 80]) == 64
    assert len(set(safe.values())) == len(names)  # no collisions (a/b and a.b both want a_b)
    for name, projected in safe.items():
        assert SAFE_NAME_RE.match(projected), projected
        assert mapping.to_internal(projected) == name
    assert ToolNameMap(reversed(names)).items() == mapping.items()  # order-independent, deterministic


def test_an_invented_name_comes_back_unchanged() -> None:
    mapping = ToolNameMap(["mcp.time.now"])
    assert mapping.to_internal("delete_everything") == "delete_everything"


@pytest.mark.parametrize(
    ("raw", "args", "invalid"),
    [
        ('{"a": 1}', {"a": 1}, None),
        ("", {}, None),
        ("   ", {}, None),
        ('{"a": ', {}, "not valid JSON"),
        ("[1, 2]", {}, "must be a JSON object, got list"),
        ('"text"', {}, "got str"),
        ("[" * 5000 + "]" * 5000, {}, "nest too deeply"),
    ],
)
def test_parse_arguments_never_raises(raw: str, args: dict[str, object], invalid: str | None) -> None:
    parsed, why = parse_arguments(raw)
    assert parsed == args
    if invalid is None:
        assert why is None
    else:
        assert why is not None and invalid in why


def _classify(**fields: object) -> tuple[str, bool, float | None]:
    failure = ProviderFailure(**fields)  # type: ignore[arg-type]
    info = classify_failure(failure, CTX, SecretRedactor())
    return info.category, info.retryable, info.retry_after_s


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"kind": "status", "message": "bad key", "status": 401}, ("authentication", False, None)),
        ({"kind": "status", "message": "no", "status": 403}, ("permission", False, None)),
        ({"kind": "status", "message": "no model", "status": 404}, ("invalid_request", False, None)),
        ({"kind": "status", "message": "bad", "status": 422}, ("invalid_request", False, None)),
        (
            {"kind": "status", "message": "slow", "status": 429, "headers": {"retry-after-ms": "1500"}},
            ("rate_limit", True, 1.5),
        ),
        (
            {"kind": "status", "message": "q", "status": 429, "error_code": "insufficient_quota"},
            ("quota", False, None),
        ),
        ({"kind": "status", "message": "pay", "status": 402}, ("quota", False, None)),
        ({"kind": "status", "message": "busy", "status": 503}, ("overloaded", True, None)),
        ({"kind": "status", "message": "busy", "status": 529}, ("overloaded", True, None)),
        ({"kind": "status", "message": "gw", "status": 504}, ("timeout", True, None)),
        ({"kind": "status", "message": "boom", "status": 502}, ("server", True, None)),
        (
            {"kind": "status", "message": "boom", "status": 500, "headers": {"x-should-retry": "false"}},
            ("server", False, None),
        ),
        (
            {
                "kind": "status",
                "message": "prompt is too long: 9 > 8",
                "status": 400,
                "error_type": "invalid_request_error",
            },
            ("context_overflow", False, None),
        ),
        ({"kind": "stream", "message": "x", "error_type": "overloaded_error"}, ("overloaded", True, None)),
        ({"kind": "stream", "message": "x", "error_code": "invalid_prompt"}, ("invalid_request", False, None)),
        ({"kind": "stream", "message": "x", "error_code": "image_too_large"}, ("invalid_request", False, None)),
        ({"kind": "stream", "message": "x", "error_code": "bio_policy"}, ("content_filter", False, None)),
        ({"kind": "stream", "message": "x"}, ("server", True, None)),
        ({"kind": "timeout", "message": "t"}, ("timeout", True, None)),
        ({"kind": "network", "message": "refused"}, ("network", True, None)),
    ],
)
def test_error_classification(fields: dict[str, object], expected: tuple[str, bool, float | None]) -> None:
    assert _classify(**fields) == expected


def test_every_error_message_says_how_to_fix_it() -> None:
    info = classify_failure(ProviderFailure(kind="status", message="bad key", status=401), CTX, SecretRedactor())
    assert "OPENAI_API_KEY" in info.message and "workspace/gpt" in info.message and "HTTP 401" in info.message
    quota = classify_failure(
        ProviderFailure(kind="status", message="q", status=429, error_code="insufficient_quota"), CTX, SecretRedactor()
    )
    assert "retrying will not help" in quota.message
    assert quota.details["provider_code"] == "insufficient_quota"


# What servers say when a request does not fit in the context window (domain/overflow.py), as (status, error type,
# error code, message). Every one is `context_overflow`, with the hint about the conversation's length.
OVERFLOWS = {
    "openai code": (400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length..."),
    "openai responses": (400, "invalid_request_error", None, "Your input exceeds the context window of this model."),
    "anthropic prompt": (400, "invalid_request_error", None, "prompt is too long: 214392 tokens > 200000 maximum"),
    "anthropic input + max_tokens": (
        400,
        "invalid_request_error",
        None,
        "input length and `max_tokens` exceed context limit: 196309 + 8192 > 200000, decrease input length",
    ),
    "llama-server": (
        400,
        "exceed_context_size_error",
        "400",
        "request (433 tokens) exceeds the available context size (256 tokens), try increasing it",
    ),
    "llama-server in a 200 stream": (
        None,
        "exceed_context_size_error",
        None,
        "request (433 tokens) exceeds the available context size",
    ),
    "vllm": (
        400,
        "BadRequestError",
        "400",
        "This model's maximum context length is 4096 tokens. However, you requested 1024 output tokens and your "
        "prompt contains at least 3073 input tokens, for a total of at least 4097 tokens.",
    ),
    "ollama": (400, "invalid_request_error", None, "the input length exceeds the context length"),
    "ollama as a 500": (500, "api_error", None, "the input length exceeds the context length"),
    "lm studio": (
        400,
        None,
        None,
        "Trying to keep the first 14538 tokens when context the overflows. However, the model is loaded with "
        "context length of only 2048 tokens",
    ),
    "lm studio n_keep": (
        400,
        None,
        None,
        "The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= "
        "n_ctx: 4096).",
    ),
    "gemini": (
        400,
        "INVALID_ARGUMENT",
        None,
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    ),
    "tgi": (
        422,
        "validation",
        None,
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens",
    ),
    "bedrock-like": (400, None, None, "Input is too long for requested model."),
}


@pytest.mark.parametrize("said", sorted(OVERFLOWS))
def test_a_context_overflow_is_classified_in_the_words_of_every_server(said: str) -> None:
    status, error_type, error_code, message = OVERFLOWS[said]
    failure = ProviderFailure(
        kind="status" if status is not None else "stream",
        message=message,
        status=status,
        error_type=error_type,
        error_code=error_code,
    )
    info = classify_failure(failure, CTX, SecretRedactor())
    assert (info.category, info.code, info.retryable) == ("context_overflow", "context_overflow.exceeded", False)
    assert info.message.startswith("The conversation is longer than the context window of OpenAI")
    assert "start a new session" in info.message and "Check the model entry's options" not in info.message
    assert is_context_overflow(info)


@pytest.mark.parametrize(
    ("status", "error_type", "message"),
    [
        (400, "invalid_request_error", "Invalid 'messages[1].content': string too long. Expected a maximum length"),
        (400, "invalid_request_error", "'temperature' must be at most 2"),
        (500, "api_error", "model runner has unexpectedly stopped; context length unknown"),  # loose words, a 500
        (404, "not_found_error", "model 'qwen2.5:0.5b' not found"),
    ],
)
def test_an_error_that_is_not_about_the_window_is_not_called_an_overflow(
    status: int, error_type: str, message: str
) -> None:
    info = classify_failure(
        ProviderFailure(kind="status", message=message, status=status, error_type=error_type), CTX, SecretRedactor()
    )
    assert info.category != "context_overflow" and not is_context_overflow(info)


def test_is_context_overflow_also_reads_a_plugins_invalid_request_in_an_overflows_words() -> None:
    assert not is_context_overflow(ErrorInfo.of("invalid_request", "rejected", "unknown field 'x'"))
    assert is_context_overflow(ErrorInfo.of("invalid_request", "rejected", "This model's maximum context length is 8k"))
    assert not is_context_overflow(ErrorInfo.of("server", "error", "maximum context length"))  # only what was refused


def test_a_length_stop_short_of_the_limit_sent_is_the_window_filling_up() -> None:
    assert length_stop_category(200, TokenUsage(input_tokens=249, output_tokens=7)) == "context_overflow"
    assert length_stop_category(16, TokenUsage(input_tokens=14, output_tokens=16)) == "max_output_tokens"
    assert length_stop_category(None, TokenUsage(output_tokens=7)) == "max_output_tokens"  # no limit was sent
    assert length_stop_category(200, TokenUsage()) == "max_output_tokens"  # the server reported no usage


def test_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    value = parse_retry_after({"retry-after": date})
    assert value is not None and 25 <= value <= 31
    assert parse_retry_after({"retry-after": "999999999"}) == 86_400.0


def test_cost_in_microusd() -> None:
    usage = TokenUsage(input_tokens=18, output_tokens=23, cache_read_tokens=4)
    price = ModelPrice(input_usd_per_mtok=0.25, output_usd_per_mtok=2.0)
    assert cost_microusd(usage, price) == 51  # 4.5 + 46 = 50.5, rounded up
    assert cost_microusd(usage, None) == 0
    assert cost_microusd(TokenUsage(input_tokens=1_000_000), ModelPrice(input_usd_per_mtok=3.0)) == 3_000_000
