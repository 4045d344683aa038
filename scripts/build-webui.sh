#!/usr/bin/env bash
# Build the web UI (webui/ -> src/determined/master/webui/static/) when its sources changed
# since the last build (a hash in webui/.build-stamp). Needs Node 20 and npm; without them
# it warns and the master serves a page saying the UI is not built.
#   scripts/build-webui.sh           build if needed
#   scripts/build-webui.sh --test    also run the unit tests (Vitest)
set -euo pipefail
cd "$(dirname "$0")/../webui"
if ! command -v npm >/dev/null 2>&1; then
    echo "warning: npm not found: the web UI is not built (install Node.js 20 and rerun)" >&2
    exit 0
fi
hash=$( (cat package.json package-lock.json index.html vite.config.ts tsconfig.json; \
         find src public -type f | LC_ALL=C sort | xargs cat) | sha256sum | cut -d' ' -f1)
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -d node_modules ] || [ "$(cat node_modules/.lock-hash 2>/dev/null)" != "$lock_hash" ]; then
    # npm's summary ("added N packages in 5s") goes to stdout, its log to stderr. Warn
    # level would add npm 11's notice on esbuild's install script at every install.
    npm ci --no-audit --no-fund --no-update-notifier --loglevel=error >/dev/null
    echo "$lock_hash" > node_modules/.lock-hash
fi
if [ "$(cat .build-stamp 2>/dev/null)" != "$hash" ] || [ ! -f ../src/determined/master/webui/static/index.html ]; then
    npm run build --silent -- --logLevel warn  # vite: warnings and errors only
    echo "$hash" > .build-stamp
fi
if [ "${1:-}" = "--test" ]; then
    npx vitest run --reporter=dot
fi
