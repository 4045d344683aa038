"""Subclassed models, loading models from checkpoints and graph mode."""

import os

import numpy as np
from tf_trial_utils import (
    PREVIOUS,
    make_config,
    plan,
    run_jobs_in_subprocess,
    val_metric,
)

from determined.harness import InProcessHost, TrialEnv, TrialRunner
from determined.storage import SharedFSStorageManager

TRIALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trials")


def _runner(config, storage_dir, ops, latest_checkpoint=None):
    hparams = {k: v["val"] for k, v in config["hyperparameters"].items()}
    env = TrialEnv(config, hparams, TRIALS, trial_seed=3, latest_checkpoint=latest_checkpoint)
    storage = SharedFSStorageManager(storage_dir)
    host = InProcessHost(ops)
    return TrialRunner(env, host, storage), host, storage


def test_load_model_from_checkpoint_path_rebuilds_the_trained_model(tmp_path):
    from determined.keras import load_model_from_checkpoint_path

    config = make_config("keras_trials:LoaderTrial",
                         {"global_batch_size": 32, "loader": "arrays", "lr": 0.02})
    runner, host, storage = _runner(config, str(tmp_path), plan(30))
    runner.run()
    trained = runner.controller.model
    model = load_model_from_checkpoint_path(storage.describe(host.checkpoints[-1][1]))
    x = np.random.RandomState(0).rand(8, 64).astype("float32")
    assert np.array_equal(model.predict(x, verbose=0), trained.predict(x, verbose=0))
    assert model is not trained


def test_subclassed_model_checkpoint_round_trip(tmp_path):
    config = make_config("keras_trials:SubclassedTrial",
                         {"global_batch_size": 32, "loader": "arrays", "lr": 0.02})
    runner, host, storage = _runner(config, str(tmp_path / "a"), plan("v", 20, "v"))
    runner.run()
    assert val_metric(host, "val_loss")[-1] < val_metric(host, "val_loss")[0]
    ckpt = storage.describe(host.checkpoints[-1][1])

    resumed, host2, _ = _runner(config, str(tmp_path / "b"), plan("v"), latest_checkpoint=ckpt)
    for a, b in zip(runner.controller.model.get_weights(), resumed.controller.model.get_weights()):
        assert np.array_equal(a, b)
    assert int(resumed.controller.model.optimizer.iterations.numpy()) == 20
    resumed.run()
    assert host2.validations[0][1]["validation_metrics"]["val_loss"] == val_metric(host, "val_loss")[-1]


def test_graph_mode_trial_trains_and_resumes(tmp_path):
    """tf.compat.v1.disable_eager_execution() in __init__: Keras's graph-mode engine."""
    config = make_config("keras_trials:GraphModeTrial",
                         {"global_batch_size": 32, "loader": "arrays", "lr": 0.02})
    dataset_config = make_config("keras_trials:GraphModeTrial",
                                 {"global_batch_size": 32, "loader": "dataset", "lr": 0.02})
    first, resumed, with_dataset = run_jobs_in_subprocess([
        dict(model_dir=TRIALS, config=config, steps=["v", 30, "v"], storage_dir=str(tmp_path / "a")),
        dict(model_dir=TRIALS, config=config, steps=["v", 40, "v"],
             storage_dir=str(tmp_path / "b"), latest_checkpoint=PREVIOUS),
        dict(model_dir=TRIALS, config=dataset_config, steps=["v", 30, "v"],
             storage_dir=str(tmp_path / "c")),
    ])
    losses = [m["validation_metrics"]["val_loss"] for _, m in first["validations"]]
    assert losses[-1] < 0.7 * losses[0]
    restored = resumed["validations"][0][1]["validation_metrics"]["val_loss"]
    assert abs(restored - losses[-1]) < 1e-5
    assert resumed["training"][0][0] == 40
    ds_losses = [m["validation_metrics"]["val_loss"] for _, m in with_dataset["validations"]]
    assert ds_losses[-1] < 0.7 * ds_losses[0]


def test_graph_mode_needs_a_legacy_optimizer(tmp_path):
    import pytest

    config = make_config("keras_trials:GraphModeTrial",
                         {"global_batch_size": 32, "loader": "arrays", "lr": 0.02,
                          "new_optimizer": True})
    with pytest.raises(AssertionError) as info:
        run_jobs_in_subprocess([dict(model_dir=TRIALS, config=config, steps=[5],
                                     storage_dir=str(tmp_path))])
    assert "GraphModeTrial.build_model" in str(info.value)
    assert "tf.keras.optimizers.legacy" in str(info.value)
