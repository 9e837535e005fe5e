"""An MCP server's question mid-call answered from `/ui`, in a real headless chromium against a real `bearagent serve`
and a real MCP server that asks (tests/support/mcp_servers/asker.py; see test_ui.py for the browser): the stream's
`elicitation.requested` shows the server's form (a checkbox for its boolean, a text box for its string), Submit sends
the filled form, Decline the second question; the server gets both answers and the run finishes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.test_http_api import Server, start, wait_for
from tests.server.test_http_elicitation import asker_workspace, next_question
from tests.server.test_ui import browser, sign_in, text_of, until

pytestmark = [pytest.mark.network_local, pytest.mark.slow, pytest.mark.timeout(180)]
__all__ = ["browser"]  # the module-scoped chromium of test_ui.py


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("ui-elicit")
    root = asker_workspace(tmp)
    srv = start(tmp, config=f"workspaces:\n  - {{id: ws, path: {root}}}\n")
    try:
        yield srv
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


def test_a_servers_form_is_filled_and_answered_from_the_page(served: Server, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    with served.client() as c:
        sid = c.post("/v1/workspaces/ws/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "deploy it"}).json()["run_id"]
        first = next_question(c, run_id)
        sign_in(browser, served.base, f"#ws=ws&run={run_id}")
        until(lambda: "Really deploy to staging?" in text_of(browser, "#approvals"), "the server's question")
        assert "MCP server asker asks" in text_of(browser, "#approvals")
        proceed = browser.find_element(By.CSS_SELECTOR, "#approvals input[data-field='proceed']")
        assert proceed.get_attribute("type") == "checkbox"
        proceed.click()
        browser.find_element(By.CSS_SELECTOR, "#approvals input[data-field='reason']").send_keys("from the page")
        browser.find_element(By.CSS_SELECTOR, "#approvals button.answer-accept").click()
        until(lambda: "accept by local" in text_of(browser, "#approvals"), "the first answer shown")

        second = next_question(c, run_id, {str(first["approval_id"])})
        until(lambda: "Really deploy to prod?" in text_of(browser, "#approvals"), "the second question")
        decline = until(
            lambda: browser.find_element(
                By.CSS_SELECTOR, f"li[data-approval-id='{second['approval_id']}'] button.answer-decline"
            ),
            "the Decline button",
        )
        decline.click()
        until(lambda: "decline by local" in text_of(browser, "#approvals"), "the second answer shown")
        wait_for(c, run_id)
        until(lambda: "succeeded" in text_of(browser, "#run-title"), "the run to succeed", timeout=30)
        events = c.get(f"/v1/runs/{run_id}/events").json()["events"]
        results = [e["payload"]["result"]["content"] for e in events if e["event_type"] == "ToolCallCompleted"]
        assert "deploy staging: accept proceed=True reason=from the page" in results[0]
        assert "deploy prod: decline" in results[1]
        assert "elicitation.requested" in text_of(browser, "#events")
    logged = browser.get_log("browser")
    errors = [e for e in logged if e.get("level") == "SEVERE" and "favicon.ico" not in e.get("message", "")]
    assert not errors, errors  # no CSP violation, no script error
