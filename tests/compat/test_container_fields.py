"""Container-era config fields done by the trial process itself (harness._trial_setup)."""

import json
import pathlib

import pytest

from determined.harness._trial_setup import environment_variables
from det_cli_testing import run_det

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "controller_trial"

CONFIG = """
entrypoint: model_def:LinearTrial
scheduling_unit: 5
data: {{facts_file: {facts}}}
environment:
  environment_variables: {{cpu: [COMPAT_A=cpu-value], gpu: [COMPAT_GPU=1]}}
bind_mounts:
  - {{host_path: {mount}, container_path: {target}}}
hyperparameters: {{global_batch_size: 16, lr: 0.1}}
searcher: {{name: single, metric: validation_error, max_length: {{batches: 5}}}}
max_restarts: 0
"""


def test_environment_variables_pick_cpu_or_gpu(monkeypatch):
    cfg = {"environment": {"environment_variables": {"cpu": ["A=1"], "gpu": ["A=2", "B=x=y"]}}}
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert environment_variables(cfg) == {"A": "1"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert environment_variables(cfg) == {"A": "2", "B": "x=y"}
    assert environment_variables({"environment": {"environment_variables": ["C="]}}) == {"C": ""}


def _run(tmp_path, target):
    mount = tmp_path / "src"
    mount.mkdir(exist_ok=True)
    (mount / "a.txt").write_text("a")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG.format(facts=tmp_path / "facts.jsonl", mount=mount, target=target))
    return run_det(["e", "create", cfg, FIXTURE, "--local", "--no-progress", "--local-dir",
                    tmp_path / "local"], env={"DET_WORKDIR_ROOT": str(tmp_path / "workdirs")})


def test_local_trial_gets_variables_hook_mounts_and_own_workdir(tmp_path):
    target = tmp_path / "abs-mount"  # absolute and creatable: a link is made there
    out = _run(tmp_path, target)
    assert out.returncode == 0, out.stdout + out.stderr
    (seen,) = [json.loads(line) for line in (tmp_path / "facts.jsonl").read_text().splitlines()]
    assert seen["env"] == {"COMPAT_A": "cpu-value", "COMPAT_B": "from-hook", "COMPAT_GPU": None}
    assert seen["hook_marker"] and seen["cwd"].startswith(str(tmp_path / "workdirs"))
    assert sorted(p.name for p in target.iterdir()) == ["a.txt"]
    assert not (FIXTURE / "hook-ran.txt").exists()
    assert list((tmp_path / "workdirs").iterdir()) == []  # removed when the trial ended
    log = next((tmp_path / "local" / "experiments").glob("*/trials/*.log")).read_text()
    assert "startup hook: preparing cpu-value" in log


def test_mount_that_cannot_be_created_is_a_clear_error(tmp_path):
    out = _run(tmp_path, "/proc/det-compat-mount")
    assert out.returncode != 0
    log = next((tmp_path / "local" / "experiments").glob("*/trials/*.log")).read_text()
    assert "bind_mounts[0]" in log and "/proc/det-compat-mount" in log
    assert "cannot create" in log
