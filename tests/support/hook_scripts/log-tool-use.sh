#!/bin/bash
# PostToolUse logger in the style of the Claude Code docs' command logger (jq over stdin, appended to a log file).
jq -c '{tool: .tool_name, input: .tool_input, response: .tool_response, id: .tool_use_id, session: .session_id}' >> "$CLAUDE_PROJECT_DIR/.claude/tool-log.jsonl"
