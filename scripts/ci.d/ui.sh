#!/usr/bin/env bash
# CI preparation for the web console's browser tests (tests/ui, label `ui`): playwright-core
# from npm, pinned, into the gitignored tests/node_modules. It drives Debian's chromium
# (scripts/deps/ui.txt); playwright-core downloads no browser of its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
PLAYWRIGHT_CORE_VERSION=1.65.1
have=$(node -e "try{console.log(require('./tests/node_modules/playwright-core/package.json').version)}catch{}" 2>/dev/null || true)
if [ "$have" = "$PLAYWRIGHT_CORE_VERSION" ]; then
  echo "ui: playwright-core $have present"
else
  start=$(date +%s)
  npm install --no-save --no-audit --no-fund --prefix tests "playwright-core@$PLAYWRIGHT_CORE_VERSION" >/dev/null
  echo "ui: installed playwright-core $PLAYWRIGHT_CORE_VERSION in $(( $(date +%s) - start )) s"
fi
node -e "require.resolve('playwright-core', {paths: ['tests']})" >/dev/null
command -v chromium >/dev/null || { echo "ui: chromium missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
