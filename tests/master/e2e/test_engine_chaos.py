"""Chaos: random SIGKILLs of trial processes and of the master during an adaptive_asha
search. Every batch's metrics are stored once, every registered checkpoint is complete
and loadable, no partial checkpoint directory remains, and each trial ends with the
weights and metrics of the same trial in an uninterrupted run."""

import os
import random
import signal
import time
from typing import Any, Dict

import pytest
import torch

from master_testing import (
    create_experiment,
    metric_rows,
    slow_model_dir,
    trial_pid,
    wait_until,
)

pytestmark = pytest.mark.e2e

CONFIG: Dict[str, Any] = {
    "entrypoint": "slow_def:SlowTrial",
    "scheduling_unit": 10,
    "hyperparameters": {"global_batch_size": 16, "dropout": 0.2, "sleep": 0.05,
                        "lr": {"type": "double", "minval": 0.01, "maxval": 0.3}},
    # One trial at a time keeps ASHA's promotions independent of timing, so the
    # interrupted search makes the same decisions as the uninterrupted one.
    "searcher": {"name": "adaptive_asha", "metric": "validation_loss", "max_trials": 3,
                 "max_length": {"batches": 90}, "divisor": 3, "max_rungs": 2,
                 "max_concurrent_trials": 1},
    "min_checkpoint_period": {"batches": 20},
    "reproducibility": {"experiment_seed": 77},
    "max_restarts": 20,
}


def _final(master, api, exp_id) -> Dict[str, Any]:
    exp = api.get(f"/experiments/{exp_id}").json()
    assert exp["state"] == "COMPLETED", exp
    out = {}
    for t in exp["trials"]:
        rows = metric_rows(api, t["id"])
        keys = [(k, b) for k, b, _ in rows]
        assert len(keys) == len(set(keys)), f"a metric stored twice: {keys}"
        path = os.path.join(master.data_dir, "checkpoints", t["latest_checkpoint"],
                            "state_dict.pth")
        out[t["request_id"]] = {"rows": rows, "batches": t["total_batches"],
                                "weights": torch.load(path, weights_only=False)[
                                    "models_state_dict"]}
    return out


def _done(api, exp_id) -> bool:
    return api.get(f"/experiments/{exp_id}").json()["state"] in ("COMPLETED", "ERROR",
                                                                "CANCELED")


def test_random_sigkills_of_trials_and_master(master_factory, tiny_dir, tmp_path):
    model_dir = slow_model_dir(tiny_dir, tmp_path)
    master = master_factory(slots=2)
    with master.client() as api:
        ref = create_experiment(api, CONFIG, model_dir)
        wait_until(lambda: _done(api, ref), timeout=180, what="the reference search")
        reference = _final(master, api, ref)
        exp = create_experiment(api, CONFIG, model_dir)
    rng = random.Random(5)
    kills = 0
    deadline = time.monotonic() + 240
    while True:
        with master.client() as api:
            if _done(api, exp):
                break
            trials = api.get(f"/experiments/{exp}/trials").json()["trials"]
        assert time.monotonic() < deadline, "the search did not end"
        time.sleep(rng.uniform(0.3, 1.2))
        if kills == 2:  # once: the master, mid-search
            master.sigkill()
            master = master_factory(slots=2, data_dir=master.data_dir, port=master.port)
            kills += 1
            continue
        if kills < 7:
            live = [t for t in trials if t["state"] == "ACTIVE"]
            pids = [trial_pid(master.data_dir, exp, t["id"]) for t in live]
            pids = [p for p in pids if p and os.path.exists(f"/proc/{p}")]
            if pids:
                try:
                    os.killpg(rng.choice(pids), signal.SIGKILL)
                    kills += 1
                except ProcessLookupError:
                    pass
    with master.client() as api:
        chaos = _final(master, api, exp)
        ckpts = api.get(f"/experiments/{exp}/checkpoints").json()["checkpoints"]
        restarts = sum(t["restarts"] for t in
                       api.get(f"/experiments/{exp}/trials").json()["trials"])
    assert kills >= 3 and restarts >= 1, (kills, restarts)
    assert chaos.keys() == reference.keys()
    for rid, want in reference.items():
        got = chaos[rid]
        assert got["batches"] == want["batches"], rid
        assert got["rows"] == want["rows"], f"trial {rid}: metrics differ"
        for a, b in zip(got["weights"], want["weights"]):
            assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), rid
    for c in ckpts:
        if c["state"] == "COMPLETED":
            path = os.path.join(master.data_dir, "checkpoints", c["uuid"])
            assert os.path.exists(os.path.join(path, "metadata.json")), c
            torch.load(os.path.join(path, "state_dict.pth"), weights_only=False)
    # A master start removes what killed checkpoint writes left behind.
    master.stop()
    master = master_factory(slots=2, data_dir=master.data_dir, port=master.port)
    root = os.path.join(master.data_dir, "checkpoints")
    wait_until(lambda: not [n for n in os.listdir(root) if n.startswith(".partial-")],
               timeout=30, what="partial checkpoint directories to be removed")
