"""One preflight (issue 32): `doctor` reports everything `run` would refuse (a missing key, trust needed, a hook
that cannot run) in the same words and with the same fix: both come from `service/preflight.py`."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import agent_md

from bearagent.cli import main

MAIN = agent_md("Main agent.", mode="primary", tools="[Read]")


def _invoke(args: list[str], home: Path, **env: str) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home, **env), prog_name="bearagent")


def _ws(root: Path, config: str) -> Path:
    write(root, ".bearagent/config.yaml", "default_agent: main\n" + config)
    write(root, ".bearagent/agents/main.md", MAIN)
    return root


def _same_refusal(root: Path, home: Path, words: str) -> None:
    doctor = _invoke(["doctor", "-w", str(root)], home)
    assert doctor.exit_code == 2, doctor.output
    assert words in doctor.output
    run = _invoke(["run", "-w", str(root), "hello"], home)
    assert run.exit_code != 0, run.output
    assert words in run.output
    assert "Traceback" not in run.output


def test_a_missing_key_is_reported_by_doctor_and_refused_by_run_alike(tmp_path: Path) -> None:
    root = _ws(tmp_path / "ws", "default_model: claude\nmodels:\n  claude: {provider: anthropic, model: claude-x}\n")
    _same_refusal(root, tmp_path / "home", "the environment variable ANTHROPIC_API_KEY is not set")
    fixed = _invoke(["doctor", "-w", str(root)], tmp_path / "home", ANTHROPIC_API_KEY="k")
    assert "ANTHROPIC_API_KEY is not set" not in fixed.output


def test_trust_needed_is_reported_by_doctor_and_refused_by_run_alike(tmp_path: Path) -> None:
    root = _ws(
        tmp_path / "ws",
        "default_model: local\nmodels:\n  local: {provider: openai-compatible, base_url: 'http://10.9.9.9/v1', "
        "model: m}\n",
    )
    _same_refusal(root, tmp_path / "home", "bearagent trust")


def test_an_unrunnable_hook_is_reported_by_doctor_and_refused_by_run_alike(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = _ws(tmp_path / "ws", "default_model: s\nmodels:\n  s: {provider: scripted, script: script.yaml}\n")
    write(root, ".bearagent/script.yaml", 'turns:\n  - text: "hi"\n')
    # the user's own config (trusted): only the hook's brokenness stops the run, not trust
    write(
        home,
        "bearagent/config.yaml",
        "hooks:\n  Stop:\n    - hooks:\n        - {type: command, command: /nonexistent/h.sh}\n",
    )
    _same_refusal(root, home, "cannot run; first:")
