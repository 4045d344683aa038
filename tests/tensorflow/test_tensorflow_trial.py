"""The low-level TensorFlowTrial (seed 004): one graph, platform-owned session."""

import os

import numpy as np
import pytest
import tensorflow as tf
from tf_trial_utils import make_config, plan, run_jobs_in_subprocess, run_trial, val_metric

from determined.errors import InvalidModelDefError, InvalidTrialError

TRIALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trials")


def _config(trial="GraphTrial", **hparams):
    return make_config(f"tf_trials:{trial}", {"global_batch_size": 32, "lr": 0.02, **hparams},
                       metric="loss")


def test_trains_and_validation_improves(tmp_path):
    host, storage = run_trial(TRIALS, _config(dropout=0.2, shuffle=True),
                              plan("v", 25, "v", 40, "v"), str(tmp_path))
    losses = val_metric(host, "loss")
    assert losses[0] > losses[1] > losses[2]
    assert val_metric(host, "accuracy")[-1] > 0.75
    # is_training is True while training and False while validating
    assert val_metric(host, "training_flag") == [0.0, 0.0, 0.0]
    train = host.training[0][1]
    assert {m["training_flag"] for m in train["batch_metrics"]} == {1.0}
    assert set(train["batch_metrics"][0]) == {"loss", "accuracy", "training_flag"}
    assert train["avg_metrics"]["loss"] == pytest.approx(
        np.mean([m["loss"] for m in train["batch_metrics"]]))
    assert train["num_inputs"] == 25 * 32
    # validation: per-batch metrics averaged over the 5 batches of 150 records (last has 22)
    assert host.validations[0][1]["num_inputs"] == 150
    counts = host.validations[0][1]["validation_metrics"]["class_counts"]
    assert len(counts) == 10 and sum(counts) == pytest.approx(150 / 5)
    files = os.listdir(storage.describe(host.checkpoints[-1][1]))
    assert "model.ckpt.index" in files and "determined-tensorflow-state.json" in files


def test_batches_per_step_alias_sets_workload_size(tmp_path):
    config = make_config("tf_trials:GraphTrial", {"global_batch_size": 32, "lr": 0.02},
                         metric="loss", batches_per_step=7)
    host, _ = run_trial(TRIALS, config, plan(20), str(tmp_path))
    assert [b for b, _ in host.training] == [7, 14, 20]
    assert [len(m["batch_metrics"]) for _, m in host.training] == [7, 7, 6]


def test_resume_in_new_process_matches_straight_run(tmp_path):
    """Weights, optimizer slots and the data position (mid-epoch) are restored."""
    config = _config()
    host, storage = run_trial(TRIALS, config, plan(25, "v", 47), str(tmp_path / "a"))
    mid, end = (storage.describe(u) for _, u, _ in host.checkpoints)
    (result,) = run_jobs_in_subprocess([
        dict(model_dir=TRIALS, config=config, steps=[47], storage_dir=str(tmp_path / "b"),
             latest_checkpoint=mid),
    ])
    resumed = result["checkpoints"][-1][1]
    straight_vars = tf.train.load_checkpoint(os.path.join(end, "model.ckpt"))
    resumed_vars = tf.train.load_checkpoint(os.path.join(resumed, "model.ckpt"))
    names = sorted(straight_vars.get_variable_to_shape_map())
    assert any("Adam" in n for n in names) and "global_step" in names
    assert names == sorted(resumed_vars.get_variable_to_shape_map())
    for name in names:
        assert np.array_equal(straight_vars.get_tensor(name), resumed_vars.get_tensor(name)), name
    assert straight_vars.get_tensor("global_step") == 47


@pytest.mark.parametrize(
    "trial, hparams, error, words",
    [
        ("NoLossTrial", {}, InvalidTrialError, "NoLossTrial.build_graph must return a dict"),
        ("UnknownMetricTrial", {}, InvalidTrialError, "UnknownMetricTrial.validation_metrics names ['f1']"),
        ("LossInTrainingMetricsTrial", {}, InvalidTrialError, "must not list 'loss'"),
        ("BadOptimizerTrial", {}, InvalidTrialError, "BadOptimizerTrial.optimizer must return"),
        ("GraphTrial", {"loaders": "arrays"}, InvalidTrialError, "pair of batched tf.data.Dataset"),
        ("GraphTrial", {"loaders": "mismatch"}, InvalidTrialError, "same element structure"),
    ],
)
def test_bad_definitions_fail_clearly(trial, hparams, error, words, tmp_path):
    with pytest.raises(error) as info:
        run_trial(TRIALS, _config(trial, **hparams), plan(2), str(tmp_path))
    assert words in str(info.value)


def test_module_without_make_data_loaders(tmp_path):
    config = make_config("tf_trials_noloader:OrphanTrial", {"global_batch_size": 32},
                         metric="loss")
    with pytest.raises(InvalidModelDefError, match="tf_trials_noloader.py.*make_data_loaders"):
        run_trial(TRIALS, config, plan(2), str(tmp_path))


def test_trial_seed_makes_initial_weights_reproducible(tmp_path):
    def first_loss(seed, where):
        host, _ = run_trial(TRIALS, _config(), plan("v"), str(tmp_path / where), trial_seed=seed)
        return val_metric(host, "loss")[0]

    assert first_loss(11, "a") == first_loss(11, "b") != first_loss(12, "c")
