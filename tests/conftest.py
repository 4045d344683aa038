"""Shared fixtures: paths to the repository's examples and test model directories."""

import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"


@pytest.fixture
def tiny_dir() -> pathlib.Path:
    return FIXTURES / "tiny_pytorch"


@pytest.fixture
def examples_dir() -> pathlib.Path:
    return EXAMPLES


@pytest.fixture(autouse=True)
def _isolated_local_dir(tmp_path, monkeypatch):
    """Local experiments write under the test's tmp dir, never ~/.determined."""
    monkeypatch.setenv("DET_LOCAL_DIR", str(tmp_path / "det-local"))
    yield


def run_det(args, cwd=None, timeout=300, env=None):
    """Run the real ``det`` console entry point in a subprocess."""
    import subprocess

    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "determined.cli", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env,
    )
