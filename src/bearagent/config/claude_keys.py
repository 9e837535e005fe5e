"""The vocabulary of Claude Code's settings files, as BearAgent reads them (`config/claude_settings.py`): the keys it
implements, the ones it knowingly ignores (each with what to use instead, so a project's setting is never dropped
silently) and the hook events Claude Code fires that BearAgent does not.
"""

from __future__ import annotations

from collections.abc import Mapping

MCP_KEYS = (
    "enableAllProjectMcpServers",
    "enabledMcpjsonServers",
    "disabledMcpjsonServers",
    "allowedMcpServers",
    "deniedMcpServers",
)
"""Which MCP servers load (`registries/mcp.py`); they only narrow what would load, so they apply without trust."""
SUPPORTED_KEYS = frozenset(
    {
        "permissions",
        "hooks",
        "env",
        "disableAllHooks",
        "outputStyle",
        "apiKeyHelper",
        "model",
        "availableModels",
        "fallbackModel",
        "$schema",
        "enabledPlugins",
        "extraKnownMarketplaces",
        *MCP_KEYS,
    }
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
    "effortLevel": "not a BearAgent setting",
    "alwaysThinkingEnabled": "not a BearAgent setting",
    "awsAuthRefresh": "never run by BearAgent",
    "awsCredentialExport": "never run by BearAgent",
    "gcpAuthRefresh": "never run by BearAgent",
    "otelHeadersHelper": "never run by BearAgent",
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
    "strictKnownMarketplaces": "a managed setting; add marketplaces with `bearagent plugins marketplace add`",
    "autoCompactEnabled": "compaction is set by `compaction: {enabled, threshold}` in config.yaml",
    "autoCompactWindow": "compaction is set by `compaction: {enabled, threshold}` in config.yaml",
    "autoMemoryEnabled": "BearAgent keeps no automatic memory; instructions live in AGENTS.md / CLAUDE.md",
    "fileCheckpointingEnabled": "BearAgent always records file changes for `bearagent rewind`",
    "worktree": "BearAgent does not create git worktrees",
    "policyHelper": "never run by BearAgent",
    "subagentStatusLine": "only the main `statusLine` is shown",
}
"""Claude Code settings BearAgent does not implement: an info diagnostic each (what to do instead), never silent."""

CLAUDE_HOOK_EVENTS = frozenset(
    {
        "PermissionDenied",
        "Setup",
        "ConfigChange",
        "DirectoryAdded",
        "FileChanged",
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
