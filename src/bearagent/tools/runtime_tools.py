"""Runtime tools: `Skill`, `Task`, `SwitchAgent` and action tools. They pass the same gate as native tools; their
specs come from the invocation projection (which knows the agent's allowlists) and their work is done by callbacks
the app wires in (loading a skill body, running a child run)."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bearagent.domain._base import JsonMapping, JsonValue
from bearagent.domain.errors import BearAgentError
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error
from bearagent.tools.paths import PathRefused, WorkspacePaths


@dataclass(frozen=True, slots=True)
class SkillContent:
    """A skill as the tool shows it: `directory` is absolute, `files` are relative to it."""

    name: str
    body: str
    directory: str
    files: Sequence[str]


@dataclass(frozen=True, slots=True)
class ChildRunResult:
    run_id: str
    status: str
    final_text: str
    error_message: str | None = None


SkillLoader = Callable[[str], SkillContent]
ChildRunner = Callable[[str, str, ToolContext], Awaitable[ChildRunResult]]


MAX_SKILL_FILE_CHARS = 100_000
MAX_SKILL_FILE_BYTES = 16 * 1024 * 1024


class SkillTool(NativeTool):
    """Returns a skill's instructions and the list (not the content) of its bundled files; with `file`, the content
    of one bundled file. Bundled files are read through this tool, confined to the skill's own folder, so skills that
    live outside the workspace (built-in, user, plugin skills) work too without widening what `Read` may open."""

    def __init__(self, spec: ToolSpec, load: SkillLoader) -> None:
        super().__init__(spec)
        self._load = load

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        name = str_arg(arguments, "name")
        skill = self._load(name)
        wanted = str_arg(arguments, "file")
        if wanted:
            return self._read_file(skill, wanted, context)
        listing = "\n".join(f"- {path}" for path in skill.files) or "(none)"
        content = (
            f"# Skill: {skill.name}\n\n{skill.body.strip()}\n\n"
            f"Bundled files (read one with Skill(name={skill.name!r}, file=...)):\n{listing}"
        )
        data: Mapping[str, object] = {"name": skill.name, "directory": skill.directory, "files": list(skill.files)}
        return self.ok(context, content, data)

    def _read_file(self, skill: SkillContent, wanted: str, context: ToolContext) -> ToolResult:
        if wanted not in skill.files:
            listed = ", ".join(skill.files) or "none"
            raise tool_error(
                "validation",
                "unknown_skill_file",
                f"skill {skill.name!r} has no bundled file {wanted!r}; its files are: {listed}",
            )
        raw = _read_skill_file(Path(skill.directory), wanted, context.workspace_root)
        if b"\0" in raw[:8192]:
            raise tool_error("validation", "binary_skill_file", f"{wanted!r} is a binary file and cannot be shown")
        text = raw.decode("utf-8", errors="replace")
        truncated = len(text) > MAX_SKILL_FILE_CHARS
        if truncated:
            text = text[:MAX_SKILL_FILE_CHARS] + f"\n[... cut at {MAX_SKILL_FILE_CHARS} characters]"
        return self.ok(context, text, {"name": skill.name, "file": wanted}, truncated=truncated)


def _read_skill_file(directory: Path, wanted: str, workspace_root: Path) -> bytes:
    """A bundled file's bytes. A skill inside the workspace is a repository's file: it is read with the file tools'
    path safety (a symlink out of the workspace is refused, never read). Other skills (user, plugin, built-in) are
    trusted; their files must still lie inside the skill's own folder."""
    outside = _tool_refusal(wanted)
    rel_dir = _inside(directory, workspace_root)
    if rel_dir is not None:
        rel = posixpath.normpath(posixpath.join(rel_dir, wanted)) if rel_dir else posixpath.normpath(wanted)
        if rel != rel_dir and not rel.startswith(f"{rel_dir}/" if rel_dir else ""):
            raise outside
        try:
            opened = WorkspacePaths(workspace_root).open_read(rel)
        except PathRefused as exc:
            raise tool_error("permission", "skill_file_refused", f"{wanted!r}: {exc.info.message}") from None
        try:
            if opened.st.st_size > MAX_SKILL_FILE_BYTES:
                raise tool_error("validation", "skill_file_too_large", f"{wanted!r} is larger than the limit")
            chunks: list[bytes] = []
            while chunk := os.read(opened.fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(opened.fd)
    base = directory.resolve()
    target = (base / wanted).resolve()
    if base not in target.parents or not target.is_file():
        raise outside
    return target.read_bytes()


def _tool_refusal(wanted: str) -> BearAgentError:
    return tool_error("permission", "skill_file_outside", f"{wanted!r} is not a regular file inside the skill")


def _inside(directory: Path, root: Path) -> str | None:
    """`directory` relative to the workspace `root` (by its given or its real path), or None when outside it."""
    for base in (root, Path(os.path.realpath(root))):
        try:
            rel = directory.relative_to(base).as_posix()
        except ValueError:
            continue
        return "" if rel == "." else rel
    return None


class TaskTool(NativeTool):
    """Delegates a task to a subagent as a child run; the child's final answer is the tool result."""

    def __init__(self, spec: ToolSpec, run_child: ChildRunner) -> None:
        super().__init__(spec)
        self._run_child = run_child

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        agent = str_arg(arguments, "subagent_type")
        prompt = str_arg(arguments, "prompt")
        child = await self._run_child(agent, prompt, context)
        data: dict[str, object] = {"child_run_id": child.run_id, "agent": agent, "status": child.status}
        if child.status != "succeeded":
            raise tool_error(
                "tool",
                "subagent_failed",
                f"subagent {agent} ({child.run_id}) {child.status}: {child.error_message or 'no answer'}",
            )
        return self.ok(context, child.final_text or "(the subagent gave an empty answer)", data)


class SwitchAgentTool(NativeTool):
    """Hands the session to another primary agent; the loop performs the switch after this call succeeds."""

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        agent = str_arg(arguments, "agent")
        reason = str_arg(arguments, "reason")
        data: dict[str, JsonValue] = {"agent": agent, "reason": reason}
        return self.ok(context, f"Switching to agent {agent}.", data)


ActionRunner = Callable[[str, Mapping[str, JsonValue], ToolContext], Awaitable[ChildRunResult]]


class ActionTool(NativeTool):
    """Runs a named action (its template rendered with the arguments) as a child run with the action's agent."""

    def __init__(self, spec: ToolSpec, action_name: str, run_action: ActionRunner) -> None:
        super().__init__(spec)
        self._action = action_name
        self._run_action = run_action

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        child = await self._run_action(self._action, arguments, context)
        data: dict[str, object] = {"child_run_id": child.run_id, "action": self._action, "status": child.status}
        if child.status != "succeeded":
            raise tool_error(
                "tool",
                "action_failed",
                f"action {self._action} ({child.run_id}) {child.status}: {child.error_message or 'no answer'}",
            )
        return self.ok(context, child.final_text or "(the action gave an empty answer)", data)
