import os
import subprocess
import sys

import torch

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


def test_native_create_test_mode(tiny_dir):
    sys.path.insert(0, str(tiny_dir))
    from model_def import TinyTrial

    out = create(TinyTrial, config={"hyperparameters": {"global_batch_size": 8, "lr": 0.1},
                                    "searcher": {"name": "single", "metric": "validation_loss",
                                                 "max_length": {"batches": 1}}},
                 local=True, test=True, context_dir=str(tiny_dir))
    assert out["training"][0][0] == 1 and out["validations"]
    assert out["checkpoints"]


def test_importing_the_platform_imports_no_framework():
    code = ("import sys, determined, determined.local, determined.cli, determined.searcher, "
            "determined.experimental; "
            "print(sorted(m for m in ('torch', 'tensorflow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
