"""What the trials of ``tests/fixtures/upstream_compat`` report, as plain JSON written
out by hand (the oracle of the compatibility tests, locally and on a master)."""

from typing import Any, Dict, List

import numpy as np

# A trial that validates with the draws of its random generators (warm-start tests).
DRAWS: Dict[str, Any] = {
    "entrypoint": "model_def:DrawsTrial", "scheduling_unit": 10,
    "hyperparameters": {"global_batch_size": 16},
    "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 20}},
    "min_validation_period": {"batches": 10}, "min_checkpoint_period": {"batches": 10},
    "checkpoint_storage": {"save_trial_latest": 2}, "max_restarts": 0,
}

# A PBT search of the DRAWS trial in which exactly one trial is cloned by exploit.
PBT = dict(DRAWS, hyperparameters={
    "global_batch_size": 16, "lr": {"type": "log", "minval": -2, "maxval": -0.5}},
    searcher={"name": "pbt", "metric": "validation_loss", "population_size": 3,
              "num_rounds": 2, "length_per_round": {"batches": 10},
              "replace_function": {"truncate_fraction": 0.34},
              "explore_function": {"resample_probability": 0.3, "perturb_factor": 0.2}},
    reproducibility={"experiment_seed": 3}, min_checkpoint_period=None)


def check_pbt_lineage(by_id: Dict[int, Dict[str, Any]]) -> None:
    """The PBT search's trials (described, by id): one clone, a warm start that names
    its parent's checkpoint by uuid and by the ``id`` it has in the parent's steps."""
    checkpoint_ids = {s["checkpoint"]["uuid"]: (tid, s["checkpoint"]["id"])
                      for tid, t in by_id.items() for s in t["steps"] if s["checkpoint"]}
    clones = [t for t in by_id.values() if t["warm_start_checkpoint"]]
    assert len(by_id) == 4 and len(clones) == 1
    parent, ckpt_id = checkpoint_ids[clones[0]["warm_start_checkpoint"]]
    assert parent != clones[0]["id"] and clones[0]["warm_start_checkpoint_id"] == ckpt_id


def batch_metrics(step_id: int, num_batches: int) -> List[Dict[str, Any]]:
    """``StructuredTrial``'s batch metrics of workload ``step_id`` as JSON gives them back:
    arrays and tuples as lists, NumPy scalars as numbers."""
    return [{"loss": float(np.float32(1.0 / (step_id + i + 1))), "count": i,
             "nested": [[i, i + 1], [step_id, 0.5]], "pair": [i, "x"],
             "mapping": {"a": [1, 2, {"b": i}], "c": None}, "array": [0, i, 2 * i],
             "flag": i % 2 == 0} for i in range(num_batches)]


def validation_metrics(w: float) -> Dict[str, Any]:
    return {"validation_error": 1.0 / (w + 1), "confusion": [[3, 1], [0, 4]],
            "per_class": [{"name": "a", "recall": 0.75}, [1.0, 0.0]], "w": w}


def check_structured_steps(steps: List[Dict[str, Any]]) -> None:
    """``StructuredTrial`` with perform_initial_validation, 2-batch steps and 4 batches:
    step 0 (validation only), then 2 and 4."""
    assert [s["total_batches"] for s in steps] == [0, 2, 4]
    assert steps[0]["metrics"] is None
    for step, (step_id, w) in zip(steps, [(0, 0.0), (1, 2.0), (2, 4.0)]):
        assert step["validation"]["metrics"]["validation_metrics"] == validation_metrics(w)
        if step_id == 0:
            continue
        training = step["metrics"]
        assert training["batch_metrics"] == batch_metrics(step_id, 2)
        assert training["num_inputs"] == 8
        losses = [b["loss"] for b in batch_metrics(step_id, 2)]
        assert training["avg_metrics"]["loss"] == pytest_approx(sum(losses) / 2)
        assert training["avg_metrics"]["count"] == 0.5


def pytest_approx(value: float) -> Any:
    import pytest

    return pytest.approx(value, rel=1e-6)


#: ``estimator_def:LinearEstimator`` whose second validation's hook calls request_stop().
ESTIMATOR = {
    "entrypoint": "estimator_def:LinearEstimator", "scheduling_unit": 5,
    "hyperparameters": {"global_batch_size": 16, "stop_eval_at_validation": 2},
    "searcher": {"name": "single", "metric": "mse", "max_length": {"batches": 20}},
    "min_validation_period": {"batches": 5}, "max_restarts": 0,
}


def check_estimator_steps(steps: List[Dict[str, Any]]) -> None:
    """Per-batch losses in every training step; the validation at 10 batches was
    stopped by the hook after 2 of its 4 batches and the trial ended there."""
    assert [s["total_batches"] for s in steps] == [5, 10]
    for s in steps:
        batch = s["metrics"]["batch_metrics"]
        assert len(batch) == 5 and all(isinstance(b["loss"], float) for b in batch)
        assert s["metrics"]["avg_metrics"]["loss"] == pytest_approx(
            sum(b["loss"] for b in batch) / 5)
    assert [s["validation"]["metrics"]["num_inputs"] for s in steps] == [64, 32]
    assert steps[-1]["checkpoint"]["state"] == "COMPLETED"
