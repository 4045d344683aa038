"""Keras callbacks run at loader-epoch boundaries, per batch and around validation."""

import os

from tf_trial_utils import TrialModule, make_config, plan, run_trial

TRIALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trials")
keras_trials = TrialModule("keras_trials", TRIALS)


def _config(**hparams):
    return make_config("keras_trials:CallbackTrial",
                       {"global_batch_size": 32, "loader": "arrays", "lr": 0.02, **hparams})


def test_callback_order_follows_loader_epochs(tmp_path):
    keras_trials.EVENTS.clear()
    run_trial(TRIALS, _config(), plan(15, "v", 25), str(tmp_path))
    events = keras_trials.EVENTS
    kinds = [e[0] for e in events]
    assert kinds[0] == "train_begin" and kinds[-1] == "train_end"
    assert kinds.count("train_begin") == 1 and kinds.count("train_end") == 1

    # 320 records / 32 = 10 batches per epoch: epochs end after batches 10 and 20
    epoch_events = [(e[0], e[1]) for e in events if e[0] in ("epoch_begin", "epoch_end")]
    assert epoch_events == [("epoch_begin", 0), ("epoch_end", 0), ("epoch_begin", 1),
                            ("epoch_end", 1), ("epoch_begin", 2)]
    batch_ends = [e for e in events if e[0] == "batch_end"]
    assert len(batch_ends) == 25
    assert [e[1] for e in batch_ends[:12]] == list(range(10)) + [0, 1]
    assert set(batch_ends[0][2]) == {"loss", "accuracy"}

    # validation after batch 15: inside epoch 1
    start = kinds.index("test_begin")
    assert kinds[start - 1] == "batch_end" and events[start - 1][1] == 4
    test_batches = [e for e in events if e[0] == "test_batch_end"]
    assert [e[1] for e in test_batches] == [0, 1, 2, 3, 4]  # 160 validation records
    test_end = next(e for e in events if e[0] == "test_end")
    assert set(test_end[1]) == {"loss", "accuracy"}

    epoch_logs = {e[1]: e[2] for e in events if e[0] == "epoch_end"}
    assert set(epoch_logs[0]) == {"loss", "accuracy"}
    # the epoch that contained a validation also reports it, as in model.fit
    assert set(epoch_logs[1]) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert epoch_logs[1]["val_loss"] == test_end[1]["loss"]


def test_stop_training_requests_a_stop(tmp_path):
    keras_trials.EVENTS.clear()
    host, _ = run_trial(TRIALS, _config(stop=True), plan(12, 30, "v"), str(tmp_path))
    assert host.early_exit == "user_requested_stop"
    assert [b for b, _ in host.training] == [12]  # stopped after the workload that ended epoch 0
    assert host.checkpoints and host.checkpoints[-1][0] == 12


def test_tensorboard_writes_to_the_platform_dir(tmp_path, monkeypatch):
    tb_dir = tmp_path / "tb"
    monkeypatch.setenv("DET_TENSORBOARD_DIR", str(tb_dir))
    run_trial(TRIALS, _config(tensorboard=True), plan(12, "v"), str(tmp_path / "ckpt"))
    assert not os.path.exists("/ignored")
    written = [os.path.join(d, f) for d, _, files in os.walk(tb_dir) for f in files]
    assert any("tfevents" in f and f"{os.sep}train{os.sep}" in f for f in written), written
    assert any("tfevents" in f and f"{os.sep}validation{os.sep}" in f for f in written), written


def test_tensorboard_dir_is_rank_specific(monkeypatch):
    from determined.keras._tensorboard import tensorboard_dir

    monkeypatch.delenv("DET_TENSORBOARD_DIR", raising=False)
    assert tensorboard_dir(0) == "/tmp/tensorboard"
    assert tensorboard_dir(2) == "/tmp/tensorboard-2"
