"""The run inspector page at `/ui` in a real headless chromium against a real `bearagent serve`: the token is asked
for, the workspace's runs are listed, a waiting run's timeline shows up, Allow answers its approval and the run
finishes live; the approval buttons come from the stream's `approval.requested` (no listing read, no polling) and an
answer given elsewhere takes them away (`approval.resolved`); a tool result with markup in it is shown as text. Plus
the page's headers and `/v1/.../runs`.

The browser is Debian's `chromium` driven through its `chromedriver` (package `chromium-driver`) by Selenium: no
browser download. Without them the browser tests skip (naming the packages), except in CI (`CI=true`), where they
fail. `BEARAGENT_UI_SCREENSHOT=docs/ui-inspector.png uv run pytest tests/server/test_ui.py` refreshes the
screenshot committed to docs/ (`scripts/ui-screenshot.sh`); otherwise it is written to the test's tmp dir only.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.test_http_api import TOKEN, Server, start, wait_for
from tests.server.test_http_approvals import until_waiting
from tests.support.config_ws import write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

pytestmark = [pytest.mark.network_local, pytest.mark.slow]

WRITE = """
turns:
  - text: "Writing the notes now."
    tool_calls: [{name: Write, arguments: {file_path: notes.txt, content: "release notes\\n"}}]
  - text: "Done: notes.txt is written."
"""
XSS = """
turns:
  - text: "Reading <b>bold?</b> the page."
    tool_calls: [{name: Read, arguments: {file_path: page.html}}]
  - text: "It had an <img src=x onerror=window.__pwnedFinal=1> tag."
"""
# the first turn is held until the test creates RELEASE beside the script (once the page follows the run's stream):
# a fixed delay raced the browser's sign-in, which a loaded machine can make slower than the delay
RELEASE = "release-later"  # as named in LATER
LATER = """
turns:
  - text: "Thinking first, then writing."
    wait_for_file: release-later
    wait_timeout_ms: 120000
    tool_calls: [{name: Write, arguments: {file_path: later.txt, content: "later\\n"}}]
  - text: "Wrote later.txt."
"""
PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def _browser_binaries() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium and driver:
        return chromium, driver
    reason = "needs Debian's chromium and chromium-driver packages (apt-get install chromium chromium-driver)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    tmp = tmp_path_factory.mktemp("ui")
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}
    ws = scripted_workspace(tmp / "notes", WRITE, agents=agents, config=CONFIG + "permission_mode: default\n")
    xss = scripted_workspace(tmp / "xss", XSS, agents=agents)
    write(xss, "page.html", PAYLOAD + "\n")
    later = scripted_workspace(tmp / "later", LATER, agents=agents, config=CONFIG + "permission_mode: default\n")
    config = f"""
workspaces:
  - {{id: notes, path: {ws}, name: Release notes}}
  - {{id: xss, path: {xss}}}
  - {{id: later, path: {later}}}
