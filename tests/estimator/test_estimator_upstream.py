"""EstimatorTrial as upstream 0.13: v1 estimators, hooks once per batch, request_stop()
in training (stop request) and evaluation (ends the validation), exports in
``<checkpoint>/<name>/<timestamp>/``."""

import os

from tf_trial_utils import TrialModule, make_config, plan, run_trial

TRIALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trials")
trials = TrialModule("est_upstream_trials", TRIALS)


def _config(trial="V1Estimator", **hparams):
    return make_config(f"est_upstream_trials:{trial}",
                       {"global_batch_size": 32, "lr": 0.03, **hparams}, metric="loss",
                       scheduling_unit=5)


def _reset():
    for k in trials.EVENTS:
        trials.EVENTS[k] = 0


def test_v1_estimator_hooks_run_once_per_batch_and_exports_have_timestamps(tmp_path):
    _reset()
    host, storage = run_trial(TRIALS, _config(), plan(5, 10, "v"), str(tmp_path))
    assert [len(m["batch_metrics"]) for _, m in host.training] == [5, 5]
    assert trials.EVENTS["train_after_run"] == 10  # 5 per 5-batch workload
    assert trials.EVENTS["eval_after_run"] == 5  # 160 records / 32
    ckpt = storage.describe(host.checkpoints[-1][1])
    (stamp,) = os.listdir(os.path.join(ckpt, "raw"))
    assert stamp.isdigit() and os.path.isfile(os.path.join(ckpt, "raw", stamp, "saved_model.pb"))
    from determined.estimator import load_estimator_from_checkpoint_path

    assert "serving_default" in load_estimator_from_checkpoint_path(ckpt).signatures


def test_canned_v1_estimator_trains(tmp_path):
    _reset()
    host, _ = run_trial(TRIALS, _config("CannedV1Estimator"), plan(5, "v"), str(tmp_path))
    assert host.validations and "loss" in host.validations[-1][1]["validation_metrics"]


def test_request_stop_in_training_is_a_stop_request(tmp_path):
    _reset()
    host, storage = run_trial(TRIALS, _config(stop_train_after=7), plan(5, 10, 15, "v"),
                              str(tmp_path))
    # Batches 1-5, then 6-7 and the hook's stop: the trial checkpoints and stops early.
    assert [len(m["batch_metrics"]) for _, m in host.training] == [5, 2]
    assert host.early_exit == "user_requested_stop"
    assert host.checkpoints and not host.validations


def test_request_stop_in_evaluation_ends_the_validation(tmp_path):
    _reset()
    host, _ = run_trial(TRIALS, _config(stop_eval_after=2), plan(5, "v"), str(tmp_path))
    assert trials.EVENTS["eval_after_run"] == 2
    assert host.validations[-1][1]["num_inputs"] == 64  # 2 of 5 batches evaluated
    assert host.early_exit == "user_requested_stop"  # the trial stops there, as 0.13
