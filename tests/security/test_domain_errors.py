"""Public errors keep only what may be shown: no secrets in details, bounded sizes, consistent category/code."""

from __future__ import annotations

import math
from types import MappingProxyType

import pytest
from pydantic import ValidationError

from bearagent.domain.errors import (
    ERROR_CATEGORIES,
    MAX_DETAIL_KEY_CHARS,
    MAX_DETAIL_KEYS,
    MAX_DETAIL_VALUE_CHARS,
    MAX_MESSAGE_CHARS,
    NEVER_RETRYABLE,
    BearAgentError,
    DetailValue,
    ErrorInfo,
)
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import ToolCallPart
from bearagent.domain.run_events import parse_run_event_payload


def info(**fields: object) -> ErrorInfo:
    base: dict[str, object] = {"category": "tool", "code": "tool.failed", "message": "the tool failed"}
    base.update(fields)
    return ErrorInfo.model_validate(base)


# ---- sensitive detail keys ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "token",
        "access_token",
        "X-Refresh-Token",
        "TOKEN",
        "Authorization",
        "proxy_authorization",
        "cookie",
        "Set-Cookie",
        "password",
        "db_PassWord",
        "secret",
        "client_secret",
        "api_key",
        "OPENAI_API_KEY",
        "apikey",
        "x-api-key",
        "credentials",
    ],
)
def test_sensitive_detail_keys_are_rejected_in_any_case(key: str) -> None:
    with pytest.raises(ValidationError, match=r"looks sensitive .*secrets never go into errors") as caught:
        info(details={key: "sk-live-123"})
    assert "sk-live-123" not in str(caught.value)  # the rejected value itself is never echoed
    details: dict[str, DetailValue] = {key: "value"}
    with pytest.raises(ValidationError, match="looks sensitive"):
        ErrorInfo.of("network", "failed", "boom", **details)  # pyright: ignore[reportArgumentType]


def test_rejected_input_is_never_echoed_even_when_nested() -> None:
    # Pydantic normally prints the rejected input in the error text; at the domain boundary it must not, because a
    # log line of the error would leak exactly what was rejected.
    secret = "sk-live-NESTED-SECRET"
    with pytest.raises(BearAgentError) as caught:
        parse_run_event_payload(
            "RunFailed",
            2,
            {"error": {"category": "tool", "code": "tool.x", "message": "m", "details": {"Token": secret}}},
        )
    cause = caught.value.__cause__
    assert isinstance(cause, ValidationError)
    assert "looks sensitive" in str(cause)
    assert secret not in str(cause)
    assert secret not in str(caught.value)
    with pytest.raises(ValidationError) as invalid_args:
        ToolCallPart.model_validate(
            {
                "tool_call_id": str(ToolCallId.new()),
                "name": "Fetch",
                "arguments": {"headers": {"auth": secret, "n": math.nan}},
            }
        )
    assert "non-finite float" in str(invalid_args.value)
    assert secret not in str(invalid_args.value)


@pytest.mark.parametrize("key", ["status", "url_host", "retry_count", "attempt", "provider", "model", "tokens_used"])
def test_ordinary_detail_keys_are_kept(key: str) -> None:
    if "token" in key:
        # "tokens_used" contains "token": the rule is deliberately blunt, better a renamed key than a leaked secret.
        with pytest.raises(ValidationError, match="looks sensitive"):
            info(details={key: 1})
        return
    error = info(details={key: 1})
    assert error.details == {key: 1}


# ---- value types, counts, lengths -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_float_details_are_rejected(bad: float) -> None:
    with pytest.raises(ValidationError, match=r"details\['ratio'\] is a non-finite float"):
        info(details={"ratio": bad})


@pytest.mark.parametrize("bad", [[1], {"a": 1}, b"raw", object(), (1,)])
def test_nested_or_non_scalar_detail_values_are_rejected(bad: object) -> None:
    with pytest.raises(ValidationError, match=r"only str, int, float, bool and null are allowed"):
        info(details={"body": bad})


def test_scalar_detail_values_are_kept_and_read_only() -> None:
    error = info(details={"status": 429, "ratio": 0.5, "ok": False, "host": "api.example.com", "none": None})
    assert dict(error.details) == {"status": 429, "ratio": 0.5, "ok": False, "host": "api.example.com", "none": None}
    assert isinstance(error.details, MappingProxyType)
    with pytest.raises(TypeError):
        error.details["status"] = 500  # type: ignore[index]
    assert ErrorInfo.model_validate_json(error.model_dump_json()) == error


def test_too_many_detail_keys_are_rejected() -> None:
    info(details={f"k{i}": i for i in range(MAX_DETAIL_KEYS)})
    with pytest.raises(ValidationError, match=f"details has {MAX_DETAIL_KEYS + 1} keys; at most {MAX_DETAIL_KEYS}"):
        info(details={f"k{i}": i for i in range(MAX_DETAIL_KEYS + 1)})


