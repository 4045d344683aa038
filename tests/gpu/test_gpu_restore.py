"""Restore anywhere, on a GPU, on the embedded agent: after a crash, a pause and
activate, and a master restart, a trial's Python, NumPy, torch and CUDA random streams go
on where they stopped and its weights stay bit-identical to an uninterrupted run's; a
warm start begins from the source checkpoint's exact weights.

Each scenario has a CPU variant (``cpu_twin``: the same code path without the CUDA
stream, run in CI) beside its GPU one; machines without an NVIDIA GPU deselect the GPU
ones (tests/conftest.py). The remote agent: test_gpu_restore_remote.py; ``--local``:
test_gpu_restore_local.py; checkpoints between CPU and GPU:
test_gpu_checkpoint_devices.py."""

import json
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from master_testing import MasterProcess, create_experiment, wait_until  # noqa: E402
from restore_testing import (  # noqa: E402,F401 (fixtures)
    LENGTH,
    batches_of,
    config,
    deterministic_cublas,
    device,
    finish,
    model_dir,
    pause_and_activate,
    reference,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def test_embedded_agent_crash_pause_and_master_restart_continue_exactly(
        reference, device, tiny_dir, tmp_path):
    data = tmp_path / "master"
    data.mkdir()
    master = MasterProcess(str(data), slots=1).start(timeout=120)
    try:
        with master.client() as api:
            exp_id = create_experiment(api, config(tmp_path, "faults", device, sleep=0.1),
                                       model_dir(tiny_dir, tmp_path))
            paused_at = pause_and_activate(api, exp_id, 30)
            wait_until(lambda: batches_of(api, exp_id) >= paused_at + 10, timeout=200,
                       what="training to go on after activate")
            assert batches_of(api, exp_id) < LENGTH, "the trial finished before the master restart"
        master.sigkill()
        master = MasterProcess(str(data), slots=1, port=master.port).start(timeout=120)
        with master.client() as api:
            trial, rows = finish(api, exp_id)
    finally:
        master.stop()
    assert trial["restarts"] >= 1  # the crash at 25 (the master restart may count too)
    assert (tmp_path / "faults.crashed").exists()
    assert rows == reference["rows"]


def test_warm_start_begins_from_the_source_weights(reference, device, tiny_dir, tmp_path):
    master = reference["master"]
    cfg = config(tmp_path, "warm", device, crash=False)
    cfg["searcher"] = dict(cfg["searcher"], max_length={"batches": 20},
                           source_checkpoint_uuid=reference["checkpoint"])
    with master.client() as api:
        exp_id = create_experiment(api, cfg, model_dir(tiny_dir, tmp_path))
        trial, _ = finish(api, exp_id)
    assert trial["warm_start_checkpoint"] == reference["checkpoint"]
    startup = [json.loads(l) for l in (tmp_path / "warm.startup").read_text().splitlines()]
    final_hash = [h for kind, b, h in reference["rows"] if kind == "validation" and b == LENGTH]
    assert startup[0] == {"batch": 0, "hash": final_hash[0]}, (startup, reference["rows"])
