#!/bin/bash
# .claude/hooks/block-rm.sh — Claude Code docs (hooks guide): read the command with jq, exit 2 to block.
COMMAND=$(jq -r '.tool_input.command')

if echo "$COMMAND" | grep -q 'rm -rf'; then
  echo "Blocked: rm -rf commands are not allowed" >&2
  exit 2
fi

exit 0
