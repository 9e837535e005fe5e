"""ContextBuilder: the system prompt of a run, built from its parts in a fixed order, and its hash.

Order: agent body, output style, project instructions (AGENTS.md / CLAUDE.md), preloaded skills, skill catalog,
environment facts, unavailable tool servers, git facts (branch, status, recent commits; left out of the prompt hash). The agent's `system_reminder` is not part of the system prompt: it is re-injected as a short
`<system-reminder>` user message at the end of every model request (and never stored in the history).
"""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Protocol

from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message, ToolResultPart

MAX_TOOL_RESULT_CHARS_FOR_MODEL = 30_000
MAX_PRELOADED_SKILL_CHARS = 65_536
GIT_SECTION = "\n\n# Git (as the run started)\n\n"


@dataclass(frozen=True, slots=True)
class ContextParts:
    agent_name: str
    agent_prompt: str
    workspace_root: Path
    today: date
    output_style: tuple[str, str] | None = None
    """`(name, instructions)` of the output style in force (`outputStyle`), for the top-level primary agent."""
    project_instructions: str | None = None
    project_instructions_source: str | None = None
    skill_catalog: str | None = None
    preloaded_skills: Sequence[tuple[str, str]] = field(default_factory=tuple[tuple[str, str], ...])
    """`(name, instructions)` of skills loaded up front (a Claude Code agent's `skills:`), at most
    `MAX_PRELOADED_SKILL_CHARS` in all."""
    system_reminder: str | None = None
    unavailable_servers: Sequence[str] = field(default_factory=tuple[str, ...])
    additional_directories: Sequence[str] = field(default_factory=tuple[str, ...])
    """Directories besides the workspace the file tools may use (`permissions.additionalDirectories`)."""
    platform_name: str = field(default_factory=lambda: f"{platform.system()} {platform.release()}")
    git_lines: Sequence[str] = field(default_factory=tuple[str, ...])
    """The repository's branch, status summary and recent commits (`sandbox/git_context.py`), already bounded:
    the last section (`GIT_SECTION`), which the prompt hash leaves out (git status changes as the run works)."""


class ContextBuilder:
    """Builds the bounded inputs of a model request for one agent."""

    def system_prompt(self, parts: ContextParts) -> str:
        sections: list[str] = [parts.agent_prompt.strip() or f"You are the {parts.agent_name} agent."]
        if parts.output_style is not None and parts.output_style[1].strip():
            name, text = parts.output_style
            sections.append(f"# Output style: {name}\n\n{text.strip()}")
        if parts.project_instructions and parts.project_instructions.strip():
            source = parts.project_instructions_source or "project instructions"
            sections.append(f"# Project instructions ({source})\n\n{parts.project_instructions.strip()}")
        budget = MAX_PRELOADED_SKILL_CHARS
        for name, body in parts.preloaded_skills:
            text = body.strip()
            if len(text) > budget:
                text = text[: max(0, budget)] + f"\n… [skill {name!r} cut: the preloaded skills' limit was reached]"
            sections.append(f"# Skill: {name} (preloaded)\n\n{text}")
            budget -= len(text)
            if budget <= 0:
                break
        if parts.skill_catalog and parts.skill_catalog.strip():
            sections.append(
                "# Skills\n\nLoad a skill with the Skill tool when the task matches its description.\n\n"
                + parts.skill_catalog.strip()
            )
        sections.append(
            "# Environment\n\n"
            f"- Workspace root: {parts.workspace_root}\n"
            f"- Today's date: {parts.today.isoformat()}\n"
            f"- Platform: {parts.platform_name}\n"
            "- File paths in tool calls are relative to the workspace root."
            + (
                "\n- Additional working directories (use their absolute paths): "
                + ", ".join(parts.additional_directories)
                if parts.additional_directories
                else ""
            )
        )
        if parts.unavailable_servers:
            listed = "\n".join(f"- {line}" for line in parts.unavailable_servers)
            sections.append(f"# Unavailable tool servers\n\nThese MCP servers could not be reached:\n{listed}")
        prompt = "\n\n".join(sections)
        if parts.git_lines:
            prompt += GIT_SECTION + "\n".join(f"- {line}" for line in parts.git_lines)
        return prompt

    @staticmethod
    def prompt_hash(system_prompt: str) -> str:
        """The hash of the system prompt without its git section (which changes as files do, so a resumed run's
        prompt is not "changed" by the run's own edits)."""
        head, marker, _ = system_prompt.rpartition(GIT_SECTION)
        return hashlib.sha256((head if marker else system_prompt).encode("utf-8")).hexdigest()

    @staticmethod
    def reminder_message(system_reminder: str | None) -> Message | None:
        if not system_reminder or not system_reminder.strip():
            return None
        return Message.user(f"<system-reminder>\n{system_reminder.strip()}\n</system-reminder>")


class _CallNames(Protocol):
    @property
    def tool_call_id(self) -> ToolCallId: ...
    @property
    def provider_call_id(self) -> str | None: ...
    @property
    def name(self) -> str: ...


def tool_result_message(call: _CallNames, content: str, is_error: bool) -> Message:
    """The message the model is sent for a call's result, and the one a history rebuilt from the log holds (the
    loop and `runtime/history.py` both build it here, so the two cannot drift)."""
    return Message.tool(
        ToolResultPart(
            tool_call_id=call.tool_call_id,
            provider_call_id=call.provider_call_id,
            name=call.name,
            content=bound_for_model(content or ("error" if is_error else "ok")),
            is_error=is_error,
        )
    )


def bound_for_model(content: str, limit: int = MAX_TOOL_RESULT_CHARS_FOR_MODEL) -> str:
    """Cut a tool result for the model's context, saying what was cut; the full result stays in the run log."""
    if len(content) <= limit:
        return content
    head = content[: limit - 200]
    return f"{head}\n\n[... {len(content) - len(head)} more characters cut for the model; the full result is in the run log]"
