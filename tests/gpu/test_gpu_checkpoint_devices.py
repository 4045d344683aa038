"""Checkpoints move between the CPU and the GPU: a CPU checkpoint resumes on the GPU, a
GPU checkpoint on the CPU (its CUDA random states left out), and the SDK loads one
wherever ``map_location`` says. Its CPU side: tests/pytorch/test_pytorch_restore_anywhere.py."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def _trial_script(tiny_dir, storage, ops, *extra, cpu=False):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="" if cpu else os.environ.get(
        "CUDA_VISIBLE_DEVICES", "0"))
    out = subprocess.run([sys.executable, str(HERE.parent / "trial_script.py"), str(tiny_dir),
                          str(tiny_dir / "const.yaml"), str(storage), ops, *extra],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.gpu  # its CPU side: tests/pytorch/test_pytorch_restore_anywhere.py
def test_checkpoints_move_between_the_cpu_and_the_gpu(tiny_dir, tmp_path):
    import torch

    from determined.experimental import Checkpoint

    on_cpu = _trial_script(tiny_dir, tmp_path, "train:20,checkpoint", cpu=True)
    cpu_ckpt = os.path.join(on_cpu["storage"], on_cpu["checkpoints"][-1][1])
    on_gpu = _trial_script(tiny_dir, tmp_path, "train:40,checkpoint", "--restore", cpu_ckpt)
    gpu_ckpt = os.path.join(on_gpu["storage"], on_gpu["checkpoints"][-1][1])
    saved = torch.load(os.path.join(gpu_ckpt, "state_dict.pth"), map_location="cpu",
                       weights_only=False)
    assert saved["rng_state"]["cuda"], "a GPU checkpoint holds the CUDA random state"
    # A GPU checkpoint resumes on the CPU (CUDA states left out) ...
    _trial_script(tiny_dir, tmp_path, "train:60", "--restore", gpu_ckpt, cpu=True)
    # ... and the SDK loads it wherever map_location says.
    assert next(Checkpoint.load_from_path(cpu_ckpt).context.models[0].parameters()).is_cuda
    model = Checkpoint.load_from_path(gpu_ckpt, map_location="cpu").context.models[0]
    assert next(model.parameters()).device.type == "cpu"
    for name, value in model.state_dict().items():
        assert torch.equal(value, saved["models_state_dict"][0][name]), name
