#!/usr/bin/env bash
# Refreshes docs/ui-inspector.png (the run inspector screenshot linked from docs/server.md) from the browser test,
# which otherwise writes it to its tmp dir only. Needs Debian's chromium and chromium-driver.
set -euo pipefail
cd "$(dirname "$0")/.."
BEARAGENT_UI_SCREENSHOT="$PWD/docs/ui-inspector.png" uv run pytest -q -p no:cacheprovider \
  "tests/server/test_ui.py::test_a_waiting_run_is_shown_live_and_allowed_from_the_page"
