"""PyTorch trials on a real NVIDIA GPU: the embedded agent offers one slot per GPU and
pins each trial to its GPU, the model and batches live there, a crashed trial restores
its checkpoint (CUDA RNG state included) on the GPU, and a local run uses it too.

Machines without an NVIDIA GPU deselect the GPU variants (tests/conftest.py) and run
the CPU ones (``cpu_twin``): the same trials, restarts and local run on a CPU slot."""

import json
import pathlib
import shutil
import sys

import pytest
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from determined._procs._gpus import detect_gpus  # noqa: E402
from det_cli_testing import run_det  # noqa: E402
from master_testing import MasterProcess, create_experiment, wait_for_state  # noqa: E402

pytestmark = pytest.mark.e2e
DEVICES = [pytest.param("cpu", marks=pytest.mark.cpu_twin),
           pytest.param("cuda", marks=pytest.mark.gpu)]


def _model_dir(tiny_dir, tmp_path, device, device_file, marker=None, crash_at=None):
    model = tmp_path / "model"
    shutil.copytree(tiny_dir, model)
    shutil.copy(__file__.replace("test_gpu_trials.py", "gpu_def.py"), model / "gpu_def.py")
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config.update({"entrypoint": "gpu_def:DeviceTrial", "max_restarts": 1,
                   "min_checkpoint_period": {"batches": 20},
                   "data": {"device_file": str(device_file), "crash_marker": str(marker or ""),
                            "device": device}})
    if crash_at is not None:
        config["hyperparameters"]["crash_once_at_batch"] = crash_at
    return model, config


@pytest.mark.gpu  # without one: tests/agent/test_gpu_sharing.py (a stand-in NVML)
def test_torch_sees_the_gpus_the_agent_offers():
    import torch

    assert len(detect_gpus()) == torch.cuda.device_count() >= 1


@pytest.mark.parametrize("device", DEVICES)
def test_trial_trains_on_its_device_and_restores_there_after_a_crash(device, tiny_dir, tmp_path):
    devices = tmp_path / "devices.jsonl"
    model, config = _model_dir(tiny_dir, tmp_path, device, devices, tmp_path / "crashed",
                               crash_at=30)
    data = tmp_path / "master"
    data.mkdir()
    master = MasterProcess(str(data), slots=len(detect_gpus()) or 1).start(timeout=120)
    try:
        with master.client() as api:
            exp_id = create_experiment(api, config, str(model))
            exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=600)
            assert exp["state"] == "COMPLETED", (exp, master.log())
            trial = exp["trials"][0]
            assert trial["restarts"] == 1 and trial["total_batches"] == 40, trial
            lines = [r["line"] for r in api.get(f"/trials/{trial['id']}/logs",
                                                params={"limit": 10000}).json()["logs"]]
            assert any("restored from checkpoint" in l for l in lines), lines
            rows = [w for w in api.get(f"/trials/{trial['id']}/workloads",
                                       params={"limit": 10000}).json()["workloads"]
                    if w["kind"] == "validation"]
            on_cuda = 1.0 if device == "cuda" else 0.0
            assert rows and all(r["metrics"]["on_cuda"] == on_cuda for r in rows), rows
    finally:
        master.stop()
    seen = [json.loads(l) for l in devices.read_text().splitlines()]
    assert len(seen) == 2, seen  # the first process and the restarted one
    expected = {"device": "cuda:0", "visible": "0"} if device == "cuda" else {
        "device": "cpu", "visible": None}
    assert all(s == expected for s in seen), seen


@pytest.mark.parametrize("device", DEVICES)
def test_local_trial_trains_on_its_device(device, tiny_dir, tmp_path):
    devices = tmp_path / "devices.jsonl"
    model, config = _model_dir(tiny_dir, tmp_path, device, devices)
    path = tmp_path / "local.yaml"
    path.write_text(yaml.safe_dump(config))
    out = run_det(["experiment", "create", path, model, "--local", "--local-dir",
                   tmp_path / "local"], timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    seen = [json.loads(l) for l in devices.read_text().splitlines()]
    assert [s["device"] for s in seen] == ["cuda:0" if device == "cuda" else "cpu"], seen
