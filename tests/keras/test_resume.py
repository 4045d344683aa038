"""Checkpoint, restore in a new process, continue: the same weights as training straight through.

Array and Sequence inputs resume at the exact batch; a tf.data.Dataset restarts its
epoch (documented), so its resumed run differs from the straight one.
"""

import json
import os

import h5py
import numpy as np
from tf_trial_utils import make_config, plan, run_jobs_in_subprocess, run_trial

TRIALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trials")


def h5_arrays(path):
    """Model weights in Keras order, then optimizer variables in creation order.

    Layer names (dense, dense_7, ...) depend on how many models a process built, so
    the arrays are compared by position.
    """
    out = []
    with h5py.File(os.path.join(path, "determined-keras-model.h5"), "r") as f:
        weights = f["model_weights"]
        for layer in weights.attrs["layer_names"]:
            group = weights[layer]
            for name in group.attrs["weight_names"]:
                out.append(("model", group[name][()]))
        optimizer = f["determined_optimizer"]
        for key in sorted(optimizer):
            out.append(("optimizer", optimizer[key][()]))
    return out


def state(path):
    with open(os.path.join(path, "determined-keras-state.json")) as f:
        return json.load(f)


def config_for(kind):
    return make_config("keras_trials:LoaderTrial",
                       {"global_batch_size": 32, "loader": kind, "lr": 0.01})


def test_resume_in_new_process_matches_straight_run(tmp_path):
    kinds = ["arrays", "sequence", "adapter_threads", "dict_inputs"]
    straight = {}
    for kind in kinds:
        # 25 batches = 2.5 epochs: the checkpoint falls mid-epoch
        host, storage = run_trial(TRIALS, config_for(kind), plan(25, "v", 55),
                                  str(tmp_path / kind))
        (b1, u1, _), (b2, u2, _) = host.checkpoints
        assert (b1, b2) == (25, 55)
        straight[kind] = (storage.describe(u1), storage.describe(u2))

    jobs = [
        dict(model_dir=TRIALS, config=config_for(kind), steps=[55],
             storage_dir=str(tmp_path / f"{kind}-resumed"), latest_checkpoint=straight[kind][0])
        for kind in kinds
    ]
    results = run_jobs_in_subprocess(jobs)

    for kind, result in zip(kinds, results):
        (batches, resumed_path), = result["checkpoints"]
        assert batches == 55
        assert result["training"][0][0] == 55
        expected, actual = h5_arrays(straight[kind][1]), h5_arrays(resumed_path)
        assert [k for k, _ in expected] == [k for k, _ in actual]
        assert sum(k == "optimizer" for k, _ in expected) == 9  # iterations + m, v of 4 weights
        for i, ((kind_, a), (_, b)) in enumerate(zip(expected, actual)):
            assert np.array_equal(a, b), (kind, kind_, i)
        assert state(resumed_path) == state(straight[kind][1])


def test_tf_data_resume_restarts_the_epoch(tmp_path):
    host, storage = run_trial(TRIALS, config_for("dataset"), plan(25, "c", 55), str(tmp_path / "a"))
    mid, end = (storage.describe(u) for _, u, _ in host.checkpoints)
    assert state(mid)["epoch"] == 2 and state(mid)["batch_in_epoch"] == 5
    assert state(end)["epoch"] == 5 and state(end)["batch_in_epoch"] == 5

    host, storage = run_trial(TRIALS, config_for("dataset"), plan(55), str(tmp_path / "b"),
                              latest_checkpoint=mid)
    resumed = storage.describe(host.checkpoints[-1][1])
    assert host.training[-1][0] == 55
    # epoch 2 restarted from its first batch: 30 more batches => epoch 5, batch 0
    assert state(resumed)["epoch"] == 5 and state(resumed)["batch_in_epoch"] == 0
    first_kernel = h5_arrays(end)[0][1]
    assert not np.array_equal(first_kernel, h5_arrays(resumed)[0][1])


def test_optimizer_state_restored(tmp_path):
    host, storage = run_trial(TRIALS, config_for("arrays"), plan(12), str(tmp_path / "a"))
    ckpt = storage.describe(host.checkpoints[-1][1])
    from determined.keras import load_model_from_checkpoint_path

    model = load_model_from_checkpoint_path(ckpt)
    assert int(model.optimizer.iterations.numpy()) == 12
    weights = [v for k, v in h5_arrays(ckpt) if k == "optimizer"]
    live = [v.numpy() for v in model.optimizer.variables]
    assert len(weights) == len(live)
    for a, b in zip(weights, live):
        assert np.array_equal(a, b)
