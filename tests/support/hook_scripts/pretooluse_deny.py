#!/usr/bin/env python3
# Claude Code docs (hooks reference, "PreToolUse decision control"): deny with hookSpecificOutput JSON.
import json
import sys

input_data = json.load(sys.stdin)
tool_input = input_data.get("tool_input", {})
command = tool_input.get("command", "")

if "rm -rf" in command:
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Destructive command blocked by hook",
        }
    }
    print(json.dumps(output))
    sys.exit(0)

sys.exit(0)
