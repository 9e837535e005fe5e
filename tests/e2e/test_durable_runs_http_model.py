"""`kill -9` and resume against a real HTTP model server: the official OpenAI SDK streams from a fake chat
completions server on 127.0.0.1 that counts every request, so "a completed model call is never made again" is
checked where the calls arrive, not only in the log.

The fake model is stateless: the turn it answers is the number of tool results in the request, so any process
asking for turn k gets turn k, and each answer streams slowly enough to be killed in the middle.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import cast

import pytest
from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import agent_md

from bearagent.trust import trust, workspace_trust_surface

KILL_POINTS = int(os.environ.get("BEARAGENT_HTTP_KILL_POINTS", "10"))

TURNS: list[tuple[str, tuple[str, dict[str, str]] | None]] = [
    ("Step one.", ("Bash", {"command": "echo one >> effects.log; sleep 0.2"})),
    ("Step two.", ("Write", {"file_path": "notes.md", "content": "two\n"})),
    ("Step three.", ("Bash", {"command": "echo three >> effects.log; sleep 0.2"})),
    ("All done.", None),
]


class FakeModel:
    def __init__(self) -> None:
        self.requests: Counter[int] = Counter()
        self.lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                messages = cast(list[dict[str, object]], body["messages"])
                turn = min(sum(1 for m in messages if m.get("role") == "tool"), len(TURNS) - 1)
                with model.lock:
                    model.requests[turn] += 1
                text, call = TURNS[turn]
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                chunks: list[dict[str, object]] = [{"role": "assistant", "content": ""}]
                chunks += [cast(dict[str, object], {"content": word + " "}) for word in text.split()]
                if call is not None:
                    name, arguments = call
                    chunks.append(
                        {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": f"call_{turn}",
                                    "type": "function",
                                    "function": {"name": name, "arguments": json.dumps(arguments)},
                                }
                            ]
                        }
                    )
                try:
                    for delta in chunks:
                        self._event({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
                        time.sleep(0.04)
                    finish = "tool_calls" if call is not None else "stop"
                    self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
                    self._event({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 10}})
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _event(self, data: dict[str, object]) -> None:
                payload = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", **data}
                self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    model = FakeModel()
    yield model
    model.server.shutdown()


def _workspace(root: Path, home: Path, url: str) -> Path:
    write(
        root,
        ".bearagent/config.yaml",
        f"default_agent: main\ndefault_model: fake\nmodels:\n"
        f"  fake: {{provider: openai-compatible, base_url: '{url}', model: m, api_key_env: FAKE_KEY}}\n",
    )
    write(root, ".bearagent/agents/main.md", agent_md("Main agent.", mode="primary", tools="[Read, Write, Bash]"))
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, **isolated_env(home), "NO_COLOR": "1", "FAKE_KEY": "sk-fake"}


def _bear(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        env=_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _log(root: Path) -> list[tuple[str, dict[str, object]]]:
    with sqlite3.connect(root / ".bearagent" / "state.db") as conn:
        rows = conn.execute("SELECT event_type, payload FROM events ORDER BY seq_no").fetchall()
    return [(str(t), json.loads(p)) for t, p in rows]


@pytest.mark.timeout(900)  # 10 kills, each with 2-4 CLI processes (cold starts): over the suite's 300 s at load 15-20
# (2026-12-04, a fresh clone under /tmp); the budget of the test harness, not a figure of the product's speed
def test_kill_9_then_resume_never_repeats_a_completed_call_at_the_server(tmp_path: Path, fake_model: FakeModel) -> None:
    rng = random.Random(1616)
    home = tmp_path / "home"
    for point in range(KILL_POINTS):
        fake_model.requests.clear()
        root = _workspace(tmp_path / f"ws{point}", home, fake_model.url)
        proc = subprocess.Popen(
            [sys.executable, "-m", "bearagent", "run", "-w", str(root), "--permission-mode", "acceptEdits", "go"],
            env=_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(tmp_path / f"run{point}.err").open("w"),
        )
        deadline = time.monotonic() + 60
        while not fake_model.requests and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 1.4))  # from the first request to about the end of the run
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        listed = json.loads(_bear(["runs", "list", "-w", str(root), "--json"], home).stdout)
        assert len(listed) == 1, (point, (tmp_path / f"run{point}.err").read_text()[-2000:])
        (run,) = listed
        if run["status"] == "interrupted":
            done = _bear(["runs", "resume", str(run["run_id"]), "-w", str(root), "--json"], home)
            assert done.returncode == 0, done.stderr
        log = _log(root)
        types = [t for t, _ in log]
        assert types[-1] == "RunSucceeded", (point, types)
        completed = [str(p["text"]).strip() for t, p in log if t == "ModelCallCompleted"]
        assert completed == [text for text, _ in TURNS], (point, completed)
        # at the server: turn k was asked once, plus once more for each attempt at it that never completed
        requested = types.count("ModelCallRequested")
        assert sum(fake_model.requests.values()) <= requested, (point, fake_model.requests, requested)
        for turn in range(len(TURNS)):
            assert fake_model.requests[turn] >= 1, (point, turn, fake_model.requests)
        repeats = sum(fake_model.requests.values()) - len(TURNS)
        assert repeats <= requested - len(TURNS), (point, fake_model.requests)
        assert repeats <= 1, f"point {point}: only the call cut by the kill may be asked again: {fake_model.requests}"
        effects = (root / "effects.log").read_text().split() if (root / "effects.log").exists() else []
        assert effects.count("one") <= 1 and effects.count("three") <= 1, (point, effects)
