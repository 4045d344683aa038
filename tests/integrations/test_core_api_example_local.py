"""examples/core_api_pytorch by hand (core's directory mode): SIGKILLed mid-training and
run again, it ends with the same weights, optimizer and RNG state as a run never
interrupted."""

import pytest
import torch

from determined.core import latest_local_checkpoint, read_records
from tests.integrations.integrations_testing import EXAMPLES, run_example

pytestmark = pytest.mark.timeout(600)

SCRIPT = EXAMPLES / "core_api_pytorch" / "train.py"
ARGS = ["--batches", "120", "--checkpoint-every", "25"]


def _final(directory):
    storage_id = latest_local_checkpoint(str(directory))
    return torch.load(directory / "checkpoints" / storage_id / "state.pt", weights_only=False)


def test_sigkilled_core_api_example_resumes_to_identical_weights(tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    run_example(SCRIPT, straight, ARGS)
    run_example(SCRIPT, killed, ARGS, kill_after=60)  # latest checkpoint: step 50
    assert [r["steps_completed"] for r in read_records(str(killed))
            if r["kind"] == "checkpoint"] == [25, 50]
    done = run_example(SCRIPT, killed, ARGS)
    assert "at step 50" in done.stdout

    a, b = _final(straight), _final(killed)
    assert a["steps"] == b["steps"] == 120
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name
    assert torch.equal(a["rng"], b["rng"])
    assert a["opt"]["state"].keys() == b["opt"]["state"].keys()
    for key in a["opt"]["state"]:
        assert torch.equal(a["opt"]["state"][key]["momentum_buffer"],
                           b["opt"]["state"][key]["momentum_buffer"])


def test_the_example_by_hand_says_what_it_did(tmp_path):
    """Run by hand (README: "By hand ... python train.py") it printed nothing at all."""
    done = run_example(SCRIPT, tmp_path / "core", ["--batches", "20"])
    assert "validated at step 20: validation_error 0." in done.stdout, done.stdout
