"""``core.train.get_experiment_best_validation()`` answers the experiment's best
searcher-metric value so far, on ``--local`` (through the local driver and the script's
link) and on a master (through its trial-runner API)."""

import json
import pathlib

import pytest
import yaml

from det_cli_testing import run_det

pytestmark = pytest.mark.timeout(600)

SCRIPT_DIR = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "core_best"


def best_config(tmp_path, smaller_is_better):
    cfg = yaml.safe_load((SCRIPT_DIR / "const.yaml").read_text())
    out = tmp_path / "seen.json"
    cfg["hyperparameters"]["out_file"] = str(out)
    cfg["searcher"]["smaller_is_better"] = smaller_is_better
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path, out


@pytest.mark.parametrize("smaller_is_better, expected",
                         [(True, [3.0, 1.0, 1.0]), (False, [3.0, 3.0, 3.0])])
def test_best_validation_so_far_on_local_runs(tmp_path, smaller_is_better, expected):
    config, out = best_config(tmp_path, smaller_is_better)
    done = run_det(["e", "create", config, SCRIPT_DIR, "--local", "--local-dir",
                    tmp_path / "local", "--no-progress"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(out.read_text()) == expected
