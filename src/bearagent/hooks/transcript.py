"""The session transcript that hooks receive as `transcript_path`: one JSON object per line, Claude Code's shape.

Path: `<data dir>/transcripts/<session_id>.jsonl`, where the data dir of a project workspace is
`<workspace>/.bearagent` (chat workspaces: the user data dir). The file exists from the moment the writer is
created (hook libraries open it even before the first message) and every line is flushed as it is written. The data
dir, `transcripts/` and the file are opened without following symlinks and created 0700 / 0600
(`runtime/state_files.py`): a repository cannot redirect a transcript outside the workspace.

Line shape (as Claude Code writes it):
`{"type": "user"|"assistant", "uuid", "parentUuid", "sessionId", "timestamp", "cwd", "runId", "agentName",
  "message": {"role": "user"|"assistant", "content": [...]}}`; content blocks are `{"type": "text", "text"}`,
`{"type": "tool_use", "id", "name", "input"}` and (in a `user` line, as Claude Code does)
`{"type": "tool_result", "tool_use_id", "content", "is_error"}`. System prompts are not written.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.messages import Message, TextPart, ToolCallPart, ToolResultPart
from bearagent.runtime.state_files import open_state_file

TRANSCRIPTS_DIR = "transcripts"


def transcript_path_for(data_dir: Path, session_id: str) -> Path:
    """`<data_dir>/transcripts/<session_id>.jsonl` (data_dir: `<workspace>/.bearagent` for project workspaces)."""
    return data_dir / TRANSCRIPTS_DIR / f"{session_id}.jsonl"


class TranscriptWriter:
    """Appends one JSON line per message to the session transcript. Thread-safe; each line is flushed."""

    def __init__(self, path: Path, *, session_id: str, cwd: Path) -> None:
        self.path = path
        self._session_id = session_id
        self._cwd = str(cwd)
        self._lock = threading.Lock()
        self._last_uuid: str | None = None
        self._data_dir = path.parent.parent
        self._parts = (path.parent.name, path.name)
        os.close(self._open())

    def _open(self) -> int:
        return open_state_file(self._data_dir, self._parts, os.O_WRONLY | os.O_CREAT | os.O_APPEND)

    @classmethod
    def for_session(cls, data_dir: Path, session_id: str, *, cwd: Path) -> TranscriptWriter:
        return cls(transcript_path_for(data_dir, session_id), session_id=session_id, cwd=cwd)

    def append_message(self, message: Message, *, run_id: str | None = None, agent_name: str | None = None) -> None:
        """Write one conversation message (system messages are skipped: they are configuration, not dialogue)."""
        if message.role == "system":
            return
        content: list[JsonValue] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, ToolCallPart):
                content.append(
                    {
                        "type": "tool_use",
                        "id": str(part.tool_call_id),
                        "name": part.name,
                        "input": thaw_json_mapping(part.arguments),
                    }
                )
            elif isinstance(part, ToolResultPart):  # pyright: ignore[reportUnnecessaryIsInstance]
                content.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": str(part.tool_call_id),
                        "content": part.content,
                        "is_error": part.is_error,
                    }
                )
        line_type = "assistant" if message.role == "assistant" else "user"
        self._write(line_type, {"role": line_type, "content": content}, run_id=run_id, agent_name=agent_name)

    def append_user_text(self, text: str, *, run_id: str | None = None, agent_name: str | None = None) -> None:
        self.append_message(Message.user(text), run_id=run_id, agent_name=agent_name)

    def _write(
        self, line_type: str, message: dict[str, JsonValue], *, run_id: str | None, agent_name: str | None
    ) -> None:
        with self._lock:
            line_uuid = str(uuid.uuid4())
            record: dict[str, JsonValue] = {
                "type": line_type,
                "uuid": line_uuid,
                "parentUuid": self._last_uuid,
                "sessionId": self._session_id,
                "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
                "cwd": self._cwd,
                "runId": run_id,
                "agentName": agent_name,
                "message": cast(JsonValue, message),
            }
            data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
            fd = self._open()
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            self._last_uuid = line_uuid
