"""The API key never reaches an ErrorInfo, an event or a log line, even when a server echoes it back."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from tests.support.providers import CANARY_KEY, collect, make_provider, simple_request
from tests.support.replay_server import ReplayServer

from bearagent.providers.errors import REDACTED, SecretRedactor

PROTOCOLS = ("openai_chat", "openai_responses", "anthropic_messages")


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


@pytest.mark.network_local
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_server_echoing_the_key_cannot_leak_it(
    replay: ReplayServer, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    custom_secret = "custom-header-secret-0123456789"
    caplog.set_level(logging.DEBUG)
    provider = make_provider(protocol, replay.route_url("echo-auth", protocol), headers={"X-Org-Token": custom_secret})
    outcome = collect(provider, simple_request())
    error = outcome.stream_error
    assert error.info.category == "authentication"
    # the server really did echo it (so the test can fail) ...
    assert (
        replay.requests[-1].headers.get("authorization", "").endswith(CANARY_KEY)
        or replay.requests[-1].headers.get("x-api-key") == CANARY_KEY
    )
    # ... and nothing of ours carries it
    surfaces = [
        error.info.model_dump_json(),
        str(error),
        repr(error),
        repr(error.__dict__),
        repr(outcome.events),
        caplog.text,
    ]
    for text in surfaces:
        assert CANARY_KEY not in text
        assert CANARY_KEY[3:20] not in text
    assert REDACTED in error.info.message
    assert "TEST_API_KEY" in error.info.message  # it names the variable to fix
    assert error.__cause__ is None and error.__suppress_context__


@pytest.mark.network_local
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_fixture_errors_with_a_canary_key_stay_clean(replay: ReplayServer, protocol: str) -> None:
    """Every HTTP error body of the protocol, in the project's own set and (when present) the shared one."""
    checked: set[str] = set()
    for (set_name, name), fixture in replay.fixtures.items():
        if fixture.protocol != protocol or "/error_" not in name:
            continue
        outcome = collect(make_provider(protocol, replay.base_url(fixture)), simple_request())
        dumped = outcome.stream_error.info.model_dump_json() + str(outcome.stream_error)
        assert CANARY_KEY not in dumped
        checked.add(set_name)
    assert "local" in checked  # the project's own error bodies are always there


def test_the_redactor_removes_the_key_bearer_tokens_and_key_shaped_values() -> None:
    redactor = SecretRedactor([CANARY_KEY, "hdr-secret-value", None, "abc"])
    text = (
        f"key={CANARY_KEY} Authorization: Bearer xyz.abc-123 other sk-proj-AbCdEf123456 "
        'header "x-api-key": "plainvalue99" hdr-secret-value abc'
    )
    out = redactor.redact(text)
    assert CANARY_KEY not in out
    assert "xyz.abc-123" not in out
    assert "sk-proj-AbCdEf123456" not in out
    assert "plainvalue99" not in out
    assert "hdr-secret-value" not in out
    assert out.endswith("abc")  # too short to be a secret: left alone
