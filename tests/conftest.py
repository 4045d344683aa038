"""Shared fixtures: paths to the repository's examples and test model directories."""

import pathlib
import signal

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"


def pytest_configure(config):
    """A suite started in the background of a non-interactive shell (``pytest ... &``)
    inherits SIGINT ignored, and so would every process it starts: Python then installs
    no KeyboardInterrupt handler in them, and the tests that press Ctrl-C on a command
    would see it ignored. Give the suite, and so its children, the default handling."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` run only where ``nvidia-smi`` lists a GPU; elsewhere they are
    deselected (and counted in the summary), since nothing can stand in for one. Their
    CPU variants (marked ``cpu_twin``) run only where there is none: there every slot is
    a GPU."""
    marked = [item for item in items
              if item.get_closest_marker("gpu") or item.get_closest_marker("cpu_twin")]
    if not marked:
        return
    from determined._procs._gpus import detect_gpus

    unwanted = "cpu_twin" if detect_gpus() else "gpu"
    dropped = [item for item in marked if item.get_closest_marker(unwanted)]
    if not dropped:
        return
    config.hook.pytest_deselected(items=dropped)
    items[:] = [item for item in items if not item.get_closest_marker(unwanted)]
    config._det_gpu_deselected = (unwanted, len(dropped))


def pytest_terminal_summary(terminalreporter, config):
    unwanted, count = getattr(config, "_det_gpu_deselected", (None, 0))
    if unwanted == "gpu":
        terminalreporter.write_line(f"{count} GPU test(s) deselected: no NVIDIA GPU here "
                                    "(run them on a GPU machine: pytest -m gpu)")
    elif unwanted:
        terminalreporter.write_line(f"{count} CPU variant(s) of GPU tests deselected: "
                                    "this machine's slots are GPUs")


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
