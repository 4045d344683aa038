"""Distributed PyTorch trials: real rank processes joined by torch.distributed (gloo, CPU)."""

import collections
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from determined.config import load_config, validate_config
from determined.harness import DistributedInfo, TrialContext, TrialEnv
from determined.pytorch import Reducer
from determined.pytorch._distributed import (
    average_batch_metrics,
    combine_slot_metrics,
    slot_metrics,
)

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "master"))
from master_testing import MasterProcess, create_experiment, metric_rows, wait_for_state  # noqa: E402

SCRIPT = HERE / "dist_script.py"
MODEL = HERE.parent / "fixtures" / "dist_pytorch"


def run(tmp_path, name, ops, *extra, slots=2, check=True, data=None):
    """Run the trial as ``slots`` processes; returns (result JSON, log dir)."""
    log_dir = tmp_path / name
    log_dir.mkdir()
    data = {"log_dir": str(log_dir), **(data or {})}
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(MODEL), str(MODEL / "const.yaml"), str(tmp_path / "ckpt"),
         ops, "--slots", str(slots), "--data", json.dumps(data), *extra],
        capture_output=True, text=True, timeout=120,
    )
    if not check:
        return out, log_dir
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), log_dir


def state(result, batches):
    uuid = next(u for b, u in result["checkpoints"] if b == batches)
    return torch.load(os.path.join(result["storage"], uuid, "state_dict.pth"), weights_only=False)


def seen(log_dir, rank):
    """batch_idx -> (weights checksum, sample ids) as rank ``rank`` logged them."""
    rows = {}
    with open(log_dir / f"seen-{rank}.txt") as f:
        for line in f:
            idx, checksum, *ids = line.split()
            rows[int(idx)] = (float(checksum), [int(i) for i in ids])
    return rows


def test_two_ranks_train_like_one_process_on_the_same_global_batch(tmp_path):
    two, two_logs = run(tmp_path, "two", "validate,train:30,validate,checkpoint")
    one, one_logs = run(tmp_path, "one", "validate,train:30,validate,checkpoint", slots=1)
    # Same weights after 30 SGD steps (momentum, per-epoch 24 batches: an epoch boundary).
    a, b = state(two, 30)["models_state_dict"][0], state(one, 30)["models_state_dict"][0]
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-5), k
    # Sharding: each rank takes every other per-slot batch of the same epoch order, so
    # the two ranks' batches at step i are, together, the single process's batch i.
    r0, r1, single = seen(two_logs, 0), seen(two_logs, 1), seen(one_logs, 0)
    assert sorted(r0) == sorted(r1) == list(range(30))
    for i in range(30):
        assert len(r0[i][1]) == len(r1[i][1]) == 8
        assert set(r0[i][1]).isdisjoint(r1[i][1])
        assert sorted(r0[i][1] + r1[i][1]) == sorted(single[i][1])
        assert r0[i][0] == r1[i][0]  # identical weights on both ranks before every step
    epoch0 = [s for i in range(24) for s in r0[i][1] + r1[i][1]]
    assert sorted(epoch0) == list(range(384))  # one epoch covers the data exactly once
    # Training metrics: the chief's; num_inputs counts both ranks.
    (_, first), *_ = two["training"]
    assert first["num_inputs"] == 10 * 16
    assert all(m["rank"] == 0.0 for m in first["batch_metrics"])
    # Validation at batch 0 (same weights): ranks reduce their shards, the chief combines;
    # the result is the single process's reduction over all batches.
    v2, v1 = two["validations"][0][1], one["validations"][0][1]
    assert v2["num_inputs"] == v1["num_inputs"] == 128
    ids = np.arange(384, 512)
    batches = [ids[i:i + 20] for i in range(0, 128, 20)]  # 7 batches: 4 on rank 0, 3 on rank 1
    expected = {
        "mean_id": float(np.mean([b.mean() for b in batches])),  # AVG weighted by batches
        "count": 128.0, "max_id": 511.0, "min_id": 384.0, "id_sum": int(ids.sum()),
        "median_id": float(np.median([torch.tensor(b).float().median().item() for b in batches])),
    }
    for name, value in expected.items():
        assert v2["validation_metrics"][name] == pytest.approx(value), name
        assert v1["validation_metrics"][name] == pytest.approx(value), name
    assert v2["validation_metrics"]["validation_loss"] == pytest.approx(
        v1["validation_metrics"]["validation_loss"], rel=1e-6)
    # Only the chief wrote checkpoints.
    # (TensorBoard event files are synced to the storage's own tensorboard/ directory.)
    written = [n for n in os.listdir(tmp_path / "ckpt") if n != "tensorboard"]
    assert len(written) == len(two["checkpoints"]) + len(one["checkpoints"])
    # Events as (rank, name): the chief's are the single process's; validation
    # callbacks run on every rank (metric values are checked above).
    def events(logs):
        return [tuple(line.split(" ", 2)[:2])
                for line in (logs / "events.txt").read_text().splitlines()]

    assert [e for e in events(two_logs) if e[0] == "0"] == events(one_logs)
    assert ("1", "validation_end") in events(two_logs), events(two_logs)
    assert ("0", "checkpoint_end") in events(one_logs)


