"""tests/gpu/conftest.py, as the GPU check uses it: ``DET_GPU_TEST_TIMEOUT`` overrides
the GPU tests' own timeouts. Checked on the tests this machine collects (their CPU
variants; the GPU ones are deselected without a GPU) through a real pytest run that
prints each collected test's timeout."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent

PLUGIN = '''
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        timeout = item.get_closest_marker("timeout")
        print("ITEM", item.nodeid, timeout.args[0] if timeout else "-")
'''


def timeouts(tmp_path, **env):
    (tmp_path / "print_timeouts.py").write_text(PLUGIN)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]), **env)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-s",
                          "-p", "no:cacheprovider", "-p", "print_timeouts", "tests/gpu"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [line.split(" ") for line in out.stdout.splitlines() if line.startswith("ITEM ")]
    return {nodeid: timeout for _, nodeid, timeout in lines}


def test_gpu_tests_keep_their_own_timeouts_by_default(tmp_path):
    found = timeouts(tmp_path)
    restore = [t for nodeid, t in found.items() if "test_gpu_restore" in nodeid]
    assert restore and set(restore) == {"600"}, found


def test_gpu_test_timeout_overrides_every_tests_own(tmp_path):
    found = timeouts(tmp_path, DET_GPU_TEST_TIMEOUT="77")
    assert found and set(found.values()) == {"77.0"}, found
