#!/usr/bin/env bash
# Set up the environment, start the embedded master (`det deploy local up`) unless one
# is already running, run the digits example on it and follow it to the end.
#   DET_EXAMPLE_PORT=8081 bash scripts/example.sh    # another port
#   bash scripts/example.sh --local                  # no master: run it in this process tree
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh "pytorch,examples"
det=.venv/bin/det
if [ "${1:-}" = "--local" ]; then
    exec "$det" experiment create examples/digits_pytorch/const.yaml examples/digits_pytorch --local
fi
export DET_MASTER="http://127.0.0.1:${DET_EXAMPLE_PORT:-8080}"
data_dir="${DET_EXAMPLE_DATA_DIR:-$HOME/.determined/master}"
started=0
if ! "$det" master config >/dev/null 2>&1; then
    "$det" deploy local up --port "${DET_EXAMPLE_PORT:-8080}" --data-dir "$data_dir"
    started=1
fi
stop() { if [ "$started" = 1 ] && [ -z "${KEEP_MASTER:-}" ]; then "$det" deploy local down --data-dir "$data_dir"; fi; }
trap stop EXIT
"$det" experiment create examples/digits_pytorch/const.yaml examples/digits_pytorch --follow
"$det" experiment list
