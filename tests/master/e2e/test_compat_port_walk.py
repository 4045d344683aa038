"""A 0.13 project's own files, unchanged, on masters: the ``port_walk`` fixture's trial
with its adaptive search config (``data.url``, typed hyperparameters,
``records_per_epoch``, a mount at its own path), created with ``det e create -f``.
Two masters share one checkpoint storage; each has an experiment 1, trial 1."""

import json
import pathlib

import pytest
import yaml

from det_cli_testing import run_det

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

FIXTURE = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "port_walk"

ADAPTIVE = """
description: digits_pytorch_adaptive_search
data:
  url: https://example.invalid/pytorch_mnist.tar.gz
hyperparameters:
  global_batch_size: 32
  learning_rate: {type: double, minval: .0001, maxval: 1.0}
  n_filters1: {type: int, minval: 2, maxval: 3}
  dropout1: {type: double, minval: .2, maxval: .8}
  spare_choice: {type: categorical, vals: [a, b]}
  spare_log: {type: log, minval: -5.0, maxval: 1.0, base: 10.0}
  spare_const: {type: const, val: 3}
records_per_epoch: 64
searcher:
  name: adaptive_simple
  metric: validation_loss
  smaller_is_better: true
  max_length: {epochs: 1}
  max_trials: 1
  mode: aggressive
entrypoint: model_def:DigitsTrial
max_restarts: 0
"""


def _create(master, config, tmp_path, name, *flags):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return run_det(["-m", master.url, "e", "create", path, FIXTURE, *flags])


def _checkpoints(store):
    return {p.name for p in store.iterdir() if p.name != "tensorboard"}


def test_ported_project_on_two_masters_sharing_storage(master_factory, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "ckpts").mkdir()
    config = yaml.safe_load(ADAPTIVE)
    config["bind_mounts"] = [{"host_path": str(data), "container_path": str(data)}]
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(tmp_path / "ckpts"),
                                    "storage_path": "determined-checkpoint"}
    store = tmp_path / "ckpts" / "determined-checkpoint"

    first = master_factory(slots=1)
    out = _create(first, config, tmp_path, "adaptive", "-f")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Created experiment 1" in out.stdout, out.stdout
    described = run_det(["-m", first.url, "e", "describe", "1", "--json"])
    (exp,) = json.loads(described.stdout)
    assert exp["state"] == "COMPLETED", exp
    assert exp["trials"] and {t["state"] for t in exp["trials"]} == {"COMPLETED"}, exp
    kept = _checkpoints(store)
    assert kept

    # A second cluster (a fresh master) numbers its experiments from 1 as well.
    second = master_factory(slots=1)
    config["searcher"] = {"name": "single", "metric": "validation_loss",
                          "max_length": {"batches": 2}}
    config["hyperparameters"] = {"global_batch_size": 32, "learning_rate": 0.5,
                                 "n_filters1": 2, "dropout1": 0.3}
    out = _create(second, config, tmp_path, "const", "-f")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Created experiment 1" in out.stdout, out.stdout
    assert kept < _checkpoints(store)
    logs = run_det(["-m", second.url, "t", "logs", "1"]).stdout
    assert "removed an unfinished checkpoint write" not in logs, logs