def test_gradient_aggregation_matches_one_process(tmp_path):
    opts = json.dumps({"aggregation_frequency": 2})
    two, _ = run(tmp_path, "two", "train:20", "--optimizations", opts)
    one, _ = run(tmp_path, "one", "train:20", "--optimizations", opts, slots=1)
    a, b = state(two, 20)["models_state_dict"][0], state(one, 20)["models_state_dict"][0]
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-5), k


def test_rank0_weights_broadcast_averaged_metrics_and_full_dataset_on_chief(tmp_path):
    result, logs = run(
        tmp_path, "full", "train:20,validate", "--entrypoint", "model_def:FullDataset",
        "--hparams", json.dumps({"random_init": True}),
        "--optimizations", json.dumps({"average_training_metrics": True}),
    )
    r0, r1 = seen(logs, 0), seen(logs, 1)
    # Each rank drew its own random weights in __init__; rank 0's reached both.
    assert all(r0[i][0] == r1[i][0] for i in range(20))
    for _, metrics in result["training"]:
        assert all(m["rank"] == 0.5 for m in metrics["batch_metrics"])  # mean of ranks 0 and 1
        assert metrics["avg_metrics"]["rank"] == 0.5
    (_, validation), = result["validations"]
    assert validation["validation_metrics"]["records"] == 128
    assert (logs / "full.txt").read_text().split() == ["0"]  # evaluate_full_dataset: chief only


def test_resumed_two_rank_trial_is_bit_identical(tmp_path):
    hp = json.dumps({"dropout": 0.3})
    straight, _ = run(tmp_path, "straight", "train:30,checkpoint,train:60", "--hparams", hp)
    ckpt = next(u for b, u in straight["checkpoints"] if b == 30)
    resumed, _ = run(tmp_path, "resumed", "train:60", "--hparams", hp,
                     "--restore", os.path.join(straight["storage"], ckpt))
    a, b = state(resumed, 60), state(straight, 60)
    assert a["batches_trained"] == b["batches_trained"] == 60
    for sa, sb in zip(a["models_state_dict"], b["models_state_dict"]):
        for k in sa:
            assert torch.equal(sa[k], sb[k]), k
    assert str(a["optimizers_state_dict"]) == str(b["optimizers_state_dict"])
    def losses(result):
        return [m["loss"] for _, w in result["training"] for m in w["batch_metrics"]]

    assert losses(resumed) == losses(straight)[30:]


def test_a_dead_rank_fails_the_trial_at_once(tmp_path):
    marker = tmp_path / "crashed"
    start = time.monotonic()
    out, logs = run(tmp_path, "crash", "train:40", "--hparams",
                    json.dumps({"crash_rank": 1, "crash_once_at_batch": 5}),
                    data={"crash_marker": str(marker)}, check=False)
    assert out.returncode != 0 and marker.exists()
    assert time.monotonic() - start < 60  # the chief's all-reduce failed; no timeout needed
    assert "Connection" in out.stderr or "Connection" in out.stdout
    assert max(seen(logs, 0)) <= 6


