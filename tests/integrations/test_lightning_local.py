"""DeterminedCallback with real Lightning, off the platform (core's directory mode):
metrics and checkpoints reach the directory, and a run SIGKILLed mid-training and
started again ends with the same weights as one never interrupted."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch
import yaml

from det_cli_testing import run_det
from determined.core import latest_local_checkpoint, read_records
from tests.integrations.integrations_testing import EXAMPLES, ROOT, run_example

pytestmark = pytest.mark.timeout(900)

SCRIPT = EXAMPLES / "core_api_lightning" / "train.py"
BATCHES_PER_EPOCH = 47  # 1,500 images in batches of 32
MIN_EPOCHS_DIR = ROOT / "tests" / "fixtures" / "lightning_min_epochs"  # 20 batches an epoch
OFFLINE = {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "USE_TF": "0"}


def _final_checkpoint(directory):
    storage_id = latest_local_checkpoint(str(directory))
    assert storage_id is not None
    return torch.load(directory / "checkpoints" / storage_id / "lightning.ckpt",
                      weights_only=False)


def _assert_same_training_state(a, b):
    assert a["global_step"] == b["global_step"]
    assert a["state_dict"].keys() == b["state_dict"].keys()
    for name in a["state_dict"]:
        assert torch.equal(a["state_dict"][name], b["state_dict"][name]), name
    for sa, sb in zip(a["optimizer_states"], b["optimizer_states"]):
        for key in sa["state"]:
            assert torch.equal(sa["state"][key]["momentum_buffer"],
                               sb["state"][key]["momentum_buffer"])
    assert a["lr_schedulers"] == b["lr_schedulers"]


def test_metrics_and_epoch_checkpoints_reach_the_directory(tmp_path):
    out = tmp_path / "run"
    run_example(SCRIPT, out, ["--epochs", "2"])
    records = read_records(str(out))
    validation = [(r["steps_completed"], r["metrics"]) for r in records
                  if r["kind"] == "validation"]
    assert [s for s, _ in validation] == [BATCHES_PER_EPOCH, 2 * BATCHES_PER_EPOCH]
    assert set(validation[0][1]) == {"validation_loss", "validation_error"}
    assert validation[1][1]["validation_error"] < 0.5
    training = [r["steps_completed"] for r in records if r["kind"] == "training"]
    assert training == list(range(10, 2 * BATCHES_PER_EPOCH, 10))
    checkpoints = [r["steps_completed"] for r in records if r["kind"] == "checkpoint"]
    assert checkpoints == [BATCHES_PER_EPOCH, 2 * BATCHES_PER_EPOCH]
    state = _final_checkpoint(out)
    assert state["global_step"] == 2 * BATCHES_PER_EPOCH
    assert "DeterminedCallback" in state["callbacks"]


def test_sigkilled_run_resumes_to_identical_weights(tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    run_example(SCRIPT, straight, ["--epochs", "4"])
    # Killed in the third epoch: the latest checkpoint is the second epoch's end.
    run_example(SCRIPT, killed, ["--epochs", "4"], kill_after=2 * BATCHES_PER_EPOCH + 20)
    before = [r["steps_completed"] for r in read_records(str(killed)) if r["kind"] == "checkpoint"]
    assert before == [BATCHES_PER_EPOCH, 2 * BATCHES_PER_EPOCH]
    done = run_example(SCRIPT, killed, ["--epochs", "4"])
    assert "Restored all states from the checkpoint" in done.stderr

    _assert_same_training_state(_final_checkpoint(straight), _final_checkpoint(killed))
    records = read_records(str(killed))
    validation = [r["steps_completed"] for r in records if r["kind"] == "validation"]
    assert validation == [BATCHES_PER_EPOCH * k for k in (1, 2, 3, 4)]


def _trained_batches(output: str) -> int:
    (count,) = re.findall(r"trained (\d+) batches", output)
    return int(count)


def test_test_mode_stops_a_trainer_with_min_epochs_after_one_batch(tmp_path):
    """A Trainer with ``min_epochs=2`` (length in epochs) trained two whole epochs under
    ``--test``: Lightning ignores ``should_stop`` until its minimums are met."""
    out = run_det(["e", "create", MIN_EPOCHS_DIR / "const.yaml", MIN_EPOCHS_DIR, "--local",
                   "--test", "--local-dir", tmp_path / "local"], env=OFFLINE)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert _trained_batches(out.stdout) == 1, out.stdout[-3000:]


@pytest.mark.parametrize("length,early_stop", [(5, False), (25, True)])
def test_searcher_length_in_batches_stops_a_trainer_with_min_epochs(tmp_path, length,
                                                                    early_stop):
    """Also when EarlyStopping asked to stop at the first validation (step 20), which
    Lightning ignored before min_epochs: should_stop was already set at the length."""
    config = yaml.safe_load((MIN_EPOCHS_DIR / "const.yaml").read_text())
    config["searcher"]["max_length"] = {"batches": length}
    if early_stop:
        config["environment"] = {"environment_variables": ["EARLY_STOP=1"]}
    path = tmp_path / "batches.yaml"
    path.write_text(yaml.safe_dump(config))
    out = run_det(["e", "create", path, MIN_EPOCHS_DIR, "--local", "--local-dir",
                   tmp_path / "local", "--json", "--no-progress"], env=OFFLINE)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (trial,) = json.loads(out.stdout)["trials"]
    assert trial["state"] == "COMPLETED" and trial["batches"] == length, trial
    logs = run_det(["t", "logs", trial["trial_id"], "--local-dir", tmp_path / "local"]).stdout
    assert _trained_batches(logs) == length, logs[-3000:]


def test_training_metrics_of_every_epoch_are_kept_with_a_length_in_epochs(tmp_path):
    """Steps are counted in epochs: a training report inside epoch 2 was sent at 1 epoch,
    after that epoch's validation, and the platform dropped it (every one but the last)."""
    local = tmp_path / "local"
    out = run_det(["e", "create", MIN_EPOCHS_DIR / "const.yaml", MIN_EPOCHS_DIR, "--local",
                   "--local-dir", local, "--json", "--no-progress"], env=OFFLINE)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (exp,) = json.loads(run_det(["e", "describe", "1", "--local-dir", local, "--json",
                                 "--metrics"]).stdout)
    rows = [(m["kind"], m["total_batches"]) for m in exp["trials"][0]["metrics"]]
    assert rows == [(kind, epochs) for epochs in (1, 2, 3)
                    for kind in ("training", "validation")], rows