"""
    srv = start(tmp, config=config)
    try:
        yield srv, ws
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium, driver_path = _browser_binaries()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_script_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()


def until(check: Callable[[], object], what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as exc:  # a stale element while the page re-renders: look again
            last = exc
        else:
            if last:
                return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def text_of(driver: Any, css: str) -> str:
    return str(driver.execute_script(f"const n = document.querySelector({css!r}); return n ? n.textContent : '';"))


def sign_in(driver: Any, base: str, fragment: str = "") -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{base}/ui{fragment}")
    driver.execute_script("sessionStorage.clear()")
    driver.get("about:blank")  # a fresh load, not a same-document hash change
    driver.get(f"{base}/ui{fragment}")
    box = until(
        lambda: driver.find_element(By.ID, "token").is_displayed() and driver.find_element(By.ID, "token"),
        "the token box",
    )
    box.send_keys(TOKEN)
    driver.find_element(By.ID, "token-save").click()
    until(lambda: driver.find_element(By.ID, "app").is_displayed(), "the app after signing in")
    assert driver.execute_script("return sessionStorage.getItem('bearagent.token')") == TOKEN


def test_the_page_and_its_assets_are_served_with_a_strict_policy(server: tuple[Server, Path]) -> None:
    srv, _ = server
    with httpx.Client(base_url=srv.base, timeout=30) as anonymous:
        page = anonymous.get("/ui")  # the page itself needs no token: it asks for one
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert csp.startswith("default-src 'self'") and "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert "http" not in page.text.replace("http-equiv", "")  # no CDN, no external fonts
        for asset, kind in (("inspector.js", "text/javascript"), ("inspector.css", "text/css")):
            served = anonymous.get(f"/ui/{asset}")
            assert served.status_code == 200 and served.headers["content-type"].startswith(kind)
            assert served.headers["content-security-policy"] == csp
            assert "innerHTML" not in served.text and "://" not in served.text
        assert anonymous.get("/ui/../app.py").status_code == 404
        assert anonymous.get("/ui/other.js").status_code == 404
        assert anonymous.get("/v1/workspaces/notes/runs").status_code == 401


def test_runs_of_a_workspace_are_listed_newest_first(server: tuple[Server, Path]) -> None:
    srv, _ = server
    with srv.client() as c:
        sid = c.post("/v1/workspaces/xss/sessions", json={}).json()["id"]
        first = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "read it"}).json()["run_id"]
        wait_for(c, first)
        runs = c.get("/v1/workspaces/xss/runs").json()["runs"]
        assert runs[0]["run_id"] == first and runs[0]["budgets"]["max_tool_calls"]["used"] == 1
        assert c.get("/v1/workspaces/nowhere/runs").status_code == 404
        assert c.get("/v1/workspaces/xss/runs?limit=0").status_code == 422
        # search: the model's words and the tool result's, with the filters (the module's other tests may have run
        # the same script in this workspace before this test, so their runs match too: this test looks for its own)
        everything = [r["run_id"] for r in runs]
        matches = {r["run_id"]: r for r in c.get("/v1/workspaces/xss/runs", params={"q": "bold page"}).json()["runs"]}
        assert set(matches) == set(everything), "every run of this script says 'bold' and 'page'"
        found = matches[first]
        assert "[bold]" in found["match"]["snippet"]
        assert found["match"]["event_type"] in ("ModelCallCompleted", "RunSucceeded")
        assert c.get("/v1/workspaces/xss/runs", params={"q": "pwned"}).json()["runs"][0]["run_id"] == first
        assert c.get("/v1/workspaces/xss/runs", params={"q": "bold", "status": "failed"}).json()["runs"] == []
        assert c.get("/v1/workspaces/xss/runs", params={"q": "bold", "since": "2999-01-01T00:00:00Z"}).json() == {
            "runs": []
        }
        by_main = [r["run_id"] for r in c.get("/v1/workspaces/xss/runs", params={"agent": "main"}).json()["runs"]]
        assert by_main == everything
        assert c.get("/v1/workspaces/xss/runs", params={"agent": "nobody"}).json()["runs"] == []
        refused = c.get("/v1/workspaces/xss/runs", params={"q": "?!"})
        assert refused.status_code in (400, 422) and "no word to look for" in refused.text
        assert c.get("/v1/workspaces/notes/runs", params={"q": "bold"}).json()["runs"] == [], "another workspace"


def test_the_search_box_lists_the_runs_that_match(server: tuple[Server, Path], browser: Any) -> None:
    from selenium.webdriver.common.by import By

    srv, _ = server
    with srv.client() as c:
        sid = c.post("/v1/workspaces/xss/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "read it"}).json()["run_id"]
        wait_for(c, run_id)
    sign_in(browser, srv.base, "#ws=xss")
    until(lambda: browser.find_element(By.CSS_SELECTOR, f"button[data-run-id='{run_id}']"), "the run listed")
    box = browser.find_element(By.ID, "run-search")
    box.send_keys("onerror")
    browser.find_element(By.ID, "run-search-go").click()
    until(lambda: "[onerror]" in text_of(browser, "#runs"), "the matching run with its snippet")
    assert not browser.execute_script("return window.__pwned || window.__pwnedFinal || null")
    box.clear()
    box.send_keys("nosuchwordanywhere")
    browser.find_element(By.ID, "run-search-go").click()
    until(lambda: "No run matches" in text_of(browser, "#runs"), "the empty result")


def test_a_waiting_run_is_shown_live_and_allowed_from_the_page(
    server: tuple[Server, Path], browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    srv, root = server
    with srv.client() as c:
        sid = c.post("/v1/workspaces/notes/sessions", json={"title": "notes"}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "write the notes"}).json()["run_id"]
        until_waiting(c, run_id)
        sign_in(browser, srv.base)
        assert browser.find_element(By.ID, "workspace").get_attribute("value") == "notes"
        link = until(lambda: browser.find_element(By.CSS_SELECTOR, f"button[data-run-id='{run_id}']"), "the run listed")
        assert "waiting" in link.text
        assert "write the notes" in link.text  # the prompt, so runs can be told apart (issue 32)
        link.click()
        until(lambda: "Writing the notes now." in text_of(browser, "#timeline"), "the model call's text")
        timeline = text_of(browser, "#timeline")
        assert "Write" in timeline and "notes.txt" in timeline and "waiting" in timeline
        until(lambda: "max_tool_calls" in text_of(browser, "#budgets"), "the budgets")
        allow = until(lambda: browser.find_element(By.CSS_SELECTOR, "button.answer-allow_once"), "the Allow button")
        assert "Write" in text_of(browser, "#approvals") and "notes.txt" in text_of(browser, "#approvals")
        allow.click()
        until(
            lambda: not browser.find_elements(By.CSS_SELECTOR, "button.answer"), "the answered approval's buttons to go"
        )
        until(lambda: "succeeded" in text_of(browser, "#run-title"), "the run to succeed", timeout=30)
        until(lambda: "Done: notes.txt is written." in text_of(browser, "#timeline"), "the second model call")
        assert "allow_once by local" in text_of(browser, "#approvals")
        assert text_of(browser, "#final") == "Done: notes.txt is written."
        assert (root / "notes.txt").read_text() == "release notes\n"
        assert c.get(f"/v1/runs/{run_id}").json()["status"] == "succeeded"
        # the stream delivered the run's events live: the continued run's events were counted
        until(lambda: int(text_of(browser, "#event-count") or 0) >= 3, "stream events")
        assert "run.succeeded" in text_of(browser, "#events")
        shot = tmp_path / "ui-inspector.png"
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1280, min(max(int(height) + 40, 900), 1800))
        browser.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        target = os.environ.get("BEARAGENT_UI_SCREENSHOT")
        if target:
            shutil.copyfile(shot, target)
    logged = browser.get_log("browser")
    errors = [e for e in logged if e.get("level") == "SEVERE" and "favicon.ico" not in e.get("message", "")]
    assert not errors, errors  # no CSP violation, no script error


def fetched(driver: Any, path_end: str) -> int:
    """How many requests the page made whose URL ends with `path_end` (its completed fetches)."""
    script = "return performance.getEntriesByType('resource').filter((e) => e.name.endsWith(arguments[0])).length"
    return int(driver.execute_script(script, path_end))


def test_approval_buttons_come_from_the_stream_and_an_answer_elsewhere_removes_them(
    server: tuple[Server, Path], browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    srv, notes = server
    with srv.client() as c:
        sid = c.post("/v1/workspaces/later/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "write later"}).json()["run_id"]
        # the page is open on the run before it asks: the model's turn is held until the page follows the stream
        sign_in(browser, srv.base, f"#ws=later&run={run_id}")
        until(lambda: "live" in text_of(browser, "#connection"), "the stream to be followed")
        assert c.get(f"/v1/runs/{run_id}").json()["status"] in ("queued", "running")
        assert not browser.find_elements(By.CSS_SELECTOR, "button.answer")
        (notes.parent / "later" / ".bearagent" / RELEASE).touch()
        allow = until(lambda: browser.find_element(By.CSS_SELECTOR, "button.answer-allow_once"), "the Allow button")
        assert allow.is_displayed()
        approvals = text_of(browser, "#approvals")
        assert "Write" in approvals and "later.txt" in approvals and "waiting for an answer" in approvals
        assert "rule: Edit(/later.txt)" in approvals  # the rule "Always allow" would add, from the event
        assert [b.text for b in browser.find_elements(By.CSS_SELECTOR, "#approvals button")] == [
            "Allow",
            "Always allow",
            "Deny",
        ]
        assert "approval.requested" in text_of(browser, "#events")
        # nothing was polled: the page never read the approvals listing, and while the run waits it reads nothing
        assert fetched(browser, f"/v1/runs/{run_id}/approvals") == 0
        until(lambda: "waiting" in text_of(browser, "#run-title"), "the run record re-read after the event")
        time.sleep(0.5)  # the steps' read that follows it
        reads = fetched(browser, f"/v1/runs/{run_id}")
        time.sleep(3)
        assert fetched(browser, f"/v1/runs/{run_id}") == reads, "the page polled a waiting run"
        assert browser.find_elements(By.CSS_SELECTOR, "button.answer-allow_once")

        # answered somewhere else (another client): the stream's approval.resolved takes the buttons away here
        (pending,) = c.get(f"/v1/runs/{run_id}/approvals").json()["approvals"]
        assert pending["approval_id"] == browser.find_element(By.CSS_SELECTOR, "li.approval").get_attribute(
            "data-approval-id"
        )
        assert (
            c.post(f"/v1/runs/{run_id}/approvals/{pending['approval_id']}", json={"decision": "deny"}).status_code
            == 202
        )
        until(lambda: not browser.find_elements(By.CSS_SELECTOR, "button.answer"), "the buttons to go")
        until(lambda: "deny by local" in text_of(browser, "#approvals"), "the answer shown")
        assert "approval.resolved" in text_of(browser, "#events")
        until(lambda: "succeeded" in text_of(browser, "#run-title"), "the run to finish", timeout=30)
        assert fetched(browser, f"/v1/runs/{run_id}/approvals") == 0
    logged = browser.get_log("browser")
    errors = [e for e in logged if e.get("level") == "SEVERE" and "favicon.ico" not in e.get("message", "")]
    assert not errors, errors


def test_markup_in_run_text_is_shown_as_text(server: tuple[Server, Path], browser: Any) -> None:
    srv, _ = server
    with srv.client() as c:
        sid = c.post("/v1/workspaces/xss/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "read the page"}).json()["run_id"]
        wait_for(c, run_id)
    sign_in(browser, srv.base, f"#ws=xss&run={run_id}")
    until(lambda: "onerror" in text_of(browser, "#timeline pre.result"), "the tool result")
    result = text_of(browser, "#timeline pre.result")
    assert '<img src=x onerror="window.__pwned=1">' in result and "<script>" in result
    assert "<b>bold?</b>" in text_of(browser, "#timeline")
    assert "<img src=x onerror=window.__pwnedFinal=1>" in text_of(browser, "#final")
    counts = browser.execute_script(
        "return [document.querySelectorAll('img').length, document.querySelectorAll('b').length,"
        " document.querySelectorAll('main script').length, window.__pwned, window.__pwnedFinal]"
    )
    assert counts == [0, 0, 0, None, None]
