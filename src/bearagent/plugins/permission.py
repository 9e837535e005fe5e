"""The plugins' `resolve_permission` decision hook as a tool interceptor, stacked on the hook interceptor."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from bearagent.domain._base import thaw_json_mapping
from bearagent.domain.tools import ToolRequest, ToolResult, ToolSpec
from bearagent.plugins.manager import PluginHost
from bearagent.ports import (
    PermissionAnswer,
    PermissionRequestHook,
    PostToolDecision,
    PreToolDecision,
    ToolContext,
    ToolInterceptor,
)


def has_impls(host: PluginHost, hook: str) -> bool:
    caller = getattr(host.pm.hook, hook, None)
    return caller is not None and bool(caller.get_hookimpls())


class PluginPermissionInterceptor:
    """Asks the plugins' `resolve_permission` decision hook before a tool call, then the hooks. The stricter answer
    wins (deny > ask > allow), and config `deny` rules still win over a plugin's allow (the gate's policy)."""

    _RANK: ClassVar[dict[str, int]] = {"allow": 0, "ask": 1, "deny": 2}

    def __init__(self, host: PluginHost, root: Path, inner: ToolInterceptor | None) -> None:
        self._host = host
        self._root = root
        self._inner = inner

    async def before_tool(self, request: ToolRequest, spec: ToolSpec, context: ToolContext) -> PreToolDecision:
        inner = await self._inner.before_tool(request, spec, context) if self._inner is not None else PreToolDecision()
        try:
            answer = self._host.resolve_permission(
                request.name, thaw_json_mapping(request.arguments), context.agent_name or "", self._root
            )
        except Exception as exc:  # a broken policy plugin fails closed
            return PreToolDecision(permission="deny", reason=f"the permission plugin failed: {type(exc).__name__}")
        if answer not in self._RANK:
            return inner
        if inner.permission is not None and self._RANK[inner.permission] >= self._RANK[answer]:
            return inner
        return replace(inner, permission=answer, reason=inner.reason or f"plugin policy: {answer}")  # pyright: ignore[reportArgumentType]

    async def permission_request(
        self, request: ToolRequest, spec: ToolSpec, context: ToolContext, suggested_rule: str
    ) -> PermissionAnswer:
        if isinstance(self._inner, PermissionRequestHook):
            return await self._inner.permission_request(request, spec, context, suggested_rule)
        return PermissionAnswer()

    async def after_tool(
        self, request: ToolRequest, spec: ToolSpec, result: ToolResult, context: ToolContext
    ) -> PostToolDecision:
        if self._inner is None:
            return PostToolDecision()
        return await self._inner.after_tool(request, spec, result, context)