def test_ctrl_c_stops_a_trainer_with_min_epochs_at_its_checkpoint(tmp_path):
    """A pause inside the first epoch: the callback checkpoints and stops, and Lightning,
    held by ``min_epochs=2``, trained on to 40 batches after the checkpoint."""
    progress = tmp_path / "progress"
    config = yaml.safe_load((MIN_EPOCHS_DIR / "const.yaml").read_text())
    config["environment"] = {"environment_variables": [
        "STEP_SLEEP=0.3", f"PROGRESS_FILE={progress}"]}
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump(config))
    local = tmp_path / "local"
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(path), str(MIN_EPOCHS_DIR),
         "--local", "--local-dir", str(local), "--json", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, **OFFLINE})
    deadline = time.monotonic() + 120
    while not (progress.exists() and progress.read_text() and int(progress.read_text()) >= 3):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the script never trained 3 batches"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=180)
    (exp,) = json.loads(run_det(["e", "describe", "1", "--local-dir", local, "--json"]).stdout)
    assert exp["state"] == "PAUSED", exp
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    assert _trained_batches(logs) < 20, logs[-3000:]


@pytest.mark.parametrize("length", [{"epochs": 3}, {"batches": 60}])
def test_epoch_aggregates_reach_the_training_metrics(tmp_path, length):
    """``self.log(..., on_step=True, on_epoch=True)``: Lightning logs ``train_loss_epoch``
    (and what ``on_train_epoch_end`` logs) after the epoch-end validation, and the
    platform drops a training report at a count it already validated; the callback
    reports the epoch's training row first."""
    means = tmp_path / "means.json"
    config = yaml.safe_load((MIN_EPOCHS_DIR / "const.yaml").read_text())
    config["searcher"]["max_length"] = length
    config["environment"] = {"environment_variables": [f"EPOCH_METRICS={means}"]}
    path = tmp_path / "epoch-metrics.yaml"
    path.write_text(yaml.safe_dump(config))
    local = tmp_path / "local"
    out = run_det(["e", "create", path, MIN_EPOCHS_DIR, "--local", "--local-dir", local,
                   "--json", "--no-progress"], env=OFFLINE)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (exp,) = json.loads(run_det(["e", "describe", "1", "--local-dir", local, "--json",
                                 "--metrics"]).stdout)
    rows = exp["trials"][0]["metrics"]
    lightning = json.loads(means.read_text())
    assert len(lightning["epoch_means"]) == 3
    epoch_ends = [1, 2, 3] if "epochs" in length else [20, 40, 60]
    training = {m["total_batches"]: m["metrics"] for m in rows if m["kind"] == "training"}
    validated = [m["total_batches"] for m in rows if m["kind"] == "validation"]
    assert validated == epoch_ends
    for end, mean, losses in zip(epoch_ends, lightning["epoch_means"],
                                 lightning["step_losses"]):
        assert training[end]["train_loss_epoch"] == pytest.approx(mean, rel=1e-6), end
        assert mean == pytest.approx(sum(losses) / len(losses), rel=1e-5)
    with_epoch = sorted(s for s, m in training.items() if "train_loss_epoch" in m)
    assert with_epoch == epoch_ends
    # What the module logs in on_train_epoch_end (after the callbacks' hook) too.
    assert [training[end].get("epochs_done") for end in epoch_ends] == [1, 2, 3]
    if "batches" in length:  # per-step values every log_every_n_steps=3 optimizer steps
        with_step = sorted(s for s, m in training.items() if "train_loss_step" in m)
        assert with_step == list(range(3, 61, 3))
        step_losses = [x for epoch in lightning["step_losses"] for x in epoch]
        for steps in with_step:
            assert training[steps]["train_loss_step"] == pytest.approx(step_losses[steps - 1])
    else:  # one row an epoch: its latest per-step value and the aggregate
        assert all("train_loss_step" in m for m in training.values())
    # Each epoch's training row is stored before its validation.
    order = [(m["kind"], m["total_batches"]) for m in rows if m["total_batches"] in epoch_ends]
    assert order == [(kind, end) for end in epoch_ends for kind in ("training", "validation")]


