"""The Core API, Lightning and Hugging Face examples as experiments with ``det
experiment create --local``: each adaptive_asha search (shrunk) completes, every trial
validates at the searcher's lengths and checkpoints into the experiment's storage."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from det_cli_testing import run_det
from tests.integrations.integrations_testing import EXAMPLES

pytestmark = pytest.mark.timeout(900)

#: example -> searcher.max_length of the shrunk search (rungs: a quarter, all of it)
SHRUNK = {
    "core_api_pytorch": {"batches": 80},
    "core_api_lightning": {"epochs": 4},
    "core_api_transformers": {"batches": 40},
}


def shrunk_config(example: str, tmp_path, max_trials: int = 2) -> str:
    config = yaml.safe_load((EXAMPLES / example / "adaptive.yaml").read_text())
    config["searcher"].update({"max_trials": max_trials, "max_length": SHRUNK[example]})
    if example == "core_api_lightning":
        config["hyperparameters"]["batch_size"] = 64  # fewer, faster steps
    path = tmp_path / f"{example}.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.mark.parametrize("example", sorted(SHRUNK))
def test_example_adaptive_search_completes_locally(example, tmp_path):
    out = run_det(["e", "create", shrunk_config(example, tmp_path), EXAMPLES / example,
                   "--local", "--local-dir", tmp_path / "local", "--json", "--no-progress"],
                  env={"HF_HUB_OFFLINE": "1", "USE_TF": "0", "OMP_NUM_THREADS": "1"}, timeout=800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["state"] == "COMPLETED"
    trials = result["trials"]
    assert len(trials) == 2 and all(t["state"] == "COMPLETED" for t in trials)
    unit, length = next(iter(SHRUNK[example].items()))
    # ASHA trains every trial to the first rung (a quarter) and at least one to the end.
    assert sorted(t["batches"] for t in trials)[-1] == length
    assert all(t["batches"] in (length // 4, length) for t in trials)
    for t in trials:
        assert t["latest_checkpoint"] and t["best_metric"] is not None
    metric = yaml.safe_load((EXAMPLES / example / "adaptive.yaml").read_text())["searcher"]["metric"]
    assert metric in result["best_trial"]["latest_validation"]


@pytest.mark.parametrize("example,extra", [("core_api_lightning", "lightning"),
                                           ("core_api_transformers", "transformers")])
def test_example_without_its_extra_names_the_extra(example, extra, tmp_path):
    """In the README's default install (extras pytorch,examples) these examples ended in a
    bare ModuleNotFoundError; they name the extra to install. The package is hidden the
    way a missing one fails (None in sys.modules raises ModuleNotFoundError)."""
    hide = (f"import runpy, sys; sys.modules[{extra!r}] = None; "
            f"runpy.run_path('train.py', run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", hide], cwd=EXAMPLES / example,
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "DET_CORE_DIR": str(tmp_path)})
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"this example needs the '{extra}' extra (pip install -e '.[{extra}]'" in out.stderr
    assert "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize("example", sorted(SHRUNK))
def test_example_passes_the_model_definition_test(example, tmp_path):
    """`det e create ... --local --test` (one batch, validate, checkpoint): the Lightning
    example read its length as epochs and failed with KeyError: 'epochs' on the test
    mode's one batch."""
    out = run_det(["e", "create", EXAMPLES / example / "adaptive.yaml", EXAMPLES / example,
                   "--local", "--test", "--local-dir", tmp_path / "local"],
                  env={"HF_HUB_OFFLINE": "1", "USE_TF": "0", "OMP_NUM_THREADS": "1"}, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Model definition test succeeded" in out.stdout + out.stderr


def test_transformers_example_takes_its_length_in_epochs(tmp_path):
    """The README says a script's length may be in epochs: the Hugging Face example read
    ``max_length["batches"]`` only and failed with KeyError: 'epochs'. One trial of one
    epoch (the Trainer counts it) completes."""
    config = yaml.safe_load((EXAMPLES / "core_api_transformers" / "adaptive.yaml").read_text())
    config["hyperparameters"] = {"batch_size": 16, "learning_rate": 0.001,
                                 "hidden_dropout": 0.1}
    config["searcher"] = {"name": "single", "metric": "eval_loss", "max_length": {"epochs": 1}}
    config["records_per_epoch"] = 64
    path = tmp_path / "epochs.yaml"
    path.write_text(yaml.safe_dump(config))
    out = run_det(["e", "create", path, EXAMPLES / "core_api_transformers", "--local",
                   "--local-dir", tmp_path / "local", "--json", "--no-progress"],
                  env={"HF_HUB_OFFLINE": "1", "USE_TF": "0", "OMP_NUM_THREADS": "1"}, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (trial,) = json.loads(out.stdout)["trials"]
    assert trial["state"] == "COMPLETED", trial
