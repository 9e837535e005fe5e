"""Workspace records through real `bearagent serve` processes: recorded in the workspace's store at start, the same
`workspace_id` and `created_at` after a restart, `updated_at` moved when the server config changes the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.server.test_http_api import SCRIPT, start
from tests.support.run_ws import agent_md, scripted_workspace

pytestmark = pytest.mark.timeout(120)  # three real server processes, one after another


def listed(tmp_path: Path, config: str) -> dict[str, object]:
    server = start(tmp_path, config=config)
    try:
        with server.client() as c:
            (item,) = c.get("/v1/workspaces").json()["workspaces"]
            return item
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=15)


@pytest.mark.slow
def test_a_workspace_record_survives_restarts_and_moves_when_its_config_changes(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary")})
    first = listed(tmp_path, f"workspaces:\n  - {{id: docs, path: {root}, name: Docs, metadata: {{team: web}}}}\n")
    assert isinstance(first["workspace_id"], str) and len(first["workspace_id"]) == 36
    assert first["status"] == "active" and first["metadata"] == {"team": "web"}
    assert first["created_at"] == first["updated_at"]

    again = listed(tmp_path, f"workspaces:\n  - {{id: docs, path: {root}, name: Docs, metadata: {{team: web}}}}\n")
    assert (again["workspace_id"], again["created_at"], again["updated_at"]) == (
        first["workspace_id"],
        first["created_at"],
        first["updated_at"],
    )

    changed = listed(
        tmp_path, f"workspaces:\n  - {{id: docs, path: {root}, name: Docs site, execution_policy: none}}\n"
    )
    assert changed["workspace_id"] == first["workspace_id"] and changed["created_at"] == first["created_at"]
    assert changed["updated_at"] != first["updated_at"]
    assert changed["name"] == "Docs site" and changed["execution_policy"] == "none" and changed["metadata"] == {}
