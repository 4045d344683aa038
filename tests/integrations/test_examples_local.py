"""The Core API, Lightning and Hugging Face examples as experiments with ``det
experiment create --local``: each adaptive_asha search (shrunk) completes, every trial
validates at the searcher's lengths and checkpoints into the experiment's storage."""

import json

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
