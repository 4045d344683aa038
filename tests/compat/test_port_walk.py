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

