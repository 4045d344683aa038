"""Resuming a PyTorch trial in a new process continues exactly where it stopped."""

import json
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "trial_script.py")


def run(model_dir, storage, ops, *extra):
    out = subprocess.run(
        [sys.executable, SCRIPT, str(model_dir), str(model_dir / "const.yaml"), str(storage), ops, *extra],
        capture_output=True, text=True, timeout=180,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def state(storage, uuid):
    return torch.load(os.path.join(storage, uuid, "state_dict.pth"), weights_only=False)


def assert_same(a, b):
    for sa, sb in zip(a["models_state_dict"], b["models_state_dict"]):
        assert sa.keys() == sb.keys()
        for k in sa:
            assert torch.equal(sa[k], sb[k]), k
    assert str(a["optimizers_state_dict"]) == str(b["optimizers_state_dict"])
    assert a["lr_schedulers_state_dict"] == b["lr_schedulers_state_dict"]


def test_checkpoint_restore_in_new_process_is_bit_identical(tiny_dir, tmp_path):
    # 30 batches is mid-epoch (24 batches per epoch): the data position must survive too.
    first = run(tiny_dir, tmp_path, "train:30,checkpoint")
    ckpt = first["checkpoints"][-1]
    assert ckpt[0] == 30
    resumed = run(tiny_dir, tmp_path, "train:60", "--restore", os.path.join(first["storage"], ckpt[1]))
    straight = run(tiny_dir, tmp_path, "train:60")
    a = state(tmp_path, resumed["checkpoints"][-1][1])
    b = state(tmp_path, straight["checkpoints"][-1][1])
    assert a["batches_trained"] == b["batches_trained"] == 60
    assert_same(a, b)
    # The per-batch losses after the restore match the uninterrupted run's too.
    resumed_losses = [m["loss"] for _, w in resumed["training"] for m in w["batch_metrics"]]
    straight_losses = [m["loss"] for _, w in straight["training"] for m in w["batch_metrics"]]
    assert resumed_losses == straight_losses[30:]


def test_different_seed_gives_different_weights(tiny_dir, tmp_path):
    a = run(tiny_dir, tmp_path, "train:20")
    b = run(tiny_dir, tmp_path, "train:20", "--seed", "99")
    sa = state(tmp_path, a["checkpoints"][-1][1])
    sb = state(tmp_path, b["checkpoints"][-1][1])
    assert not torch.equal(sa["models_state_dict"][0]["0.weight"], sb["models_state_dict"][0]["0.weight"])


def test_warm_start_loads_weights_but_starts_at_zero(tiny_dir, tmp_path):
    first = run(tiny_dir, tmp_path, "train:20")
    src = os.path.join(first["storage"], first["checkpoints"][-1][1])
    warm = run(tiny_dir, tmp_path, "validate", "--restore", src, "--warm", "--seed", "5")
    cold = run(tiny_dir, tmp_path, "validate", "--seed", "5")
    assert warm["validations"][0][0] == 0
    assert warm["validations"][0][1]["validation_metrics"]["validation_loss"] < \
        cold["validations"][0][1]["validation_metrics"]["validation_loss"]
