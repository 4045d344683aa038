"""An adaptive_asha search with the TPE sampler on a real master, SIGKILLed once the
model drives new trials: restored from the database it creates the same trials with the
same hyperparameters and seeds as an uninterrupted run fed the same results.

The uninterrupted run is the pure searcher itself (``determined.searcher.simulate``),
driven with the validation errors the master stored: one trial has work at a time
(``max_concurrent_trials: 1``, one bracket), so the order of results is fixed and
every trial's training is deterministic for its seed."""

from typing import Any, Dict

import pytest

from determined.config import validate_config
from determined.searcher import Create, simulate
from master_testing import create_experiment, metric_rows, wait_for_state, wait_until

pytestmark = pytest.mark.e2e

CONFIG: Dict[str, Any] = {
    "description": "tpe across a master SIGKILL",
    "entrypoint": "model_def:DigitsTrial",
    "records_per_epoch": 1500,
    "scheduling_unit": 10,
    "hyperparameters": {
        "global_batch_size": 32, "dropout": 0.0, "momentum": 0.9,
        "hidden_size": {"type": "int", "minval": 16, "maxval": 64},
        "learning_rate": {"type": "log", "base": 10, "minval": -3, "maxval": -0.5},
    },
    # Two free hyperparameters: the model needs 10 configurations with results; trials
    # 11-13 come from it.
    "searcher": {"name": "adaptive_asha", "metric": "validation_error", "max_trials": 13,
                 "max_length": {"batches": 20}, "divisor": 2, "max_rungs": 2,
                 "mode": "aggressive", "max_concurrent_trials": 1, "sampler": "tpe"},
    "reproducibility": {"experiment_seed": 3},
}


def test_tpe_search_survives_master_sigkill(master_factory, examples_dir):
    master = master_factory(slots=1)
    with master.client() as api:
        exp_id = create_experiment(api, CONFIG, examples_dir / "digits_pytorch")
        wait_until(lambda: len(api.get(f"/experiments/{exp_id}/trials").json()["trials"]) >= 12,
                   timeout=480, what="the twelfth trial (the second the model suggested)")
    master.sigkill()
    again = master_factory(slots=1, data_dir=master.data_dir, port=master.port)
    with again.client() as api:
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
        assert exp["state"] == "COMPLETED", exp
        trials = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
        errors: Dict[int, Dict[int, float]] = {}
        for t in trials:
            seen: Dict[int, float] = {}
            for kind, batches, metrics in metric_rows(api, t["id"]):
                if kind == "validation":  # a validation redone after the restart agrees
                    value = metrics["validation_error"]
                    assert seen.setdefault(batches, value) == value, (t["id"], batches)
            errors[t["seed"]] = seen

    def stored(hparams: Dict[str, Any], units: int, seed: int) -> float:
        return errors[seed][units]  # KeyError: the master ran a trial this run did not

    reference = simulate(validate_config(CONFIG), stored, concurrency=1)
    assert reference.shutdown is not None and not reference.shutdown.failure
    expected = {op.request_id: (op.hparams, op.trial_seed)
                for op in reference.op_log if isinstance(op, Create)}
    got = {int(t["request_id"]): (t["hparams"], t["seed"]) for t in trials}
    assert got == expected
    assert len(got) == 13 and all(t["state"] == "COMPLETED" for t in trials)
