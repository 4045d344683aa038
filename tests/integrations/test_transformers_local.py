"""DetCallback with a real transformers Trainer (a 2-layer BERT from a config, random
weights, synthetic data; nothing downloaded), off the platform (core's directory mode)."""

import pytest
import torch
from safetensors.torch import load_file

from determined.core import latest_local_checkpoint, read_records
from tests.integrations.integrations_testing import EXAMPLES, run_example

pytestmark = pytest.mark.timeout(900)

SCRIPT = EXAMPLES / "core_api_transformers" / "train.py"


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
