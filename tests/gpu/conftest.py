"""``DET_GPU_TEST_TIMEOUT`` (seconds), set by the GPU check (scripts/gpu-check.sh),
overrides these tests' own ``timeout`` marks, so that a test that hangs fails with its
stack trace (and the check goes on) before the check's cap stops pytest.

The check runs the test files side by side on pytest-xdist workers (``--dist
loadfile``): tests that share an expensive module fixture stay in one file, long
scenarios get files of their own (the restore-anywhere ones: test_gpu_restore*.py)."""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    limit = os.environ.get("DET_GPU_TEST_TIMEOUT")
    if not limit:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.path).startswith(here + os.sep):
            item.add_marker(pytest.mark.timeout(float(limit)), append=False)
