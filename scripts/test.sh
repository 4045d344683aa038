#!/usr/bin/env bash
# Set up the environment with every extra (PyTorch, TensorFlow, test tools) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh "pytorch,tensorflow,examples,test,bench,s3,gcs,ray,notebook"
# The web UI's unit tests (Vitest) first, so pytest's summary stays the last line.
scripts/build-webui.sh --test
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
