"""What importing the pure packages and the master pulls in: the engine loads no trial
runner, framework, numpy or TensorBoard; the master (and its API) loads no trial runner,
framework or TensorBoard; ``import determined`` loads upstream's names on first use."""

import json
import subprocess
import sys

import pytest

RUNNER = ("determined.harness", "determined.harness._runner")
FRAMEWORKS = ("torch", "tensorflow", "tensorboard", "keras")


def _loaded(module: str, watch) -> list:
    code = (f"import json, sys, {module}; "
            f"print(json.dumps(sorted(m for m in {list(watch)!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["determined", "determined.engine", "determined.searcher",
                                    "determined.config", "determined.trial_ops"])
def test_pure_packages_load_no_runner_framework_or_numpy(module):
    assert _loaded(module, RUNNER + FRAMEWORKS + ("numpy",)) == []


@pytest.mark.parametrize("module", ["determined.master", "determined.master._core",
                                    "determined.master.api", "determined.cli"])
def test_master_and_cli_load_no_runner_or_framework(module):
    assert _loaded(module, RUNNER + FRAMEWORKS) == []


def test_upstream_names_still_import_from_the_package():
    code = ("import determined as det; from determined import TrialContext, Log; "
            "print(det.CallbackTrialController.__name__, det.EnvContext.__name__, "
            "TrialContext.__name__, Log(-3, -1)['type'], det.util.__name__, "
            "'Trial' in dir(det))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True)
    assert out.stdout.split() == ["CallbackTrialController", "EnvContext", "TrialContext",
                                  "log", "determined.util", "True"]
    bad = subprocess.run([sys.executable, "-c", "import determined; determined.NoSuchName"],
                         capture_output=True, text=True, timeout=300)
    assert "module 'determined' has no attribute 'NoSuchName'" in bad.stderr
