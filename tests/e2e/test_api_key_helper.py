"""Claude Code's `apiKeyHelper` in real runs against a local server speaking Anthropic's Messages API: the command's
output is the key an `anthropic` entry sends, cached for `CLAUDE_CODE_API_KEY_HELPER_TTL_MS`; the command is trust
surface (never run before `bearagent trust`), and a failing helper names itself without printing its output."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env, load, write
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.run_ws import agent_md

from bearagent.api import open_workspace
from bearagent.app.key_helper import forget_cached_keys
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

HELPER = """#!/bin/sh
# count the calls; print a key that says which call made it
n=$(cat "$COUNTER" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$COUNTER"
echo "sk-ant-from-helper-$n"
"""
BROKEN = """#!/bin/sh
echo "sk-ant-half-printed"
echo "vault is sealed" >&2
exit 3
"""


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    forget_cached_keys()
    with FakeAnthropic() as server:
        yield server
    forget_cached_keys()


def _ws(tmp_path: Path, fake: FakeAnthropic, helper: str) -> Path:
    root = tmp_path / "ws"
    config = f"""
default_agent: main
default_model: claude
models:
  claude: {{provider: anthropic, model: claude-fake, base_url: "{fake.url}", stream: false}}
"""
    write(root, ".bearagent/config.yaml", config)
    write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary", tools="[Bash]"))
    write(root, "key.sh", helper, executable=True)
    write(root, ".claude/settings.json", json.dumps({"apiKeyHelper": "./key.sh"}))
    return root


def _runs(root: Path, env: dict[str, str], count: int) -> list[str]:
    async def go() -> list[str]:
        out: list[str] = []
        async with open_workspace(root, env=env, plugins=PluginHost()) as ws:
            for _ in range(count):
                result = await ws.run("hi")
                out.append(result.status if result.error is None else f"{result.status}: {result.error.message}")
        return out

    return asyncio.run(go())


def test_the_helpers_key_is_sent_cached_and_only_after_trust(tmp_path: Path, fake: FakeAnthropic) -> None:
    root = _ws(tmp_path, fake, HELPER)
    home = tmp_path / "home"
    counter = tmp_path / "count"
    env = isolated_env(home, COUNTER=str(counter))
    with pytest.raises(Exception, match="not trusted"):
        _runs(root, env, 1)
    assert not counter.exists() and fake.keys == []  # the helper never ran in the untrusted workspace
    surface = workspace_trust_surface(load(root, home, env=env))
    assert any(item.key == "apiKeyHelper .claude/settings.json" for item in surface.items)
    trust(root, surface, env=env)

    assert _runs(root, env, 2) == ["succeeded", "succeeded"]
    assert fake.keys == ["sk-ant-from-helper-1", "sk-ant-from-helper-1"]  # cached within its TTL
    forget_cached_keys()
    assert _runs(root, {**env, "CLAUDE_CODE_API_KEY_HELPER_TTL_MS": "0"}, 2) == ["succeeded", "succeeded"]
    second, third = fake.keys[2:]  # a TTL of 0: the helper is asked again for every run
    assert second.startswith("sk-ant-from-helper-") and third.startswith("sk-ant-from-helper-")
    assert len({fake.keys[0], second, third}) == 3
    calls = counter.read_text()
    assert _runs(root, {**env, "ANTHROPIC_API_KEY": "sk-ant-from-env"}, 1) == ["succeeded"]
    assert fake.keys[-1] == "sk-ant-from-env" and counter.read_text() == calls  # a set variable wins, no helper


def test_a_failing_helper_fails_the_run_naming_it_without_its_output(tmp_path: Path, fake: FakeAnthropic) -> None:
    root = _ws(tmp_path, fake, BROKEN)
    home = tmp_path / "home"
    env = isolated_env(home)
    trust(root, workspace_trust_surface(load(root, home, env=env)), env=env)
    with pytest.raises(Exception) as raised:
        _runs(root, env, 1)
    message = str(raised.value)
    assert "apiKeyHelper './key.sh'" in message and "exited with status 3: vault is sealed" in message
    assert "sk-ant-half-printed" not in message
    assert fake.keys == []


def test_a_helper_whose_script_the_model_rewrote_is_not_run_again(tmp_path: Path, fake: FakeAnthropic) -> None:
    """The model (its sandboxed Bash) rewrites `key.sh` in the first run; the second run of the same process needs
    the key again (TTL 0) and would run the model's script with the user's rights, its output sent as the key: it
    is refused, naming the file (issue 28, items 3 and 6)."""
    root = _ws(tmp_path, fake, HELPER)
    home, marker = tmp_path / "home", tmp_path / "PWNED"
    env = isolated_env(home, COUNTER=str(tmp_path / "count"), CLAUDE_CODE_API_KEY_HELPER_TTL_MS="0")
    trust(root, workspace_trust_surface(load(root, home, env=env)), env=env)
    fake.tool_calls.append(f"printf '#!/bin/sh\\ntouch {marker}\\necho sk-ant-evil\\n' > key.sh; echo rewritten")
    with pytest.raises(Exception) as raised:
        _runs(root, env, 2)
    assert "touch" in (root / "key.sh").read_text(), "the rewrite itself happened"
    message = str(raised.value)
    # the next run's trust check sees the change first (the item fingerprints key.sh); the helper's own pin
    # (checked before each later run of the helper in the process) says the same where no trust check comes first
    assert "changed: file key.sh" in message or "was not run: key.sh" in message, message
    assert not marker.exists()
    assert "sk-ant-evil" not in fake.keys


def test_the_helpers_own_pin_refuses_a_rewritten_script(tmp_path: Path, fake: FakeAnthropic) -> None:
    """Where no trust check comes between (one run asking for the key twice), the helper's pin refuses it."""
    from bearagent.app.key_helper import KeyHelper

    root = _ws(tmp_path, fake, HELPER)
    env = {**isolated_env(tmp_path / "home", COUNTER=str(tmp_path / "count")), "CLAUDE_CODE_API_KEY_HELPER_TTL_MS": "0"}
    helper = KeyHelper("./key.sh", ".claude/settings.json")
    assert helper.key(root, env) == "sk-ant-from-helper-1"
    assert helper.key(root, env) == "sk-ant-from-helper-2"  # unchanged: it runs again
    (root / "key.sh").write_text(f"#!/bin/sh\ntouch {tmp_path / 'PWNED'}\necho sk-ant-evil\n")
    with pytest.raises(Exception, match=r"was not run: key\.sh \(which it runs or reaches\) changed"):
        helper.key(root, env)
    assert not (tmp_path / "PWNED").exists()
