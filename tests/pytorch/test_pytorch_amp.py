"""Mixed precision without apex, on the CPU: ``configure_apex_amp`` on torch.amp (autocast
plus a dynamic loss scaler), ``context.wrap_scaler`` and ``optimizations.mixed_precision``;
the scaler's state survives a checkpoint so that a resume is exact."""

import json
import os

import pytest
import torch
import yaml

from pytorch_helpers import make_env, run_trial, train_plan
from test_pytorch_resume import run, state

pytestmark = pytest.mark.timeout(600)

AMP = "amp_def:AmpTrial"


def batch_values(result, key):
    return [m[key] for _, w in result["training"] for m in w["batch_metrics"]]


def test_configure_apex_amp_without_apex_autocasts_to_bfloat16_on_the_cpu(tiny_dir, tmp_path):
    out = run(tiny_dir, tmp_path, "train:20,validate", "--entrypoint", AMP,
              "--hparams", json.dumps({"amp": "apex"}))
    assert set(batch_values(out, "dtype")) == {0.0}  # bfloat16 forward
    assert set(batch_values(out, "scale")) == {1.0}  # bfloat16 needs no scaler
    assert out["validations"][0][1]["validation_metrics"]["dtype"] == 0.0
    losses = batch_values(out, "loss")
    assert sum(losses[-5:]) < sum(losses[:5])  # it learns


def test_float16_scaler_backs_off_and_a_resume_continues_its_scale(tiny_dir, tmp_path):
    # An initial scale of 2**40 overflows float16 gradients: the scaler skips those
    # steps and halves its scale. A resume that forgot the scale would start over.
    hp = ["--entrypoint", AMP, "--hparams",
          json.dumps({"amp": "apex", "cast": "float16", "loss_scale": 2.0**40})]
    first = run(tiny_dir, tmp_path, "train:12,checkpoint", *hp)
    ckpt = first["checkpoints"][-1][1]
    saved = state(first["storage"], ckpt)["amp"]["scaler"]
    scales = batch_values(first, "scale")
    assert scales[0] == 2.0**40 and saved["scale"] < 2.0**40, (scales, saved)
    resumed = run(tiny_dir, tmp_path, "train:42", *hp, "--restore",
                  os.path.join(first["storage"], ckpt))
    straight = run(tiny_dir, tmp_path, "train:42", *hp)
    assert batch_values(resumed, "scale") == batch_values(straight, "scale")[12:]
    assert batch_values(resumed, "loss") == batch_values(straight, "loss")[12:]
    a = state(resumed["storage"], resumed["checkpoints"][-1][1])
    b = state(straight["storage"], straight["checkpoints"][-1][1])
    for k, v in a["models_state_dict"][0].items():
        assert torch.equal(v, b["models_state_dict"][0][k]), k
    assert a["amp"] == b["amp"]


def test_wrap_scaler_state_is_checkpointed_and_restored(tiny_dir, tmp_path):
    hp = ["--entrypoint", AMP, "--hparams",
          json.dumps({"amp": "scaler", "loss_scale": 2.0**40, "growth_interval": 3})]
    first = run(tiny_dir, tmp_path, "train:15,checkpoint", *hp)
    ckpt = first["checkpoints"][-1][1]
    saved = state(first["storage"], ckpt)["scalers_state_dict"]
    assert len(saved) == 1 and saved[0]["scale"] < 2.0**40
    assert set(batch_values(first, "dtype")) == {16.0}
    resumed = run(tiny_dir, tmp_path, "train:30", *hp, "--restore",
                  os.path.join(first["storage"], ckpt))
    straight = run(tiny_dir, tmp_path, "train:30", *hp)
    assert batch_values(resumed, "scale") == batch_values(straight, "scale")[15:]
    assert batch_values(resumed, "loss") == batch_values(straight, "loss")[15:]


def test_mixed_precision_in_the_config_turns_on_autocast(tiny_dir, tmp_path):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["optimizations"] = {"mixed_precision": "O1"}
    path = tmp_path / "amp.yaml"
    path.write_text(yaml.safe_dump(config))
    host, _, _ = run_trial(make_env(tiny_dir, str(path), entrypoint=AMP), train_plan(10),
                           tmp_path / "storage")
    assert {m["dtype"] for _, w in host.training for m in w["batch_metrics"]} == {0.0}
    config["optimizations"] = {"mixed_precision": "O0"}
    path.write_text(yaml.safe_dump(config))
    host, _, _ = run_trial(make_env(tiny_dir, str(path), entrypoint=AMP), train_plan(10),
                           tmp_path / "storage2")
    assert {m["dtype"] for _, w in host.training for m in w["batch_metrics"]} == {32.0}


def _context(tiny_dir):
    from determined.pytorch._context import PyTorchTrialContext

    return PyTorchTrialContext(make_env(tiny_dir), torch.device("cpu"))


def test_configure_apex_amp_rejects_bad_arguments(tiny_dir):
    ctx = _context(tiny_dir)
    model = ctx.wrap_model(torch.nn.Linear(2, 2))
    opt = ctx.wrap_optimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(ValueError, match="opt_level one of O0, O1, O2, O3"):
        ctx.configure_apex_amp(model, opt, opt_level="O9")
    with pytest.raises(ValueError, match="every model must be wrapped first"):
        ctx.configure_apex_amp(torch.nn.Linear(2, 2), opt)
    with pytest.raises(ValueError, match="cast_model_type must be torch.float16 or torch.bfloat16"):
        ctx.configure_apex_amp(model, opt, cast_model_type=torch.float64)
    assert ctx.configure_apex_amp(model, opt, enabled=False) == (model, opt)
    assert ctx._amp is None
    with pytest.raises(TypeError, match="Expected a torch.amp.GradScaler in wrap_scaler"):
        ctx.wrap_scaler(object())
    ctx.configure_apex_amp([model], [opt])
    with pytest.raises(RuntimeError, match="already called"):
        ctx.configure_apex_amp(model, opt)
    with pytest.raises(RuntimeError, match="cannot be combined with configure_apex_amp"):
        ctx.wrap_scaler(torch.amp.GradScaler("cpu"))


def test_bfloat16_metrics_become_python_numbers():
    from determined.pytorch._reducer import _to_python

    assert _to_python(torch.tensor([1.5, 2.0], dtype=torch.bfloat16)) == [1.5, 2.0]
    assert _to_python(torch.tensor(0.5, dtype=torch.bfloat16)) == 0.5
