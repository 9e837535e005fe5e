"""Schemathesis against a real `bearagent serve`: every operation of `/openapi.json` fuzzed with generated requests
(bounded, derandomized), checking no 5xx, a status code the schema documents and a body matching its schema.

Half of the generated cases get real ids in their path (the workspace, a session, a run, the action) so the
handlers past the 404 are reached too: sessions are created, runs started, cancelled and read. Excluded: the
workspace feed `GET /v1/workspaces/{ws_id}/events`, a live SSE stream that only ends at its idle timeout (its
frames are tested in test_http_feed.py). `GET /v1/runs/{run_id}/events` is fuzzed in its JSON mode (no `Accept:
text/event-stream` is generated)."""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.server.test_http_api import SCRIPT, TOKEN, start
from tests.support.config_ws import write
from tests.support.run_ws import agent_md, scripted_workspace


@functools.cache
def _schemathesis() -> tuple[Any, list[Any]]:
    """schemathesis and the checks, imported by the test rather than at collection (~1.5 s of CPU that every xdist
    worker would pay, since each collects every module)."""
    module: Any = pytest.importorskip("schemathesis", reason="schemathesis is not installed (uv sync --group dev)")
    core: Any = importlib.import_module("schemathesis.checks")
    openapi: Any = importlib.import_module("schemathesis.specs.openapi.checks")
    return module, [core.not_a_server_error, openapi.status_code_conformance, openapi.response_schema_conformance]


EXAMPLES = 25  # per operation: about 500 requests, ~10 s on 2 cores
EXCLUDED = {("GET", "/v1/workspaces/{ws_id}/events")}
STATUSES: list[str] = []  # "<METHOD> <path> <status>" of every request sent


@pytest.mark.slow  # the fuzzing: ~500 requests to a real server, CPU-heavy (docs/testing.md: the inner loop skips it)
def test_every_operation_answers_as_its_schema_says(tmp_path: Path) -> None:
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
    ws = scripted_workspace(tmp_path / "alpha", SCRIPT, agents=agents)
    write(ws, ".bearagent/actions/greet.md", "---\ndescription: Greets.\n---\nSay hello.\n")
    srv = start(tmp_path, config=f"workspaces:\n  - {{id: alpha, path: {ws}}}\n")
    try:
        with srv.client() as client:
            session = client.post("/v1/workspaces/alpha/sessions", json={}).json()["id"]
            run = client.post(f"/v1/sessions/{session}/runs", json={"prompt": "hi"}).json()["run_id"]
        real = {"ws_id": "alpha", "session_id": session, "run_id": run, "name": "greet"}
        schema = _schemathesis()[0].openapi.from_url(f"{srv.base}/openapi.json")
        failures: list[str] = []
        tested: list[str] = []
        for result in schema.get_all_operations():
            operation = result.ok()
            if (operation.method.upper(), operation.path) in EXCLUDED:
                continue
            tested.append(f"{operation.method.upper()} {operation.path}")
            try:
                fuzz(operation, srv.base, real)
            except Exception as exc:  # one report for every failing operation, not only the first
                failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
        assert len(tested) >= 19, tested
        assert not failures, "\n\n".join(failures)
        reached = {s.rsplit(" ", 1)[0] for s in STATUSES if not s.endswith(" 404")}
        assert len(reached) >= 15, sorted(reached)  # the real ids got past the 404s
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


def fuzz(operation: Any, base: str, real: dict[str, str]) -> None:
    headers = {"authorization": f"Bearer {TOKEN}"}

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure is reported as generated
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    @given(case=operation.as_strategy(), use_real=st.booleans())
    def check(case: Any, use_real: bool) -> None:
        if use_real and case.path_parameters:
            case.path_parameters = {k: real.get(k, v) for k, v in case.path_parameters.items()}
        response = case.call_and_validate(base_url=base, headers=headers, checks=_schemathesis()[1], timeout=20)
        STATUSES.append(f"{case.method} {case.path} {response.status_code}")

    check()


def test_the_schema_documents_the_error_shape_for_every_operation(tmp_path: Path) -> None:
    ws = scripted_workspace(tmp_path / "alpha", SCRIPT, agents={"main": agent_md("Main.", mode="primary")})
    srv = start(tmp_path, config=f"workspaces:\n  - {{id: alpha, path: {ws}}}\n")
    try:
        doc = httpx.get(f"{srv.base}/openapi.json").json()
        error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
        for path, item in doc["paths"].items():
            for method, operation in item.items():
                assert operation["responses"]["default"]["content"] == error, (method, path)
                if "422" in operation["responses"]:
                    assert operation["responses"]["422"]["content"] == error, (method, path)
        bad = httpx.post(
            f"{srv.base}/v1/workspaces/alpha/sessions",
            json={"title": 5},
            headers={"authorization": f"Bearer {TOKEN}"},
        )
        assert bad.status_code == 422
        assert set(bad.json()["error"]) == {"category", "code", "message", "retryable"}
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)
