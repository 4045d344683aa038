#!/usr/bin/env bash
# Set up the environment with every extra (PyTorch, TensorFlow, test tools) and run the whole test suite.
# Without arguments, first the tests marked default_install (TensorBoard and shell end to end)
# in .venv-default: the README's default install (extras pytorch,examples; numpy 2).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
    scripts/setup-venv.sh "pytorch,examples" .venv-default
    .venv-default/bin/python -m pip install --quiet "pytest>=7" "pytest-timeout>=2.2"
    .venv-default/bin/python -m pytest -q -p no:cacheprovider -m default_install \
        tests/master/tasks/test_tasks_default_install.py
fi
scripts/setup-venv.sh "pytorch,tensorflow,examples,test,bench,s3,gcs,ray,notebook,lightning,transformers"
# The web UI's unit tests (Vitest) first, so pytest's summary stays the last line.
scripts/build-webui.sh --test
# Two workers (pytest-xdist), a test file each at a time (its module fixtures -- a shared
# master, a browser -- start once): most tests wait on the processes they start, so one
# worker kept one of the two cores busy. DET_TEST_WORKERS=0 runs them in this process.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "${DET_TEST_WORKERS:-2}" \
    --dist loadfile "$@"
