"""Shared fixtures: paths to the repository's examples and test model directories."""

import os
import pathlib
import shutil
import signal

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"


_HOME_VARS = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")


def _isolate_home(config) -> None:
    """Everything the suite starts (Chromium's crash reports, Jupyter's runtime files,
    Keras' and matplotlib's config, a master's default directory, ``det``'s tokens)
    writes under a temporary home, never the real one. Tools located by explicit
    variables (PYENV_ROOT, PATH, pip's and npm's settings read before the suite runs)
    are not affected. It is named after this process (``det-test-home-<pid>...``): a
    starter's sweep removes it if this process is killed."""
    from determined.common import scratch

    home = pathlib.Path(scratch.make("test-home", own=True))
    config._det_saved_home = {name: os.environ.get(name) for name in _HOME_VARS}
    config._det_test_home = home
    os.environ["HOME"] = str(home)
    for name, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"),
                      ("XDG_DATA_HOME", ".local/share"), ("XDG_STATE_HOME", ".local/state")):
        os.environ[name] = str(home / sub)


def pytest_unconfigure(config):
    home = getattr(config, "_det_test_home", None)
    if home is None:
        return
    for name, value in config._det_saved_home.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(home, ignore_errors=True)


def pytest_configure(config):
    _isolate_home(config)
    _default_sigint()
    _no_worker_terminal_size()


def _no_worker_terminal_size() -> None:
    """pytest-xdist sets COLUMNS=80 and LINES=24 in its workers; the commands the tests
    start would then fold their output at 80 columns as in a terminal (and read a
    terminal's size from them), unlike the same tests run in one process."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)


def _default_sigint() -> None:
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
