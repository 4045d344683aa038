"""A project written for Determined 0.13 (its examples' calls and config fields), run
unchanged with ``det experiment create --local``: the fixture ``port_walk`` holds
trials written the way 0.13's PyTorch examples are (new-style and legacy)."""

import pathlib

import pytest
import yaml

from det_cli_testing import run_det

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "port_walk"

CONFIG = {
    "description": "digits_pytorch_const",
    "data": {"url": "https://example.invalid/pytorch_mnist.tar.gz"},
    "hyperparameters": {"learning_rate": 1.0, "global_batch_size": 32, "n_filters1": 2,
                        "dropout1": 0.25},
    "records_per_epoch": 64,
    "searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True,
                 "max_length": {"epochs": 2}},
    "min_validation_period": {"epochs": 1},
    "max_restarts": 0,
    "entrypoint": "model_def:DigitsTrial",
}


def _create(tmp_path, config, local_dir, *flags):
    path = tmp_path / "const.yaml"
    path.write_text(yaml.safe_dump(config))
    return run_det(["e", "create", path, FIXTURE, "--local", "--no-progress",
                    "--local-dir", tmp_path / local_dir, *flags],
                   env={"DET_WORKDIR_ROOT": str(tmp_path / "workdirs")})


def _storage(tmp_path):
    (tmp_path / "ckpts").mkdir(exist_ok=True)
    return {"type": "shared_fs", "host_path": str(tmp_path / "ckpts"),
            "storage_path": "determined-checkpoint", "save_trial_best": 1,
            "save_trial_latest": 1, "save_experiment_best": 0}


def test_a_mount_already_at_its_container_path_is_accepted(tmp_path):
    """0.13 configs often mount a shared directory at the same path (``/data`` on
    ``/data``); without a container it is already there."""
    data = tmp_path / "data"
    data.mkdir()
    config = dict(CONFIG, bind_mounts=[{"host_path": str(data), "container_path": str(data),
                                        "read_only": True}])
    out = _create(tmp_path, config, "local")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "COMPLETED" in out.stdout, out.stdout


def test_two_local_directories_sharing_storage_keep_each_others_checkpoints(tmp_path):
    """Each local directory numbers its experiments from 1: the second run's trial 1
    must not take the first run's checkpoints for leftovers of its own."""
    config = dict(CONFIG, checkpoint_storage=_storage(tmp_path))
    store = tmp_path / "ckpts" / "determined-checkpoint"
    out = _create(tmp_path, config, "first")
    assert out.returncode == 0, out.stdout + out.stderr
    first = {p.name for p in store.iterdir() if p.name != "tensorboard"}
    assert first
    out = _create(tmp_path, config, "second")
    assert out.returncode == 0, out.stdout + out.stderr
    after = {p.name for p in store.iterdir() if p.name != "tensorboard"}
    assert first < after, (first, after)
    log = next((tmp_path / "second" / "experiments").glob("*/trials/1.log")).read_text()
    assert "removed an unfinished checkpoint write" not in log, log


@pytest.mark.parametrize("entrypoint,metric", [
    ("model_def:FullTrial", "validation_error"), ("model_def:LegacyTrial", "validation_loss"),
    ("model_def:DetectionTrial", "val_box_error")])
def test_other_trial_shapes_pass_local_test_mode(tmp_path, entrypoint, metric):
    """``evaluate_full_dataset``; legacy ``build_model``/``optimizer`` with a
    ``MANUAL_STEP`` scheduler and ``train_batch(batch, model, ...)``; detection-style
    batches (a ``collate_fn`` giving tuples of images and dict targets)."""
    config = dict(CONFIG, entrypoint=entrypoint,
                  searcher=dict(CONFIG["searcher"], metric=metric))
    out = _create(tmp_path, config, "local", "--test")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Model definition test succeeded" in out.stdout, out.stdout
