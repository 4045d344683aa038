"""Shared fixtures: paths to the repository's examples and test model directories."""

import pathlib

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
    # Login tokens of `det` and the SDK (auth.json) likewise.
    monkeypatch.setenv("DET_AUTH_DIR", str(tmp_path / "det-auth"))
    yield
