"""Crash recovery on a real master, checked against an uninterrupted run of the same
experiment: SIGKILL of a trial's processes and SIGKILL of the master, each after a
checkpoint and mid-training. The resumed run must end with exactly the same weights,
optimizer state and metric rows (no metric lost, none stored twice)."""

import os
import signal
from typing import Any, Dict, List

import torch

from master_testing import (
    create_experiment,
    metric_rows,
    slow_model_dir,
    trial_pid,
    wait_for_state,
    wait_until,
)

BATCHES = 80
SLOW_CONFIG: Dict[str, Any] = {
    "entrypoint": "slow_def:SlowTrial",
    "scheduling_unit": 10,
    # 0.15 s a batch: past its first checkpoint (at 30 batches), a trial has 7 s to go, so
    # the SIGKILL that follows lands mid-training even on a loaded machine.
    "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "sleep": 0.15},
    "searcher": {"name": "single", "metric": "validation_loss",
                 "max_length": {"batches": BATCHES}},
    "min_validation_period": {"batches": 40},
    "min_checkpoint_period": {"batches": 20},
    "reproducibility": {"experiment_seed": 1234},
    "max_restarts": 2,
}
EXPECTED = [("training", b) for b in range(10, BATCHES + 1, 10)]
for _b in (40, 80):
    EXPECTED.insert(EXPECTED.index(("training", _b)) + 1, ("validation", _b))


def _trial(api, exp_id) -> Dict[str, Any]:
    trials = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
    return trials[0] if trials else {"id": None, "total_batches": 0}


def _checkpointed(api, exp_id) -> List[int]:
    ckpts = api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
    return [c["total_batches"] for c in ckpts if c["state"] == "COMPLETED"]


def _past_checkpoint(api, exp_id) -> bool:
    """A checkpoint exists and training has gone past it (so work will be redone)."""
    done = _checkpointed(api, exp_id)
    return bool(done) and _trial(api, exp_id)["total_batches"] > max(done)


def _final_state(master, api, exp_id) -> Dict[str, Any]:
    exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=120)
    assert exp["state"] == "COMPLETED", exp
    (trial,) = exp["trials"]
    assert trial["state"] == "COMPLETED" and trial["total_batches"] == BATCHES, trial
    uuid = trial["latest_checkpoint"]
    path = os.path.join(master.data_dir, "checkpoints", uuid, "state_dict.pth")
    return {"trial": trial, "rows": metric_rows(api, trial["id"]),
            "state": torch.load(path, weights_only=False)}


def _assert_equal(a: Any, b: Any, where: str = "state_dict") -> None:
    """Exact equality of nested checkpoint state (tensors with torch.equal)."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b), f"{where} differs"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{where}: keys differ"
        for k in a:
            _assert_equal(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_equal(x, y, f"{where}[{i}]")
    elif hasattr(a, "shape") and hasattr(a, "dtype"):  # numpy arrays (RNG states)
        assert (a == b).all(), f"{where} differs"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def _assert_same_run(resumed: Dict[str, Any], reference: Dict[str, Any]) -> None:
    assert [(k, b) for k, b, _ in resumed["rows"]] == EXPECTED
    assert resumed["rows"] == reference["rows"]  # the same metric values, bit for bit
    _assert_equal(resumed["state"]["models_state_dict"], reference["state"]["models_state_dict"],
                  "models_state_dict")
    _assert_equal(resumed["state"], reference["state"])


def test_trial_sigkill_resumes_bit_identical(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=2)
    model_dir = slow_model_dir(tiny_dir, tmp_path)
    with master.client() as api:
        victim = create_experiment(api, SLOW_CONFIG, model_dir)
        reference = create_experiment(api, SLOW_CONFIG, model_dir)
        wait_until(lambda: _past_checkpoint(api, victim), what="a checkpoint and training past it",
                   timeout=120)
        trial_id = _trial(api, victim)["id"]
        pid = trial_pid(master.data_dir, victim, trial_id)
        assert pid is not None
        os.killpg(pid, signal.SIGKILL)
        killed_at = _trial(api, victim)["total_batches"]
        assert killed_at < BATCHES

        resumed = _final_state(master, api, victim)
        uninterrupted = _final_state(master, api, reference)
    assert resumed["trial"]["restarts"] == 1 and uninterrupted["trial"]["restarts"] == 0
    _assert_same_run(resumed, uninterrupted)


def test_master_sigkill_after_checkpoint_resumes_exactly(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=2)
    model_dir = slow_model_dir(tiny_dir, tmp_path)
    with master.client() as api:
        exp_id = create_experiment(api, SLOW_CONFIG, model_dir)
        wait_until(lambda: _past_checkpoint(api, exp_id), what="a checkpoint and training past it",
                   timeout=120)
        trial_id = _trial(api, exp_id)["id"]
        orphan = trial_pid(master.data_dir, exp_id, trial_id)
    master.sigkill()
    again = master_factory(slots=2, data_dir=master.data_dir, port=master.port)
    # The new master killed the runner the old one left behind (it reported to nobody).
    wait_until(lambda: not os.path.exists(f"/proc/{orphan}") or
               open(f"/proc/{orphan}/stat").read().rsplit(")", 1)[1].split()[0] == "Z",
               what="the orphaned runner to die")
    with again.client() as api:
        resumed = _final_state(again, api, exp_id)
        reference = _final_state(again, api, create_experiment(api, SLOW_CONFIG, model_dir))
        ckpts = api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
    # A master crash is not a failure of the trial.
    assert resumed["trial"]["restarts"] == 0
    batches = [c["total_batches"] for c in ckpts]
    assert len(batches) == len(set(batches)), f"a checkpoint stored twice: {ckpts}"
    _assert_same_run(resumed, reference)
