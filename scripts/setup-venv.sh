#!/usr/bin/env bash
# Create a venv (if missing) and install the package with the given extras.
# Usage: scripts/setup-venv.sh [EXTRAS] [VENV]   e.g. "pytorch,examples" .venv
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-pytorch,examples}"
venv="${2:-.venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
# torch is pinned: an unpinned torch pulls a multi-GB CUDA build.
"$venv/bin/python" -m pip install --quiet "torch==2.13.0"
# The web UI (npm ci + build into the package) when its sources changed.
scripts/build-webui.sh
"$venv/bin/python" -m pip install --quiet -e ".[${extras}]"
