"""How an MCP `CallToolResult` becomes a `ToolResult` (docs/mcp.md "Results"): text blocks joined, images, audio and
binary resources saved as artifacts under `.bearagent/artifacts/<run>/`, structured content kept as `data` when
it fits the tool's output cap, the text bounded by that cap. Imports the SDK's types: loaded lazily like `_sdk`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import mcp_types as types

from bearagent.domain._base import JsonValue, frozen_json
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import ArtifactId, ToolCallId
from bearagent.domain.tools import Artifact, ToolResult, ToolSpec
from bearagent.ports import ToolContext

_EXT = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/mpeg": "mp3",
    "audio/ogg": "ogg",
    "application/pdf": "pdf",
    "application/gzip": "gz",
    "application/json": "json",
}


def to_tool_result(
    result: types.CallToolResult,
    *,
    spec: ToolSpec,
    context: ToolContext,
    server: str,
    duration_ms: int,
) -> ToolResult:
    """Map a `CallToolResult` to a `ToolResult` (see docs/mcp.md "Results")."""
    call_id = context.tool_call_id or context.ids.new(ToolCallId)
    parts: list[str] = []
    artifacts: list[Artifact] = []
    for index, block in enumerate(result.content):
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            parts.append(_binary_part(kind, block.data, block.mime_type, context, call_id, index, artifacts))
        elif isinstance(block, types.EmbeddedResource):
            res = block.resource
            if isinstance(res, types.TextResourceContents):
                parts.append(f"[resource {res.uri}]\n{res.text}")
            else:
                parts.append(
                    _binary_part(f"resource {res.uri}", res.blob, res.mime_type, context, call_id, index, artifacts)
                )
        else:  # ResourceLink
            mime = f" ({block.mime_type})" if block.mime_type else ""
            parts.append(f"[resource link: {block.name} {block.uri}{mime}]")
    content = "\n".join(parts)

    data: Mapping[str, JsonValue] | None = None
    data_note = ""
    if result.structured_content is not None:
        raw = cast(object, result.structured_content)
        wrapped: Mapping[str, object] = cast(Mapping[str, object], raw) if isinstance(raw, Mapping) else {"result": raw}
        try:
            data = frozen_json(wrapped)
        except ValueError as exc:
            data_note = f"\n[structured content dropped: {str(exc)[:200]}]"
        if data is not None:
            as_json = json.dumps(cast(object, result.structured_content), ensure_ascii=False, default=str)
            if len(as_json) > spec.max_output_chars:
                # bounded like the text: structured output larger than the tool's output cap is not kept
                data = None
                data_note = (
                    f"\n[structured content dropped: {len(as_json)} characters exceed the "
                    f"{spec.max_output_chars}-character output cap]"
                )
            elif not content:
                content = as_json

    limit = spec.max_output_chars - len(data_note)  # the note about dropped data always stays visible
    truncated = False
    if len(content) > limit:
        note = f"\n[output truncated: showing {{shown}} of {len(content)} characters from MCP server {server!r}]"
        shown = max(0, limit - len(note) - 10)
        content = content[:shown] + note.format(shown=shown)
        truncated = True
    content += data_note

    if result.is_error:
        message = content.strip() or f"MCP tool {spec.name} reported an error without text"
        error = ErrorInfo.of("mcp", "tool_error", message[:1_900], server=server)
        return ToolResult(
            tool_call_id=call_id,
            tool_name=spec.name,
            status="failed",
            content=content or message,
            data=data,
            error=error,
            artifacts=tuple(artifacts),
            truncated=truncated,
            duration_ms=duration_ms,
        )
    return ToolResult(
        tool_call_id=call_id,
        tool_name=spec.name,
        status="succeeded",
        content=content,
        data=data,
        artifacts=tuple(artifacts),
        truncated=truncated,
        duration_ms=duration_ms,
    )


def _binary_part(
    kind: str,
    b64: str,
    mime_type: str | None,
    context: ToolContext,
    call_id: ToolCallId,
    index: int,
    artifacts: list[Artifact],
) -> str:
    try:
        payload = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind} {mime_type or ''}: invalid base64 data omitted]"
    digest = hashlib.sha256(payload).hexdigest()
    mime = mime_type or "application/octet-stream"
    owner = context.run_id or context.session_id
    if owner is None or len(artifacts) >= 64:
        why = "no run or session to store it under" if owner is None else "too many artifacts in one result"
        return f"[{kind} {mime}, {len(payload)} bytes, sha256 {digest}: not stored ({why})]"
    rel = Path(".bearagent") / "artifacts" / str(owner) / f"{call_id}-{index}.{_EXT.get(mime, 'bin')}"
    target = context.workspace_root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(payload)
    tmp.replace(target)
    artifacts.append(
        Artifact(
            artifact_id=context.ids.new(ArtifactId),
            path=rel.as_posix(),
            kind="image" if kind == "image" else "binary",
            encoding=None,
            media_type=mime[:128],
            size_bytes=len(payload),
            sha256=digest,
        )
    )
    return f"[{kind} {mime}, {len(payload)} bytes, saved to {rel.as_posix()} (sha256 {digest})]"