def test_ranks_started_by_a_launcher_join_through_the_environment(tmp_path):
    """With DET_RANK/DET_SIZE/MASTER_ADDR/MASTER_PORT set, a process starts no ranks itself."""
    from master_testing import free_port

    port = str(free_port())
    (tmp_path / "logs").mkdir()
    procs = []
    for rank in (1, 0):
        env = dict(os.environ, DET_RANK=str(rank), DET_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port)
        procs.append(subprocess.Popen(
            [sys.executable, str(SCRIPT), str(MODEL), str(MODEL / "const.yaml"),
             str(tmp_path / "ckpt"), "train:10,validate", "--data",
             json.dumps({"log_dir": str(tmp_path / "logs")})],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    chief = json.loads(outs[1][0].strip().splitlines()[-1])
    assert chief["validations"][0][0] == 10 and len(chief["checkpoints"]) == 1
    r0, r1 = seen(tmp_path / "logs", 0), seen(tmp_path / "logs", 1)
    assert sorted(r0) == sorted(r1) == list(range(10))
    assert all(r0[i][0] == r1[i][0] for i in range(10))


def test_two_slot_trial_on_a_master_trains_with_two_processes(tmp_path):
    """The master allocates 2 slots and starts one runner, which starts rank 1 itself."""
    master = MasterProcess(str(tmp_path), slots=2).start()
    try:
        config = load_config(MODEL / "const.yaml")
        config["data"] = {"log_dir": str(tmp_path)}
        with master.client() as client:
            exp_id = create_experiment(client, config, MODEL)
            exp = wait_for_state(client, exp_id, ["COMPLETED", "ERROR"], timeout=120)
            assert exp["state"] == "COMPLETED", master.log()
            trial_id = client.get(f"/experiments/{exp_id}").json()["trials"][0]["id"]
            kinds = [(k, b) for k, b, _ in metric_rows(client, trial_id)]
    finally:
        master.stop()
    assert ("validation", 40) in kinds and ("training", 40) in kinds
    assert len(seen(tmp_path, 0)) == len(seen(tmp_path, 1)) == 40


# ---------------------------------------------------------------------- in-process units


def test_global_batch_smaller_than_slots_is_a_clear_error():
    cfg = validate_config(load_config(MODEL / "const.yaml"))
    env = TrialEnv(cfg, {"global_batch_size": 3}, str(MODEL), distributed=DistributedInfo(size=4))
    with pytest.raises(ValueError, match="global_batch_size >= resources.slots_per_trial"):
        TrialContext(env)


def test_cross_rank_reduction_of_slot_results():
    reducers = {"avg": Reducer.AVG, "sum": Reducer.SUM, "max": Reducer.MAX, "min": Reducer.MIN,
                "median": lambda values: float(np.median(values))}
    rank0 = {"avg": [1.0, 2.0, 3.0], "sum": [1, 2, 3], "max": [1, 5, 3], "min": [4, 2, 6],
             "median": [1.0, 2.0, 3.0]}
    rank1 = {k: [10.0] for k in rank0}
    parts = [slot_metrics(rank0, reducers), slot_metrics(rank1, reducers), None]
    out = combine_slot_metrics(parts, reducers)
    assert out == {"avg": pytest.approx(16 / 4), "sum": 16.0, "max": 10.0, "min": 2.0,
                   "median": 2.5}
    with pytest.raises(ValueError, match="same metric names"):
        combine_slot_metrics([slot_metrics(rank0, reducers), {"avg": (1.0, 1)}], reducers)


def test_average_batch_metrics_ignores_missing_values():
    out = average_batch_metrics([
        [{"loss": 1.0, "tag": "a"}, {"loss": 2.0, "tag": "b"}],
        [{"loss": 3.0, "tag": "x"}, {"loss": None, "tag": "y"}],
    ])
    assert out == [{"loss": 2.0, "tag": "a"}, {"loss": 2.0, "tag": "b"}]
    assert collections.Counter(type(m["loss"]) for m in out) == {float: 2}


def test_ddp_path_trains_like_one_process(tmp_path, monkeypatch):
    # On GPUs (NCCL) wrapped models are DistributedDataParallel; DET_DDP=1 runs the same
    # code on gloo here. DDP's bucketed all-reduce must give the single process's steps.
    monkeypatch.setenv("DET_DDP", "1")
    two, logs = run(tmp_path, "ddp", "train:30,checkpoint")
    monkeypatch.delenv("DET_DDP")
    one, _ = run(tmp_path, "one", "train:30,checkpoint", slots=1)
    a, b = state(two, 30)["models_state_dict"][0], state(one, 30)["models_state_dict"][0]
    assert set(a) == set(b)  # the model's own keys, no DDP "module." prefix
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-5), k
    r0, r1 = seen(logs, 0), seen(logs, 1)
    assert all(r0[i][0] == r1[i][0] for i in range(30))  # identical weights on both ranks
    assert "DistributedDataParallel" in (logs / "model-type-0.txt").read_text()


def test_ddp_is_the_nccl_path_unless_det_ddp_says_otherwise(monkeypatch):
    from determined.pytorch._distributed import use_ddp

    monkeypatch.delenv("DET_DDP", raising=False)
    assert use_ddp("nccl") and not use_ddp("gloo")
    monkeypatch.setenv("DET_DDP", "0")
    assert not use_ddp("nccl")
    monkeypatch.setenv("DET_DDP", "1")
    assert use_ddp("gloo")
    monkeypatch.setenv("DET_DDP", "yes")
    with pytest.raises(ValueError, match="Expected DET_DDP 0 or 1"):
        use_ddp("nccl")
