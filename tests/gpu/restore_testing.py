"""What the restore-anywhere GPU tests share (test_gpu_restore*.py,
test_gpu_checkpoint_devices.py): the experiment, the streams compared, and the
uninterrupted reference run. Each test file imports the fixtures it uses, and each file
runs on its own pytest-xdist worker in the GPU check (``--dist loadfile``), so the
scenarios run side by side.

The trial (gpu_def:RngTrial) reports a draw of each stream per batch and a hash of its
weights at each validation; each scenario compares those numbers with an
uninterrupted run of the same experiment (same experiment seed, so the same trial
seed)."""


import os
import pathlib
import shutil
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "agent"))

from master_testing import (  # noqa: E402
    MasterProcess,
    create_experiment,
    metric_rows,
    wait_for_state,
    wait_until,
)

HERE = pathlib.Path(__file__).resolve().parent
STREAMS = ("loss", "py_rand", "np_rand", "torch_rand", "cuda_rand")
LENGTH = 80


@pytest.fixture(autouse=True)
def deterministic_cublas(monkeypatch):
    # Trial processes inherit it: cuBLAS then gives the same bits run after run.
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


@pytest.fixture(scope="module", params=[pytest.param("cpu", marks=pytest.mark.cpu_twin),
                                        pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request):
    return request.param


def model_dir(tiny_dir, tmp_path):
    model = tmp_path / "model"
    if not model.exists():
        shutil.copytree(tiny_dir, model, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(HERE / "gpu_def.py", model / "gpu_def.py")
    return model


def config(tmp_path, name, device, crash=True, sleep=0.0, **changes):
    """The experiment; ``crash``: crash once at batch 25 (after the checkpoint at 20)."""
    marker = tmp_path / f"{name}.crashed"
    if not crash:
        marker.touch()  # the trial crashes only while the marker is missing
    cfg = {
        "entrypoint": "gpu_def:RngTrial",
        "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2,
                            "crash_once_at_batch": 25},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": LENGTH}},
        "min_validation_period": {"batches": 20},
        "min_checkpoint_period": {"batches": 10},
        "reproducibility": {"experiment_seed": 7},
        "max_restarts": 2,
        "data": {"crash_marker": str(marker), "sleep": sleep, "device": device,
                 "startup_file": str(tmp_path / f"{name}.startup")},
    }
    cfg.update(changes)
    return cfg


def streams(rows):
    """What must match an uninterrupted run: every stored row's random draws and loss
    (training) and weights' hash (validation), by batch."""
    out = []
    for kind, batches, metrics in rows:
        if kind == "training":
            out.append((kind, batches, [metrics.get(k) for k in STREAMS]))
        elif kind == "validation":
            out.append((kind, batches, metrics["weights_hash"]))
    return out


def batches_of(api, exp_id):
    trials = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
    return trials[0]["total_batches"] if trials else 0


def finish(api, exp_id):
    exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=400)
    assert exp["state"] == "COMPLETED", exp
    trial = exp["trials"][0]
    return trial, streams(metric_rows(api, trial["id"]))


def pause_and_activate(api, exp_id, at):
    wait_until(lambda: batches_of(api, exp_id) >= at, timeout=200, what=f"batch {at}")
    assert api.post(f"/experiments/{exp_id}/pause").json()["state"] == "PAUSED"
    wait_until(lambda: api.get(f"/experiments/{exp_id}").json()["trials"][0]["state"] == "PAUSED",
               timeout=120, what="the trial to pause")
    paused_at = batches_of(api, exp_id)
    assert paused_at < LENGTH, "the trial finished before it could be paused"
    assert api.post(f"/experiments/{exp_id}/activate").json()["state"] == "ACTIVE"
    return paused_at


@pytest.fixture(scope="module")
def reference(tmp_path_factory, device):
    """An uninterrupted run on the embedded agent: its streams, its trial and checkpoint."""
    root = tmp_path_factory.mktemp("reference")
    tiny = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "tiny_pytorch"
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    (root / "master").mkdir()
    master = MasterProcess(str(root / "master"), slots=1).start(timeout=120)
    try:
        with master.client() as api:
            exp_id = create_experiment(api, config(root, "ref", device, crash=False),
                                       model_dir(tiny, root))
            trial, rows = finish(api, exp_id)
            assert trial["restarts"] == 0
            yield {"rows": rows, "checkpoint": trial["latest_checkpoint"], "master": master,
                   "root": root}
    finally:
        master.stop()
