"""Claude Code's `disable-model-invocation: true` on a skill: the agents' catalog and `Skill` tool leave it out (the
model cannot load it), while the user still runs it as `/name` (`bearagent action run name`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner
from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.api import open_workspace, runtime_of
from bearagent.cli import main
from bearagent.domain._base import thaw_json_mapping
from bearagent.plugins.manager import PluginHost

DEPLOY = (
    "---\nname: deploy\ndescription: Deploys production.\ndisable-model-invocation: true\n---\nDeploy $ARGUMENTS.\n"
)
LINT = "---\nname: lint\ndescription: Lints the code.\n---\nRun the linter.\n"


def test_a_skill_the_model_may_not_invoke_is_only_a_slash_command(tmp_path: Path) -> None:
    script = 'turns:\n  - text: "Deploying."\n'
    agents = {"main": agent_md("Main.", mode="primary", tools="[Skill, Read]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=CONFIG)
    write(root, ".claude/skills/deploy/SKILL.md", DEPLOY)
    write(root, ".claude/skills/lint/SKILL.md", LINT)
    home = tmp_path / "home"
    loaded = load(root, home)
    deploy = loaded.skills.get("deploy")
    assert deploy is not None and not deploy.model_invocable and deploy.user_invocable
    assert not [d for d in loaded.diagnostics() if d.field == "disable-model-invocation"]  # read, not "ignored"

    async def plan() -> tuple[str, list[object]]:
        async with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
            planned = await runtime_of(ws).plans.plan("main", session_key="probe")
            schema = thaw_json_mapping(planned.tools["Skill"].descriptor.input_schema)
            return planned.system_prompt, schema["properties"]["name"]["enum"]  # type: ignore[index,call-overload]

    prompt, offered = asyncio.run(plan())
    assert "lint" in offered and "deploy" not in offered
    assert "<name>lint</name>" in prompt and "<name>deploy</name>" not in prompt
    result = CliRunner().invoke(
        main,
        ["action", "run", "-w", str(root), "--json", "deploy", "v2"],
        env=isolated_env(home),
        prog_name="bearagent",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["final"] == "Deploying."