def test_resume_restores_once_and_lightning_checkpoint_dir_does_not_warn(tmp_path):
    """The callback restored through Lightning's checkpoint connector, whose path Lightning
    then announced a second time; and Lightning's ModelCheckpoint warned that its
    directory (the first run's checkpoints, kept for this one) was not empty."""
    script = MIN_EPOCHS_DIR / "train.py"
    out = tmp_path / "run"
    env = {"MODEL_CHECKPOINT": "1"}
    run_example(script, out, [], kill_after=30, env=env)  # in the 2nd epoch of 20 batches
    lightning_dir = tmp_path / "run-cwd" / "determined" / "local" / "checkpoints"
    assert [p.name for p in lightning_dir.iterdir()] == ["epoch=0-step=20.ckpt"]
    done = run_example(script, out, [], env=env)
    output = done.stdout + done.stderr
    assert output.count("Restoring states from the checkpoint path") == 1, output[-3000:]
    assert output.count("Restored all states from the checkpoint") == 1, output[-3000:]
    assert "exists and is not empty" not in output, output[-3000:]
    # The callback's own line (logger determined.lightning; the script set no logging).
    assert output.count("INFO resumed from checkpoint ") == 1, output[-3000:]
    assert "trained 60 batches" in done.stdout  # epochs 2 to 4 of max_epochs=4
    state = _final_checkpoint(out)
    assert state["global_step"] == 80 and state["epoch"] == 3
    assert "epoch=3-step=80.ckpt" in {p.name for p in lightning_dir.iterdir()}
