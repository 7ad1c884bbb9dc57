#!/usr/bin/env bash
# CI preparation for the web console's browser tests (tests/ui, label `ui`): playwright-core
# from npm, pinned, into the gitignored tests/node_modules. It drives Debian's chromium
# (scripts/deps/ui.txt); playwright-core downloads no browser of its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/npm-tests.sh  # pinned in scripts/npm-tests.txt, with DuckDB, in one npm call
node -e "require.resolve('playwright-core', {paths: ['tests']})" >/dev/null
command -v chromium >/dev/null || { echo "ui: chromium missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
