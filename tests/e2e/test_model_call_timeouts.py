"""`timeout_s` through a whole run (Python API, planner, loop, the real OpenAI SDK): the time to the first event of
an answer, not a cap on it. A local server that streams a chunk every second for five seconds answers a run whose
model entry says `timeout_s: 2` (before issue 21 the run's request deadline was `timeout_s`, and the call was
killed at 2 s and retried from scratch)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env, load, write
from tests.support.replay_server import ReplayServer
from tests.support.run_ws import agent_md, open_ws

from bearagent.trust import trust, workspace_trust_surface


@pytest.mark.network_local
def test_a_run_outlives_timeout_s_while_the_model_keeps_streaming(tmp_path: Path) -> None:
    root, home = tmp_path / "ws", tmp_path / "home"
    with ReplayServer() as replay:
        url = replay.route_url("drip/openai_chat/5/1000", "openai_chat")
        write(
            root,
            ".bearagent/config.yaml",
            "default_agent: main\ndefault_model: drip\nmodels:\n"
            f"  drip: {{provider: openai-compatible, base_url: '{url}', model: m, timeout_s: 2}}\n",
        )
        write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary", tools="[Read]"))
        trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
        with open_ws(root, home) as ws:
            result = ws.run_sync("tell me slowly")
            events = ws.events(str(result.run_id))
        sent = [r.json() for r in replay.requests if "/drip/" in r.path and r.method == "POST"]  # not the /models probe
    assert result.status == "succeeded", result.error
    assert result.final == "t0 t1 t2 t3 t4 "
    assert [e.event_type for e in events].count("ModelCallRequested") == 1  # no timeout, no retry
    assert len(sent) == 1 and sent[0]["stream"] is True
