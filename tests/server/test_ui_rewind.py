"""The rewind button and each tool call's file changes at `/ui`, in a real headless chromium against a real
`bearagent serve` (see test_ui.py for the browser): the Write call's created file is listed under its step and its diff shown on
demand, the preview lists what would change and changes nothing, a file changed since by someone else is named (and the rewind
refused) until the overwrite box is ticked, then the rewind puts the file back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.server.test_http_api import Server, start, wait_for
from tests.server.test_ui import browser, sign_in, text_of, until
from tests.support.run_ws import agent_md, scripted_workspace

pytestmark = [pytest.mark.network_local, pytest.mark.slow]
__all__ = ["browser"]  # the module-scoped chromium of test_ui.py


def _write(text: str) -> str:
    call = {"name": "Write", "arguments": {"file_path": "notes.txt", "content": text}}
    return f"  - tool_calls: [{json.dumps(call)}]\n"


SCRIPT = "turns:\n" + _write("first\n") + "  - text: wrote it\n"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    tmp = tmp_path_factory.mktemp("ui-rewind")
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}
    root = scripted_workspace(tmp / "notes", SCRIPT, agents=agents)
    race = scripted_workspace(tmp / "race", SCRIPT, agents=agents)  # the diff-while-redrawing test's own workspace
    srv = start(tmp, config=f"workspaces:\n  - {{id: notes, path: {root}}}\n  - {{id: race, path: {race}}}\n")
    try:
        yield srv, root
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


def test_file_changes_are_shown_and_the_rewind_button_puts_them_back(served: tuple[Server, Path], browser: Any) -> None:
    from selenium.webdriver.common.by import By

    srv, root = served
    notes = root / "notes.txt"
    with srv.client() as c:
        sid = c.post("/v1/workspaces/notes/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "write the notes"}).json()["run_id"]
        wait_for(c, run_id)
    assert notes.read_text() == "first\n"

    sign_in(browser, srv.base, f"#ws=notes&run={run_id}")
    until(lambda: "created notes.txt" in text_of(browser, "#timeline ul.files-changed"), "the Write call's file")
    until(lambda: browser.find_element(By.ID, "rewind-section").is_displayed(), "the rewind section")

    # the call's diff on demand (GET /v1/runs/{id}/diff), shown as text
    browser.find_element(By.CSS_SELECTOR, "#timeline button.show-diff").click()
    until(lambda: "+first" in text_of(browser, "#timeline .file-diffs pre.diff"), "the Write call's diff")
    assert "--- /dev/null" in text_of(browser, "#timeline .file-diffs pre.diff")
    assert "created notes.txt" in text_of(browser, "#timeline .file-diffs .file-diff")

    browser.find_element(By.ID, "rewind-preview").click()
    until(lambda: "will delete notes.txt" in text_of(browser, "#rewind-plan"), "the preview")
    assert "will rewind the conversation to before this run" in text_of(browser, "#rewind-plan")
    assert notes.read_text() == "first\n"  # a preview changes nothing

    notes.write_text("mine now\n")  # changed since by someone else
    browser.find_element(By.ID, "rewind-preview").click()
    until(lambda: "(changed since by someone else)" in text_of(browser, "#rewind-plan"), "the file named")
    until(lambda: browser.find_element(By.ID, "rewind-go").is_displayed(), "the rewind button")
    browser.find_element(By.ID, "rewind-go").click()
    until(lambda: "changed since the run by someone else: notes.txt" in text_of(browser, "#rewind-result"), "refusal")
    assert notes.read_text() == "mine now\n"

    browser.find_element(By.ID, "rewind-force").click()
    browser.find_element(By.ID, "rewind-go").click()
    until(lambda: "Rewound 1 file(s) and the conversation" in text_of(browser, "#rewind-result"), "the rewind done")
    assert not notes.exists()


# In the page, before its own script: the run's event stream waits until a diff is asked for, and the diff answers
# 1.5 s late, so the stream's catch-up redraws the timeline while the diff is loading (what a loaded machine does by
# chance: CI saw the diff never appear once).
_REDRAW_WHILE_LOADING = """
(() => {
  const real = window.fetch.bind(window);
  let asked;
  const diffAsked = new Promise((resolve) => { asked = resolve; });
  window.fetch = async (input, init) => {
    const url = typeof input === "string" ? input : input.url;
    if (/\\/v1\\/runs\\/[^/?]+\\/events$/.test(url)) await diffAsked;
    if (url.includes("/diff?")) {
      asked();
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
    return real(input, init);
  };
})();
"""


def test_a_diff_asked_for_while_the_timeline_is_redrawn_still_appears(
    served: tuple[Server, Path], browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    srv, _ = served
    with srv.client() as c:
        sid = c.post("/v1/workspaces/race/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "write the notes"}).json()["run_id"]
        wait_for(c, run_id)
    script = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _REDRAW_WHILE_LOADING})
    try:
        sign_in(browser, srv.base, f"#ws=race&run={run_id}")
        until(lambda: "created notes.txt" in text_of(browser, "#timeline ul.files-changed"), "the Write call's file")
        assert browser.find_elements(By.CSS_SELECTOR, "#events li") == []  # the stream is held until the click
        browser.find_element(By.CSS_SELECTOR, "#timeline button.show-diff").click()
        until(lambda: browser.find_elements(By.CSS_SELECTOR, "#events li"), "the stream's catch-up after the click")
        until(lambda: "+first" in text_of(browser, "#timeline .file-diffs pre.diff"), "the diff after the redraw")
    finally:
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
