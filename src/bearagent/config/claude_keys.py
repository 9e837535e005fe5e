"""The vocabulary of Claude Code's settings files, as BearAgent reads them (`config/claude_settings.py`): the keys it
implements, the ones it knowingly ignores (each with what to use instead, so a project's setting is never dropped
silently) and the hook events Claude Code fires that BearAgent does not.
"""

from __future__ import annotations

from collections.abc import Mapping

SUPPORTED_KEYS = frozenset(
    {"permissions", "hooks", "env", "disableAllHooks", "$schema", "enabledPlugins", "extraKnownMarketplaces"}
)
PERMISSION_KEYS = (
    "allow",
    "ask",
    "deny",
    "defaultMode",
    "additionalDirectories",
    "disableBypassPermissionsMode",
    "disableAutoMode",
)

IGNORED_KEYS: Mapping[str, str] = {
    "model": "set `default_model:` in .bearagent/config.yaml",
    "availableModels": "model entries live under `models:` in config.yaml",
    "fallbackModel": "model entries live under `models:` in config.yaml",
    "effortLevel": "not a BearAgent setting",
    "alwaysThinkingEnabled": "not a BearAgent setting",
    "outputStyle": "not a BearAgent setting",
    "statusLine": "BearAgent has no status line; its command is never run",
    "apiKeyHelper": "BearAgent never runs a key helper from a workspace; keys come from `api_key_env`",
    "awsAuthRefresh": "never run by BearAgent",
    "awsCredentialExport": "never run by BearAgent",
    "gcpAuthRefresh": "never run by BearAgent",
    "otelHeadersHelper": "never run by BearAgent",
    "enableAllProjectMcpServers": "BearAgent asks for `bearagent trust` for every .mcp.json server instead",
    "enabledMcpjsonServers": "BearAgent asks for `bearagent trust` for every .mcp.json server instead",
    "disabledMcpjsonServers": "remove the server from .mcp.json, or restrict it with an agent's `mcp:` list",
    "allowedMcpServers": "restrict MCP servers with an agent's `mcp:` list",
    "deniedMcpServers": "deny their tools with `permissions.deny: [mcp__server]`",
    "sandbox": "BearAgent's Bash sandbox is configured by `sandbox:` in config.yaml (on by default)",
    "includeCoAuthoredBy": "not a BearAgent setting",
    "attribution": "not a BearAgent setting",
    "cleanupPeriodDays": "not a BearAgent setting",
    "respectGitignore": "Glob and Grep always honour .gitignore",
    "forceLoginMethod": "not a BearAgent setting",
    "spinnerTipsEnabled": "not a BearAgent setting",
    "disableSkillShellExecution": "BearAgent never runs `!` commands of command and skill files",
    "skillOverrides": "narrow skills with an agent's `skills:` list",
    "allowedHttpHookUrls": "not a BearAgent setting",
    "httpHookAllowedEnvVars": "not a BearAgent setting",
    "allowManagedHooksOnly": "a managed setting; not read from a project",
    "allowManagedPermissionRulesOnly": "a managed setting; not read from a project",
    "agent": "pass `-a NAME` or set `default_agent:` in config.yaml",
    "companyAnnouncements": "not a BearAgent setting",
    "language": "not a BearAgent setting",
    "autoUpdates": "not a BearAgent setting",
}
"""Claude Code settings BearAgent does not implement: an info diagnostic each (what to do instead), never silent."""

CLAUDE_HOOK_EVENTS = frozenset(
    {
        "PermissionRequest",
        "PermissionDenied",
        "Setup",
        "ConfigChange",
        "DirectoryAdded",
        "FileChanged",
        "InstructionsLoaded",
        "UserPromptExpansion",
        "Elicitation",
        "ElicitationResult",
        "TeammateIdle",
        "TaskCreated",
        "TaskCompleted",
        "WorktreeCreate",
        "WorktreeRemove",
        "MessageDisplay",
        "CwdChanged",
    }
)
"""Hook events of Claude Code that BearAgent never fires (its own events are `registries.hooks.HOOK_EVENTS`)."""
