"""Mixed precision on a GPU without apex: ``configure_apex_amp`` autocasts to float16
with a dynamic loss scaler (or bfloat16 when asked), ``wrap_scaler`` steps through the
user's scaler, and a resume continues the scaler, the weights and the losses exactly.
Each test has a CPU variant (float16 autocast and GradScaler work on the CPU too) that
runs in CI; more CPU tests: tests/pytorch/test_pytorch_amp.py."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(600)
DEVICES = [pytest.param("cpu", marks=pytest.mark.cpu_twin),
           pytest.param("cuda", marks=pytest.mark.gpu)]

HERE = pathlib.Path(__file__).resolve().parent
AMP = ["--entrypoint", "amp_def:AmpTrial"]


def run(device, tiny_dir, storage, ops, hparams, *extra):
    env = dict(os.environ, CUBLAS_WORKSPACE_CONFIG=":4096:8")
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    out = subprocess.run([sys.executable, str(HERE.parent / "trial_script.py"), str(tiny_dir),
                          str(tiny_dir / "const.yaml"), str(storage), ops, *AMP,
                          "--hparams", json.dumps(hparams), *extra],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def values(result, key):
    return [m[key] for _, w in result["training"] for m in w["batch_metrics"]]


@pytest.mark.parametrize("hparams", [
    {"amp": "apex", "cast": "float16", "loss_scale": 2.0**40},  # the harness's scaler
    {"amp": "scaler", "loss_scale": 2.0**40, "growth_interval": 3},  # the trial's own
], ids=["configure_apex_amp", "wrap_scaler"])
@pytest.mark.parametrize("device", DEVICES)
def test_float16_resumes_exactly(device, tiny_dir, tmp_path, hparams):
    first = run(device, tiny_dir, tmp_path, "train:12,checkpoint", hparams)
    assert set(values(first, "dtype")) == {16.0}
    scales = values(first, "scale")
    assert scales[0] == 2.0**40 and scales[-1] < 2.0**40  # overflow backed the scale off
    ckpt = os.path.join(first["storage"], first["checkpoints"][-1][1])
    resumed = run(device, tiny_dir, tmp_path, "train:40", hparams, "--restore", ckpt)
    straight = run(device, tiny_dir, tmp_path, "train:40", hparams)
    assert values(resumed, "scale") == values(straight, "scale")[12:]
    assert values(resumed, "loss") == values(straight, "loss")[12:]
    losses = values(straight, "loss")
    assert sum(losses[-5:]) < sum(losses[:5])


@pytest.mark.parametrize("device", DEVICES)
def test_bfloat16_needs_no_scaler(device, tiny_dir, tmp_path):
    import torch

    if device == "cuda" and not torch.cuda.is_bf16_supported():
        pytest.fail("every GPU this project targets (Ampere and later) supports bfloat16")
    out = run(device, tiny_dir, tmp_path, "train:20,validate", {"amp": "apex", "cast": "bfloat16"})
    assert set(values(out, "dtype")) == {0.0} and set(values(out, "scale")) == {1.0}