def test_oversized_detail_keys_and_values_are_rejected() -> None:
    with pytest.raises(ValidationError, match=f"is longer than {MAX_DETAIL_KEY_CHARS} characters"):
        info(details={"k" * (MAX_DETAIL_KEY_CHARS + 1): 1})
    info(details={"body": "x" * MAX_DETAIL_VALUE_CHARS})
    with pytest.raises(ValidationError, match=rf"details\['body'\] is longer than {MAX_DETAIL_VALUE_CHARS}"):
        info(details={"body": "x" * (MAX_DETAIL_VALUE_CHARS + 1)})


@pytest.mark.parametrize("key", ["", 1, None])
def test_detail_keys_must_be_non_empty_strings(key: object) -> None:
    with pytest.raises(ValidationError, match="details keys must be non-empty strings"):
        info(details={key: 1})


def test_details_must_be_an_object() -> None:
    with pytest.raises(ValidationError, match="details must be an object, got list"):
        info(details=[("status", 1)])


def test_oversized_message_is_rejected_by_the_model_and_cut_by_the_shorthand() -> None:
    with pytest.raises(ValidationError, match=f"at most {MAX_MESSAGE_CHARS} characters"):
        info(message="x" * (MAX_MESSAGE_CHARS + 1))
    with pytest.raises(ValidationError, match="at least 1 character"):
        info(message="")
    cut = ErrorInfo.of("network", "reset", "y" * (MAX_MESSAGE_CHARS * 3))
    assert len(cut.message) == MAX_MESSAGE_CHARS
    assert cut.message.endswith("…")


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        info(raw_response="<html>...")


# ---- category / code -------------------------------------------------------------------------------------------


def test_code_must_belong_to_its_category() -> None:
    with pytest.raises(ValidationError, match=r"code 'network\.reset' does not belong to category 'tool'"):
        info(code="network.reset")


@pytest.mark.parametrize("code", ["tool", "Tool.Failed", "tool.", ".failed", "tool failed", "tool.fa-iled"])
def test_code_must_look_like_category_dot_specific(code: str) -> None:
    with pytest.raises(ValidationError, match=r"must look like '<category>\.<specific>'"):
        info(code=code)


def test_unknown_category_is_rejected() -> None:
    with pytest.raises(ValidationError, match="category"):
        info(category="weird", code="weird.thing")


def test_shorthand_builds_the_code_from_the_category() -> None:
    error = ErrorInfo.of("rate_limit", "exceeded", "slow down", retryable=True, retry_after_s=2.5, status=429)
    assert (error.category, error.code, error.retryable, error.retry_after_s) == (
        "rate_limit",
        "rate_limit.exceeded",
        True,
        2.5,
    )
    assert error.details == {"status": 429}


# ---- retryable -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("category", sorted(NEVER_RETRYABLE))
def test_never_retryable_categories_refuse_retryable(category: str) -> None:
    with pytest.raises(ValidationError, match=f"category '{category}' is never retryable"):
        info(category=category, code=f"{category}.x", retryable=True)
    assert info(category=category, code=f"{category}.x").retryable is False


@pytest.mark.parametrize("category", sorted(ERROR_CATEGORIES - NEVER_RETRYABLE))
def test_other_categories_may_be_retryable(category: str) -> None:
    assert info(category=category, code=f"{category}.x", retryable=True).retryable


def test_retry_after_needs_a_retryable_error_and_is_bounded() -> None:
    with pytest.raises(ValidationError, match="retry_after_s only makes sense on a retryable error"):
        info(category="server", code="server.down", retry_after_s=1.0)
    with pytest.raises(ValidationError, match="retry_after_s"):
        info(category="server", code="server.down", retryable=True, retry_after_s=math.inf)
    with pytest.raises(ValidationError, match="retry_after_s"):
        info(category="server", code="server.down", retryable=True, retry_after_s=-1)


# ---- BearAgentError --------------------------------------------------------------------------------------------


def test_bear_agent_error_keeps_the_cause_locally_but_shows_only_public_data() -> None:
    secret_url = "https://api.example.com/v1?key=sk-live-SECRET"
    error = ErrorInfo.of("network", "unreachable", "the model server could not be reached", host="api.example.com")

    def adapter() -> None:
        try:
            raise ConnectionError(f"failed to connect to {secret_url}")
        except ConnectionError as exc:
            raise BearAgentError(error, hint="check that the server is running") from exc

    with pytest.raises(BearAgentError) as caught:
        adapter()
    raised = caught.value
    assert isinstance(raised.__cause__, ConnectionError)  # for local debugging
    assert secret_url in str(raised.__cause__)
    assert str(raised) == "the model server could not be reached"
    assert (raised.category, raised.code, raised.hint) == (
        "network",
        "network.unreachable",
        "check that the server is running",
    )
    assert "SECRET" not in raised.info.model_dump_json()  # what gets stored or shown


def test_error_info_is_frozen() -> None:
    error = info()
    with pytest.raises(ValidationError, match="frozen"):
        error.message = "changed"  # pyright: ignore[reportAttributeAccessIssue]
