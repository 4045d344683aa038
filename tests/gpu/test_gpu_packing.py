"""Several trials per GPU and GPU metrics on a real NVIDIA GPU with real NVML.

The embedded agent offers 2 slots per GPU (``resource_manager.slots_per_gpu: 2``): two
trials train on GPU 0 at once, each seeing one CUDA device and capped at half its memory
by ``torch.cuda.set_per_process_memory_fraction``; a trial reaching for more fails with
a message naming the cap and the options; NVML readings of the GPU are stored per trial
and served by the API; ``det slot list`` shows the card's name and memory.

Machines without an NVIDIA GPU deselect these tests (tests/conftest.py).
"""

import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "master"))
sys.path.insert(0, str(HERE.parent / "agent"))

from agent_testing import trial_logs  # noqa: E402
from det_cli_testing import run_det  # noqa: E402
from determined._procs._gpus import gpu_inventory  # noqa: E402
from gpu_testing import env_config, env_model_dir, trial_gpu_env  # noqa: E402
from master_testing import ConfiguredMasterProcess, create_experiment, wait_for_state  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.e2e]


def test_nvml_lists_the_gpus_torch_sees():
    import torch

    gpus = gpu_inventory()
    assert len(gpus) == torch.cuda.device_count() >= 1
    names = sorted(torch.cuda.get_device_name(i) for i in range(len(gpus)))
    assert sorted(g.name for g in gpus) == names
    for g in gpus:
        assert g.uuid.startswith("GPU-") and g.memory_total > 2**30


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu-packing")
    (root / "master").mkdir()
    master = ConfiguredMasterProcess(str(root / "master"), {"resource_manager": {
        "slots": 2, "slots_per_gpu": 2, "gpu_metrics_interval": 0.5}}).start(timeout=120)
    try:
        with master.client() as api:
            yield master, api, env_model_dir(root)
    finally:
        master.stop()


def test_two_trials_share_gpu_0_each_under_half_its_memory(packed):
    master, api, model = packed
    gpu0 = gpu_inventory()[0]
    # 2 trials at once, each holding 30% of the card (under its 50% cap) for 3+ seconds.
    exp_id = create_experiment(api, env_config(trials=2, sleep=0.1, alloc_fraction=0.3), model)
    exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], 300)
    assert exp["state"] == "COMPLETED", (exp, master.log())
    spans = []
    for t in exp["trials"]:
        log = trial_logs(api, t["id"])
        env = trial_gpu_env(log)
        assert env["CUDA_VISIBLE_DEVICES"] == "0" and env["torch_devices"] == 1, env
        assert env["DET_GPU_MEMORY_FRACTION"] == "0.5", env
        assert "GPU memory cap: 50% of GPU 0" in log, log[-3000:]
        samples = api.get(f"/trials/{t['id']}/gpu-metrics").json()["gpu_metrics"]
        assert samples, f"no GPU samples for trial {t['id']}"
        assert {(s["gpu_index"], s["gpu_uuid"], s["memory_total"]) for s in samples} == {
            (0, gpu0.uuid, gpu0.memory_total)}
        assert all(0 <= s["utilization"] <= 100 for s in samples)
        # While it ran, at least its own 30% of the card was in use.
        assert max(s["memory_used"] for s in samples) >= 0.3 * gpu0.memory_total
        spans.append((samples[0]["time"], samples[-1]["time"]))
    (a0, a1), (b0, b1) = spans
    assert a0 <= b1 and b0 <= a1, f"the two trials did not run at the same time: {spans}"

    out = run_det(["slot", "list"], env={"DET_MASTER": master.url, "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(f"0: {gpu0.name}") == 2, out.stdout


def test_trial_over_its_cap_fails_with_a_clear_message(packed):
    master, api, model = packed
    exp_id = create_experiment(api, env_config(trials=1, alloc_fraction=0.6), model)
    exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], 300)
    assert exp["state"] == "ERROR", exp
    log = trial_logs(api, exp["trials"][0]["id"])
    assert "ran out of GPU memory under its cap of 50% of GPU 0" in log, log[-3000:]
    assert "--slots-per-gpu" in log and "resource_manager.slots_per_gpu" in log
