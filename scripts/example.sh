#!/usr/bin/env bash
# Set up the environment and run the digits example experiment end to end on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh "pytorch,examples"
exec .venv/bin/det experiment create examples/digits_pytorch/const.yaml examples/digits_pytorch --local "$@"
