"""GPU slots, caps and sampling without a GPU: the slot layout, each trial's GPU
environment, CUDA MPS detection, the out-of-memory message, and that NVML failing (no
driver on this machine) leaves everything quiet."""

import subprocess
import sys
import threading

import pytest

from determined._procs._gpu_metrics import GpuSampler, samples_by_owner
from determined._procs._gpus import (Gpu, check_slots_per_gpu, gpu_inventory, shared_gpu_note,
                                    slot_gpus, trial_gpu_env)
from determined.harness._gpu_cap import apply_memory_cap, memory_cap_error
from determined.master._config import load_master_config

GIB = 2**30
TWO = [Gpu("0", "GPU-a", "Card", 16 * GIB), Gpu("1", "GPU-b", "Card", 16 * GIB)]


@pytest.fixture(autouse=True)
def _no_mps(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(tmp_path / "no-mps"))


def test_slots_per_gpu_lays_consecutive_slots_on_each_gpu():
    assert [g.uuid for g in slot_gpus(TWO, 3)] == ["GPU-a"] * 3 + ["GPU-b"] * 3
    assert slot_gpus([], 4) == []
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="slots_per_gpu to be an integer >= 1"):
            check_slots_per_gpu(bad)


def test_one_slot_per_gpu_pins_the_gpu_without_a_cap():
    env = trial_gpu_env(slot_gpus(TWO), [1])
    assert env == {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert trial_gpu_env([], [0]) == {}  # an agent without GPUs
    assert shared_gpu_note(env) is None


def test_shared_slots_cap_each_trial_at_its_share():
    by_slot = slot_gpus(TWO, 4)
    env = trial_gpu_env(by_slot, [5], slots_per_gpu=4)
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["DET_GPU_MEMORY_FRACTION"] == "0.25"
    assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" not in env  # no MPS daemon here
    assert shared_gpu_note(env) == ("GPU 1 is shared by 4 slots; this trial may use 25% of "
                                    "its memory")
    # Two of its slots on one GPU: twice the share; an explicit fraction wins.
    assert trial_gpu_env(by_slot, [0, 1], 4)["DET_GPU_MEMORY_FRACTION"] == "0.5"
    assert trial_gpu_env(by_slot, [0], 4, memory_fraction=0.4)["DET_GPU_MEMORY_FRACTION"] == "0.4"
    assert trial_gpu_env(slot_gpus(TWO), [0], 1, 0.3)["DET_GPU_MEMORY_FRACTION"] == "0.3"


def test_an_mps_daemon_gets_the_cap_as_its_pinned_memory_limit(tmp_path, monkeypatch):
    pipes = tmp_path / "mps"
    pipes.mkdir()
    (pipes / "control").write_text("")
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(pipes))
    env = trial_gpu_env(slot_gpus(TWO, 2), [2], slots_per_gpu=2)
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=8192M"  # device 0 of those it sees


def test_nvml_without_a_driver_means_no_gpus_and_a_quiet_sampler():
    pytest.importorskip("pynvml")
    if gpu_inventory():
        pytest.skip("this machine has an NVIDIA driver and GPU")  # the gpu tests cover it
    called = threading.Event()
    sampler = GpuSampler(0.01, lambda: ["0"], lambda samples: called.set()).start()
    sampler._thread.join(5)
    assert not sampler._thread.is_alive() and not called.is_set()
    sampler.stop()


def test_samples_go_to_the_trials_on_their_gpu():
    samples = [{"gpu_index": 0, "utilization": 5.0}, {"gpu_index": 1, "utilization": 9.0}]
    assert samples_by_owner(samples, {"a": ["1"], "b": ["0", "1"], "c": []}) == {
        "a": [samples[1]], "b": samples}


def test_out_of_memory_under_a_cap_names_the_cap_and_the_options():
    torch = pytest.importorskip("torch")
    env = {"DET_GPU_MEMORY_FRACTION": "0.25", "DET_SLOTS_PER_GPU": "4",
           "CUDA_VISIBLE_DEVICES": "1"}
    oom = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")
    why = memory_cap_error(oom, env)
    assert "ran out of GPU memory under its cap of 25% of GPU 1" in why
    assert "(shared by 4 slots)" in why
    assert "--slots-per-gpu" in why and "resource_manager.gpu_memory_fraction" in why
    try:  # wrapped, as the harness wraps errors of user code
        try:
            raise oom
        except Exception as e:
            raise RuntimeError("train_batch raised") from e
    except RuntimeError as wrapped:
        assert memory_cap_error(wrapped, env) == why
    assert memory_cap_error(RuntimeError("other"), env) is None
    assert memory_cap_error(oom, {}) is None  # no cap: the plain error says it all


def test_the_cap_is_not_applied_without_cuda_and_a_bad_one_is_named():
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is here: tests/gpu covers the cap")
    assert apply_memory_cap({"DET_GPU_MEMORY_FRACTION": "0.5"}) is None
    assert apply_memory_cap({}) is None
    with pytest.raises(ValueError, match="DET_GPU_MEMORY_FRACTION to be a fraction"):
        apply_memory_cap({"DET_GPU_MEMORY_FRACTION": "2"})


def test_bad_gpu_options_are_named():
    with pytest.raises(ValueError, match="resource_manager.slots_per_gpu"):
        load_master_config(None, resource_manager={"slots_per_gpu": 0})
    with pytest.raises(ValueError, match="resource_manager.gpu_memory_fraction"):
        load_master_config(None, resource_manager={"gpu_memory_fraction": 1.5})
    with pytest.raises(ValueError, match="resource_manager.gpu_metrics_interval"):
        load_master_config(None, resource_manager={"gpu_metrics_interval": 0})
    for flag, value, text in (("--slots-per-gpu", "0", "--slots-per-gpu to be an integer"),
                              ("--gpu-memory-fraction", "0", "--gpu-memory-fraction to be a "
                                                             "fraction in (0, 1]"),
                              ("--gpu-metrics-interval", "-1", "--gpu-metrics-interval to be "
                                                               "> 0")):
        out = subprocess.run([sys.executable, "-m", "determined.agent", "--master",
                              "http://127.0.0.1:9", flag, value], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 2 and text in out.stderr, out.stderr
