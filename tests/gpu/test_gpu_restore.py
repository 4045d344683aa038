"""Restore anywhere, on a GPU: after a crash, a pause and activate, and a master restart
(on the embedded agent and on a remote agent), and after a crash and Ctrl-C of the
driver (``--local``), a trial's Python, NumPy, torch and CUDA random streams go on where
they stopped and its weights stay bit-identical to an uninterrupted run's; a warm start
begins from the source checkpoint's exact weights; checkpoints move between the CPU and
the GPU.

Each scenario has a CPU variant (``cpu_twin``: the same code path without the CUDA
stream, run in CI) beside its GPU one.

The trial (gpu_def:RngTrial) reports a draw of each stream per batch and a hash of its
weights at each validation; each scenario compares those numbers with an
uninterrupted run of the same experiment (same experiment seed, so the same trial
seed). Machines without an NVIDIA GPU deselect these tests (tests/conftest.py)."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "agent"))

from agent_testing import AgentCluster  # noqa: E402
from det_cli_testing import run_det  # noqa: E402
from master_testing import (  # noqa: E402
    MasterProcess,
    create_experiment,
    metric_rows,
    wait_for_state,
    wait_until,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

HERE = pathlib.Path(__file__).resolve().parent
STREAMS = ("loss", "py_rand", "np_rand", "torch_rand", "cuda_rand")
LENGTH = 80


@pytest.fixture(autouse=True)
def _deterministic_cublas(monkeypatch):
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


def test_remote_agent_crash_pause_and_master_restart_continue_exactly(
        reference, device, tiny_dir, tmp_path):
    with AgentCluster(tmp_path, {"resource_manager": {"slots": 0}}) as cluster:
        cluster.ensure_agents("gpu-agent")  # --slots 1: the first GPU
        with cluster.master.client() as api:
            exp_id = create_experiment(api, config(tmp_path, "remote", device, sleep=0.1),
                                       model_dir(tiny_dir, tmp_path))
            paused_at = pause_and_activate(api, exp_id, 30)
            wait_until(lambda: batches_of(api, exp_id) >= paused_at + 10, timeout=200,
                       what="training to go on after activate")
            assert batches_of(api, exp_id) < LENGTH, "the trial finished before the master restart"
        cluster.restart_master()  # the agent reconnects to the new master
        with cluster.master.client() as api:
            trial, rows = finish(api, exp_id)
    assert trial["restarts"] >= 1
    assert (tmp_path / "remote.crashed").exists()
    assert rows == reference["rows"]


def _local_rows(tmp_path, local_dir):
    """The trial of local experiment 1 and its streams."""
    (exp,) = json.loads(run_det(["e", "describe", "1", "--metrics", "--local-dir", local_dir,
                                 "--json"]).stdout)
    (trial,) = exp["trials"]
    return trial, streams([(m["kind"], m["total_batches"], m["metrics"]) for m in trial["metrics"]])


def test_local_crash_and_interrupted_driver_continue_exactly(device, tiny_dir, tmp_path):
    """``--local``: a crash restarts the trial from its checkpoint; Ctrl-C of the driver
    checkpoints and pauses, ``det e resume`` goes on; the streams match a straight run."""
    model = model_dir(tiny_dir, tmp_path)
    straight_config = tmp_path / "straight.yaml"
    straight_config.write_text(yaml.safe_dump(config(tmp_path, "straight", device, crash=False)))
    out = run_det(["e", "create", straight_config, model, "--local-dir", tmp_path / "straight",
                   "--json", "--no-progress"], timeout=400)
    assert out.returncode == 0, out.stdout + out.stderr
    _, straight_rows = _local_rows(tmp_path, tmp_path / "straight")

    faults_config = tmp_path / "faults.yaml"
    # 0.2 s a batch: the restarted trial has 12 s to go, so the Ctrl-C below lands
    # mid-run even on a loaded machine.
    faults_config.write_text(yaml.safe_dump(config(tmp_path, "faults", device, sleep=0.2)))
    local = tmp_path / "faults"
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(faults_config), str(model),
         "--local-dir", str(local), "--json", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    startup = tmp_path / "faults.startup"
    # The second start is the restart after the crash at batch 25.
    wait_until(lambda: startup.exists() and len(startup.read_text().splitlines()) >= 2
               or proc.poll() is not None, timeout=300, what="the restart after the crash")
    time.sleep(1.5)  # some batches past the checkpoint at 20 (0.2 s each)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the trial checkpoints, the driver stops
    proc.wait(timeout=180)
    (state,) = json.loads(run_det(["e", "describe", "1", "--local-dir", local, "--json"]).stdout)
    assert state["state"] == "PAUSED", state
    out = run_det(["e", "resume", "1", "--local-dir", local, "--json", "--no-progress"],
                  timeout=400)
    assert out.returncode == 0, out.stdout + out.stderr
    _, rows = _local_rows(tmp_path, local)
    assert (tmp_path / "faults.crashed").exists()
    starts = startup.read_text().splitlines()
    assert len(starts) >= 3, starts  # the first start, the restart, the resume
    assert rows == straight_rows


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
