"""EstimatorTrial: training, make_metric, RunHooks, exports, restore in a new process."""

import os

import numpy as np
import pytest
import tensorflow as tf
from tf_trial_utils import (TrialModule, make_config, plan, run_jobs_in_subprocess, run_trial,
                            val_metric)

from determined.errors import InvalidTrialError

TRIALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trials")
est_trials = TrialModule("est_trials", TRIALS)


def _config(trial="DigitsEstimator", metric="loss", **hparams):
    return make_config(f"est_trials:{trial}", {"global_batch_size": 32, "lr": 0.03, **hparams},
                       metric=metric)


def test_trains_validates_checkpoints_and_exports(tmp_path, monkeypatch):
    monkeypatch.setenv("DET_TENSORBOARD_DIR", str(tmp_path / "tb"))
    est_trials.HOOK_EVENTS.clear()
    host, storage = run_trial(TRIALS, _config(), plan("v", 30, "v"), str(tmp_path))
    losses = val_metric(host, "loss")
    assert losses[-1] < 0.6 * losses[0]
    final = host.validations[-1][1]["validation_metrics"]
    assert final["global_step"] == 30  # TrainSpec.max_steps=3 is ignored
    assert final["accuracy"] > 0.7
    # make_metric with a function and with a MetricReducer agree with tf.metrics
    assert final["fn_accuracy"] == pytest.approx(final["accuracy"], abs=1e-6)
    assert final["reducer_accuracy"] == pytest.approx(final["accuracy"], abs=1e-6)
    assert host.training[0][0] == 30 and len(host.training[0][1]["batch_metrics"]) == 30
    assert host.training[0][1]["num_inputs"] == 30 * 32
    assert host.validations[-1][1]["num_inputs"] == 160

    ckpt = storage.describe(host.checkpoints[-1][1])
    files = os.listdir(ckpt)
    assert "checkpoint" in files and any(f.endswith(".index") for f in files)
    (stamp,) = os.listdir(os.path.join(ckpt, "raw"))  # <name>/<timestamp>/, as upstream
    assert stamp.isdigit() and os.path.isfile(os.path.join(ckpt, "raw", stamp, "saved_model.pb"))
    assert open(os.path.join(ckpt, "hook.txt")).read() == "written by RunHook"
    assert [e[0] for e in est_trials.HOOK_EVENTS] == ["checkpoint_end", "trial_close"]

    # Estimator summaries (training and eval/) are copied to the TensorBoard directory
    events = [os.path.relpath(os.path.join(d, f), tmp_path / "tb")
              for d, _, files in os.walk(tmp_path / "tb") for f in files]
    assert any(e.startswith("events.out.tfevents") for e in events), events
    assert any(e.startswith(os.path.join("eval", "events.out.tfevents")) for e in events), events

    from determined.estimator import load_estimator_from_checkpoint_path

    model = load_estimator_from_checkpoint_path(ckpt)
    x = est_trials.digits()[1][0][:16]
    out = model.signatures["serving_default"](x=tf.constant(x))
    accuracy = np.mean(out["class"].numpy() == est_trials.digits()[1][1][:16])
    assert accuracy > 0.5


def test_resume_in_new_process_matches_straight_run(tmp_path):
    """The input pipeline restarts on resume; at an epoch boundary (20 batches of a
    10-batch epoch) that is the straight run's position, so the weights match."""
    config = _config()
    host, storage = run_trial(TRIALS, config, plan(20, "v", 35), str(tmp_path / "a"))
    mid, end = (storage.describe(u) for _, u, _ in host.checkpoints)
    est_trials.HOOK_EVENTS.clear()
    (result,) = run_jobs_in_subprocess([
        dict(model_dir=TRIALS, config=config, steps=["v", 35], storage_dir=str(tmp_path / "b"),
             latest_checkpoint=mid),
    ])
    first_val = result["validations"][0][1]["validation_metrics"]
    assert first_val["global_step"] == 20
    assert first_val["loss"] == pytest.approx(host.validations[0][1]["validation_metrics"]["loss"])
    resumed = result["checkpoints"][-1][1]

    def variables(path):
        reader = tf.train.load_checkpoint(path)
        return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}

    straight, again = variables(end), variables(resumed)
    assert straight.keys() == again.keys() and any("Adam" in n for n in straight)
    for name in straight:
        assert np.array_equal(straight[name], again[name]), name
    assert straight["global_step"] == 35


def test_run_hook_on_checkpoint_load(tmp_path):
    host, storage = run_trial(TRIALS, _config(), plan(5), str(tmp_path / "a"))
    ckpt = storage.describe(host.checkpoints[-1][1])
    est_trials.HOOK_EVENTS.clear()
    run_trial(TRIALS, _config(), plan(8), str(tmp_path / "b"), latest_checkpoint=ckpt)
    assert est_trials.HOOK_EVENTS[0] == ("checkpoint_load", ckpt)
    assert [e[0] for e in est_trials.HOOK_EVENTS] == ["checkpoint_load", "checkpoint_end",
                                                      "trial_close"]


def test_pedl_era_builders_taking_hparams(tmp_path):
    host, _ = run_trial(TRIALS, _config("PedlEstimator"), plan(10, "v"), str(tmp_path))
    assert host.validations[-1][1]["num_inputs"] == 2 * 32  # EvalSpec(steps=2)


def test_premade_estimator(tmp_path):
    host, _ = run_trial(TRIALS, _config("PremadeEstimator"), plan("v", 30, "v"), str(tmp_path))
    losses = val_metric(host, "loss")
    assert losses[-1] < losses[0]


def test_cached_dataset_inside_input_fn(tmp_path):
    config = make_config(
        "est_trials:CachedEstimator", {"global_batch_size": 32, "lr": 0.01}, metric="loss",
        data_layer={"type": "shared_fs", "host_storage_path": str(tmp_path / "cache")},
    )
    host, _ = run_trial(TRIALS, config, plan(15, "v"), str(tmp_path / "ckpt"))
    assert (tmp_path / "cache" / "est-digits" / "v1" / "COMPLETE").exists()
    assert host.validations[-1][1]["validation_metrics"]["global_step"] == 15


@pytest.mark.parametrize(
    "trial, hparams, words",
    [
        ("NotAnEstimator", {}, "NotAnEstimator.build_estimator must return a tf.estimator.Estimator"),
        ("TupleInputEstimator", {}, "must return a tf.data.Dataset"),
        ("DigitsEstimator", {"no_loss": True}, "DigitsEstimator.build_validation_spec"),
        ("DigitsEstimator", {"bad_metric": "dtype"}, "numpy_dtype='floaty'"),
        ("DigitsEstimator", {"bad_metric": "nested"}, "nested structures are not supported"),
    ],
)
def test_bad_definitions_fail_clearly(trial, hparams, words, tmp_path):
    with pytest.raises(InvalidTrialError) as info:
        run_trial(TRIALS, _config(trial, **hparams), plan(2, "v"), str(tmp_path))
    message = str(info.value)
    assert words in message, message
    assert f"est_trials.py: {trial}." in message, message


def test_trial_seed_makes_initial_weights_reproducible(tmp_path):
    def first_loss(seed, where):
        host, _ = run_trial(TRIALS, _config(), plan("v"), str(tmp_path / where), trial_seed=seed)
        return host.validations[0][1]["validation_metrics"]["loss"]

    assert first_loss(11, "a") == first_loss(11, "b") != first_loss(12, "c")
