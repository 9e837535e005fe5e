"""CLI cold start and config loading at scale.

    uv run python benchmarks/bench_cli.py [--runs N]

1. `bearagent --help` / `--version` cold start, against `python -c pass` measured in the same run (the floor).
   Target: <= 150 ms.
2. `bearagent agents list` on generated workspaces of 250/500/1,000 agent files + 75/150/300 skills, to show the
   cost is linear in the number of files. Target: <= 1 s at 1,000 agents + 300 skills.
Each figure is the median of N runs of a fresh process (plugins off, isolated user dir).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BEARAGENT = str(Path(sys.executable).parent / "bearagent")


def timed(cmd: list[str], runs: int, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    samples: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), min(samples)


def make_workspace(root: Path, agents: int, skills: int) -> None:
    agent_dir = root / ".bearagent" / "agents"
    agent_dir.mkdir(parents=True)
    for i in range(agents):
        (agent_dir / f"agent-{i:04d}.md").write_text(
            f"---\ndescription: Generated agent number {i}, for the benchmark.\nmode: subagent\ntools: Read, Grep, Glob\n"
            f"model: inherit\n---\nYou are generated agent {i}. Answer briefly.\n"
        )
    for i in range(skills):
        skill_dir = root / ".claude" / "skills" / f"skill-{i:04d}"
        skill_dir.mkdir(parents=True)
        (skill_dir / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Generated skill {i}.\n---\nStep one.\n"
        )
        (skill_dir / "reference.md").write_text("reference\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {**os.environ, "BEARAGENT_LOAD_PLUGINS": "", "BEARAGENT_HOME": str(base / "home"), "NO_COLOR": "1"}
        print(
            f"machine: {platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}, {platform.system()}"
        )
        print(f"runs per figure: {args.runs} (median / min, ms)\n")
        print("| command | median ms | min ms |\n|---|---|---|")
        for label, cmd in (
            ("python -c pass (floor)", [sys.executable, "-c", "pass"]),
            ("bearagent --version", [BEARAGENT, "--version"]),
            ("bearagent --help", [BEARAGENT, "--help"]),
        ):
            median, low = timed(cmd, args.runs, base, env)
            print(f"| `{label}` | {median:.0f} | {low:.0f} |")
        print("\n| workspace | agents list median ms | min ms | ms per file |\n|---|---|---|---|")
        for agents, skills in ((250, 75), (500, 150), (1000, 300)):
            root = base / f"ws-{agents}"
            make_workspace(root, agents, skills)
            median, low = timed([BEARAGENT, "agents", "list"], args.runs, root, env)
            print(
                f"| {agents} agents + {skills} skills | {median:.0f} | {low:.0f} | {median / (agents + skills):.2f} |"
            )


if __name__ == "__main__":
    main()
