import os
import subprocess
import sys
import tempfile

import torch

from determined.common import scratch
from determined.experimental import Checkpoint, create

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "pytorch"))
from pytorch_helpers import make_env, run_trial, train_plan  # noqa: E402


def test_checkpoint_object_download_load_metadata(tiny_dir, tmp_path):
    host, storage, _ = run_trial(make_env(tiny_dir), train_plan(20), tmp_path / "s")
    uuid = host.checkpoints[-1][1]
    ckpt = Checkpoint.from_path(storage.describe(uuid))
    assert ckpt.uuid == uuid and ckpt.batch_number == 20 and ckpt.hparams["lr"] == 0.1
    assert ckpt.framework.startswith("torch") and "state_dict.pth" in ckpt.resources
    local = ckpt.download(str(tmp_path / "dl"))
    assert os.path.exists(os.path.join(local, "metadata.json"))
    trial = Checkpoint.load_from_path(local)
    saved = torch.load(os.path.join(local, "state_dict.pth"), weights_only=False)
    assert torch.equal(trial.context.models[0].state_dict()["0.weight"],
                       saved["models_state_dict"][0]["0.weight"])
    ckpt.add_metadata({"stage": "prod", "n": 1})
    ckpt.remove_metadata(["n"])
    assert Checkpoint.from_path(storage.describe(uuid)).metadata == {"stage": "prod"}


def test_upstream_constructor_from_json_and_metadata_helpers(tiny_dir, tmp_path):
    """Upstream's 17-field constructor, ``from_json`` (camelCase too), ``parse_metadata`` and
    ``get_type``; without a master the files come from the config's checkpoint storage."""
    import pathlib

    import pytest

    from determined.errors import CheckpointError
    from determined.experimental._checkpoint import ModelFramework

    host, storage, _ = run_trial(make_env(tiny_dir), train_plan(10), tmp_path / "s")
    uuid = host.checkpoints[-1][1]
    meta = Checkpoint.parse_metadata(pathlib.Path(storage.describe(uuid)))
    assert meta["uuid"] == uuid and Checkpoint.get_type(meta) is ModelFramework.PYTORCH
    assert Checkpoint.get_type({"tensorflow_version": "2.15"}) is ModelFramework.TENSORFLOW
    with pytest.raises(CheckpointError, match="'framework' to start with 'torch'"):
        Checkpoint.get_type({"framework": "jax"})

    config = {"checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path / "s")}}
    ckpt = Checkpoint(uuid, config, 1, 1, {"lr": 0.1}, 10, None, None, {}, None,
                      "0.13.0", "torch-2", "pickle", None, None, {"a": 1}, None)
    assert ckpt.path == storage.describe(uuid) and ckpt.metadata == {"a": 1}
    local = ckpt.download(str(tmp_path / "dl"))
    assert os.path.exists(os.path.join(local, "state_dict.pth"))
    assert ckpt.load().context.models[0] is not None

    camel = Checkpoint.from_json({
        "uuid": uuid, "experimentConfig": config, "experimentId": 4, "trialId": 5,
        "hparams": {"lr": 0.5}, "batchNumber": 10, "startTime": "t0", "endTime": "t1",
        "resources": {"state_dict.pth": 1}, "metrics": {"validationMetrics": {"x": 1.0}},
        "validation_state": "STATE_COMPLETED", "determinedVersion": "0.13.0",
        "framework": "torch-2", "format": "pickle", "metadata": {"m": 2}})
    assert (camel.experiment_id, camel.trial_id, camel.batch_number) == (4, 5, 10)
    assert camel.validation == {"metrics": {"validationMetrics": {"x": 1.0}},
                                "state": "STATE_COMPLETED"}
    assert camel.determined_version == "0.13.0" and camel.metadata == {"m": 2}

    nowhere = Checkpoint("x", {}, 1, 1, {}, 1, None, None, {}, None)
    with pytest.raises(CheckpointError, match="no master and no checkpoint_storage"):
        nowhere.download(str(tmp_path / "none"))
    missing = Checkpoint("no-such-uuid", config, 1, 1, {}, 1, None, None, {}, None)
    with pytest.raises(CheckpointError, match="no-such-uuid"):
        missing.download(str(tmp_path / "missing"))


def test_native_create_test_mode(tiny_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    sys.path.insert(0, str(tiny_dir))
    from model_def import TinyTrial

    out = create(TinyTrial, config={"hyperparameters": {"global_batch_size": 8, "lr": 0.1},
                                    "searcher": {"name": "single", "metric": "validation_loss",
                                                 "max_length": {"batches": 1}}},
                 local=True, test=True, context_dir=str(tiny_dir))
    assert out["training"][0][0] == 1 and out["validations"]
    assert out["checkpoints"]
    # They lie in a scratch directory of this process's: swept once it exited.
    (owned,) = scratch.owned(scratch.owner(), root=str(tmp_path))
    assert os.path.basename(owned).startswith(f"det-test-{scratch.owner()}.")
    assert all(path.startswith(owned + os.sep) for _, path in out["checkpoints"]), out


def test_importing_the_platform_imports_no_framework():
    code = ("import sys, determined, determined.local, determined.cli, determined.searcher, "
            "determined.experimental; "
            "print(sorted(m for m in ('torch', 'tensorflow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
