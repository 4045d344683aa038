"""DetCallback with a real transformers Trainer (a 2-layer BERT from a config, random
weights, synthetic data; nothing downloaded), off the platform (core's directory mode)."""

import json

import pytest
import torch
from safetensors.torch import load_file

from det_cli_testing import run_det
from determined.core import latest_local_checkpoint, read_records
from tests.integrations.integrations_testing import EXAMPLES, ROOT, run_example

pytestmark = pytest.mark.timeout(900)

SCRIPT = EXAMPLES / "core_api_transformers" / "train.py"
EPOCHS_DIR = ROOT / "tests" / "fixtures" / "hf_epochs"  # 6 steps an epoch, logs every 4


def _final(directory):
    storage_id = latest_local_checkpoint(str(directory))
    assert storage_id is not None
    (ckpt,) = (directory / "checkpoints" / storage_id).glob("checkpoint-*")
    return ckpt


def test_metrics_and_checkpoints_reach_the_directory(tmp_path):
    out = tmp_path / "run"
    run_example(SCRIPT, out, ["--max-steps", "40"])
    records = read_records(str(out))
    training = [r["steps_completed"] for r in records if r["kind"] == "training"]
    assert training == [10, 20, 30, 40]  # the closing summary at 40 is not a second row
    validation = [(r["steps_completed"], r["metrics"]) for r in records
                  if r["kind"] == "validation"]
    assert [s for s, _ in validation] == [20, 40]
    assert {"eval_loss", "eval_accuracy"} <= set(validation[0][1])
    checkpoints = [r for r in records if r["kind"] == "checkpoint"]
    assert [c["steps_completed"] for c in checkpoints] == [20, 40]
    files = {p.name for p in (_final(out)).iterdir()}
    assert {"model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth",
            "trainer_state.json"} <= files
    assert checkpoints[-1]["metadata"]["hf_checkpoint"] == "checkpoint-40"


def test_sigkilled_run_resumes_to_identical_weights(tmp_path):
    """Killed after 45 steps (the latest checkpoint is step 40, inside the second epoch
    of 32 steps), run again: the Trainer skips the batches of that epoch already trained
    and restores the RNG states, so the weights match a run never interrupted."""
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    run_example(SCRIPT, straight, ["--max-steps", "60"])
    run_example(SCRIPT, killed, ["--max-steps", "60"], kill_after=45)
    assert [r["steps_completed"] for r in read_records(str(killed))
            if r["kind"] == "checkpoint"] == [20, 40]
    run_example(SCRIPT, killed, ["--max-steps", "60"])

    a, b = _final(straight), _final(killed)
    assert a.name == b.name == "checkpoint-60"
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys()
    for name in wa:
        assert torch.equal(wa[name], wb[name]), name
    oa = torch.load(a / "optimizer.pt", weights_only=False)["state"]
    ob = torch.load(b / "optimizer.pt", weights_only=False)["state"]
    for key in oa:
        assert torch.equal(oa[key]["exp_avg"], ob[key]["exp_avg"])
    validation = [r["steps_completed"] for r in read_records(str(killed))
                  if r["kind"] == "validation"]
    assert validation == [20, 40, 60]


def test_training_metrics_of_every_epoch_are_kept_with_a_length_in_epochs(tmp_path):
    """Steps are counted in epochs: the logs at steps 4 and 8 were sent at 0 and 1 epochs
    (floored), at or below what the platform had (the validation at 1), and dropped."""
    local = tmp_path / "local"
    out = run_det(["e", "create", EPOCHS_DIR / "const.yaml", EPOCHS_DIR, "--local",
                   "--local-dir", local, "--json", "--no-progress"],
                  env={"HF_HUB_OFFLINE": "1", "USE_TF": "0", "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (exp,) = json.loads(run_det(["e", "describe", "1", "--local-dir", local, "--json",
                                 "--metrics"]).stdout)
    rows = [(m["kind"], m["total_batches"]) for m in exp["trials"][0]["metrics"]]
    assert rows == [(kind, epochs) for epochs in (1, 2, 3)
                    for kind in ("training", "validation")], rows
    first = exp["trials"][0]["metrics"][0]["metrics"]
    assert first["epoch"] < 1  # the log at step 4, inside the first epoch
