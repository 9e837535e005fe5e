"""`TodoWrite{todos: [{content, status, id?}]}`: the agent's task list for the run.

The tool validates the list and returns it in `data.todos`; the runtime records it as a TodosUpdated fact.
"""

from __future__ import annotations

from collections.abc import Mapping

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, tool_error

MAX_TODOS = 100
_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

SPEC = ToolSpec(
    name="TodoWrite",
    description=(
        "Replace the task list for this run. Each todo has `content`, `status` (pending | in_progress | completed) "
        "and an optional `id`. Keep one task in_progress at a time; mark tasks completed as soon as they are done."
    ),
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "maxItems": MAX_TODOS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1, "maxLength": 2000},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "id": {"type": "string", "minLength": 1, "maxLength": 200},
                            "activeForm": {"type": "string", "maxLength": 2000},
                            "priority": {"type": "string", "enum": ["high", "medium", "low"]},
                        },
                        "required": ["content", "status"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["todos"],
            "additionalProperties": False,
        }
    ),
    side_effect="read_only",
    version="1",
    timeout_ms=10_000,
)


class TodoWriteTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        raw = arguments.get("todos")
        items = list(raw) if isinstance(raw, (list, tuple)) else []
        todos: list[dict[str, object]] = []
        seen: set[str] = set()
        for index, item in enumerate(items, 1):
            if not isinstance(item, Mapping):
                continue
            todo: dict[str, object] = {"content": str(item["content"]).strip(), "status": item["status"]}
            if not todo["content"]:
                raise tool_error(
                    "validation", "invalid_arguments", f"todos/{index - 1}/content is blank; describe the task."
                )
            todo_id = item.get("id")
            todo["id"] = str(todo_id) if isinstance(todo_id, str) else str(index)
            if todo["id"] in seen:
                raise tool_error(
                    "validation",
                    "invalid_arguments",
                    f"todos/{index - 1}/id {todo['id']!r} is used twice; give each todo its own id.",
                )
            seen.add(str(todo["id"]))
            for extra in ("activeForm", "priority"):
                if isinstance(item.get(extra), str):
                    todo[extra] = item[extra]
            todos.append(todo)
        return {"todos": todos}

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        raw = arguments.get("todos")
        todos = [t for t in raw if isinstance(t, Mapping)] if isinstance(raw, (list, tuple)) else []
        counts = {s: sum(1 for t in todos if t.get("status") == s) for s in _MARK}
        lines = [f"{_MARK[str(t.get('status'))]} {t.get('content')}" for t in todos]
        summary = (
            f"Todos updated: {counts['completed']} completed, {counts['in_progress']} in progress, "
            f"{counts['pending']} pending."
        )
        return self.ok(context, "\n".join([summary, *lines]), {"todos": todos})
