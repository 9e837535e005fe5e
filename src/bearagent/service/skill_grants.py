"""A skill's `allowed-tools`, applied as Claude Code applies them: while the skill is in use, the calls they match
run without asking.

When an agent loads a skill with the `Skill` tool, each of the skill's `allowed-tools` entries (`Bash(git add:*)`,
`Bash(git diff:*)`) becomes an allow rule of that agent's tool policy for the rest of its run. It only pre-approves:
it never adds a tool the agent was not granted, and deny rules, ask rules and the protected control files still win
(rules are evaluated deny, ask, allow). A workspace skill's entries are on the trust surface (`trust/surface.py`),
since they widen what runs without asking.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bearagent.tools.permissions import PermissionRule, RuleError
from bearagent.tools.policy import ToolPolicy
from bearagent.tools.runtime_tools import SkillContent


@dataclass
class SkillGrants:
    """The `Skill` tool's loader for one plan: loads the skill, then allows its `allowed-tools` in `policy` (bound
    once the plan's gate exists). `allowed` maps skill name -> its entries."""

    load_skill: Callable[[str], SkillContent]
    allowed: Callable[[str], tuple[str, ...]]
    root: Path
    policy: ToolPolicy | None = None
    granted: list[str] = field(default_factory=lambda: [])

    def bind(self, policy: ToolPolicy) -> None:
        self.policy = policy

    def load(self, name: str) -> SkillContent:
        content = self.load_skill(name)
        entries = self.allowed(name)
        if not entries or self.policy is None:
            return content
        applied: list[str] = []
        for entry in entries:
            if entry in self.granted:
                applied.append(entry)
                continue
            try:
                rule = PermissionRule.parse(entry, "allow", root=self.root)
            except RuleError:
                continue  # reported when the skill was loaded (`skill.invalid_field`)
            self.policy.add_allow_rule(rule)
            self.granted.append(entry)
            applied.append(entry)
        if not applied:
            return content
        note = f"\n\n(While you use this skill, these calls run without asking: {', '.join(applied)}.)"
        return SkillContent(
            name=content.name, body=content.body + note, directory=content.directory, files=content.files
        )
