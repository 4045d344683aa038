"""Every TFKerasTrial input type trains and its validation metric improves."""

import os

import pytest
from tf_trial_utils import TrialModule, make_config, plan, run_trial, val_metric

TRIALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trials")
keras_trials = TrialModule("keras_trials", TRIALS)

KINDS = [
    "arrays",
    "weights",
    "list_inputs",
    "dict_inputs",
    "dataset",
    "dataset_weights",
    "sequence",
    "sequence_weights",
    "adapter_threads",
    "adapter_processes",
    "adapter_main",
]


@pytest.mark.parametrize("kind", KINDS)
def test_input_type_trains_and_validation_improves(kind, tmp_path):
    config = make_config("keras_trials:LoaderTrial",
                         {"global_batch_size": 32, "loader": kind, "lr": 0.02})
    host, storage = run_trial(TRIALS, config, plan("v", 40, "v"), str(tmp_path))

    losses = val_metric(host, "val_loss")
    assert losses[-1] < 0.7 * losses[0], losses
    assert val_metric(host, "val_accuracy")[-1] > 0.6
    (batches, metrics), = host.training
    assert batches == 40
    assert len(metrics["batch_metrics"]) == 40
    assert set(metrics["batch_metrics"][0]) == {"loss", "accuracy"}
    assert metrics["num_inputs"] == 40 * 32  # 320 records = 10 full batches per epoch
    assert host.validations[-1][1]["num_inputs"] == 160
    assert len(host.checkpoints) == 1 and host.checkpoints[0][0] == 40
    files = os.listdir(storage.describe(host.checkpoints[0][1]))
    assert "determined-keras-model.h5" in files and "metadata.json" in files


def test_training_metrics_are_per_batch_values(tmp_path):
    config = make_config("keras_trials:LoaderTrial",
                         {"global_batch_size": 32, "loader": "arrays", "lr": 0.02})
    host, _ = run_trial(TRIALS, config, plan(20), str(tmp_path))
    accuracies = [m["accuracy"] for m in host.training[0][1]["batch_metrics"]]
    # per-batch accuracy over 32 records is a multiple of 1/32 (a running mean would not be)
    assert all(abs(a * 32 - round(a * 32)) < 1e-4 for a in accuracies)
    avg = host.training[0][1]["avg_metrics"]
    assert avg["accuracy"] == pytest.approx(sum(accuracies) / len(accuracies))


def test_cached_dataset_is_stored_once_and_reused(tmp_path):
    cache_root = tmp_path / "cache"
    config = make_config(
        "keras_trials:LoaderTrial", {"global_batch_size": 32, "loader": "cached", "lr": 0.02},
        data_layer={"type": "shared_fs", "host_storage_path": str(cache_root)},
    )
    keras_trials.CACHE_CALLS.clear()
    host, _ = run_trial(TRIALS, config, plan(20, "v"), str(tmp_path / "a"))
    assert keras_trials.CACHE_CALLS == [True, False]
    assert (cache_root / "digits" / "v1" / "COMPLETE").exists()
    assert (cache_root / "digits-val" / "v1" / "COMPLETE").exists()
    first = val_metric(host, "val_loss")

    host, _ = run_trial(TRIALS, config, plan(20, "v"), str(tmp_path / "b"))
    assert keras_trials.CACHE_CALLS == [True, False]  # read back, not rebuilt
    assert val_metric(host, "val_loss") == pytest.approx(first)  # same seed, same shuffle


def test_trial_seed_makes_initial_weights_reproducible(tmp_path):
    config = make_config("keras_trials:LoaderTrial",
                         {"global_batch_size": 32, "loader": "arrays", "lr": 0.02})

    def first_loss(seed, where):
        host, _ = run_trial(TRIALS, config, plan("v"), str(tmp_path / where), trial_seed=seed)
        return val_metric(host, "val_loss")[0]

    assert first_loss(11, "a") == first_loss(11, "b") != first_loss(12, "c")
