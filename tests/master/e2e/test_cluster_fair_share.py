"""Sharing two slots between experiments on a real master, observed by sampling which
trial holds each slot (``GET /agents``) while the experiments run.

``fair_share`` (the default) splits the slots by ``weight`` between experiments that
have work; ``priority`` serves experiments first come, first served unless a
``priority`` (smaller is more urgent) says otherwise, preempting less urgent trials.
Assertions are on shares of many samples, never on exact timing.
"""

import os
import time
from typing import Any, Dict, List, Tuple

from master_testing import create_experiment, slot_tasks, slow_model_dir, wait_for_state

LRS = [0.01, 0.02, 0.03, 0.05, 0.07, 0.1]


def _config(trials: int) -> Dict[str, Any]:
    """A grid of ``trials`` short trials (40 batches, about 2 s each)."""
    return {
        "entrypoint": "slow_def:SlowTrial",
        "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "dropout": 0.2, "sleep": 0.04,
                            "lr": {"type": "categorical", "vals": LRS[:trials]}},
        "searcher": {"name": "grid", "metric": "validation_loss",
                     "max_length": {"batches": 40}},
        "min_validation_period": {"batches": 40},
    }


class Sample:
    """One observation: slots each experiment holds and its trials not yet finished."""

    def __init__(self, held: Dict[int, int], unfinished: Dict[int, int], busy: int):
        self.held, self.unfinished, self.busy = held, unfinished, busy


def _sample(api, exp_ids: List[int]) -> Sample:
    # Slots first: a trial holding a slot was created before it was scheduled, so the
    # experiments read afterwards list it. Read the other way round, a trial created in
    # between would hold a slot no experiment claims.
    tasks = [t for t in slot_tasks(api) if t]
    owner: Dict[int, int] = {}
    unfinished: Dict[int, int] = {}
    for exp_id in exp_ids:
        exp = api.get(f"/experiments/{exp_id}").json()
        for t in exp["trials"]:
            owner[t["id"]] = exp_id
        # Trials of the grid not completed yet, created or not: with automatic
        # concurrency the searcher opens only as many trials as there are slots.
        unfinished[exp_id] = 0 if exp["state"] != "ACTIVE" else len(LRS) - sum(
            t["state"] == "COMPLETED" for t in exp["trials"])
    held = {exp_id: 0 for exp_id in exp_ids}
    for task in tasks:
        exp_id = owner.get(int(task.split("-")[1]))
        if exp_id is not None:
            held[exp_id] += 1
    return Sample(held, unfinished, len(tasks))


def _observe(api, exp_ids: List[int], until: Any, timeout: float = 150.0) -> List[Sample]:
    samples: List[Sample] = []
    deadline = time.monotonic() + timeout
    while True:
        s = _sample(api, exp_ids)
        samples.append(s)
        if until(s):
            return samples
        assert time.monotonic() < deadline, f"timed out; last sample {vars(s)}"
        time.sleep(0.1)


def _split(samples: List[Sample], a: int, b: int,
           when: Any) -> Tuple[int, Dict[Tuple[int, int], int]]:
    """How often each (held by a, held by b) occurred in full-cluster samples matching ``when``."""
    counts: Dict[Tuple[int, int], int] = {}
    n = 0
    for s in samples:
        if s.busy == 2 and when(s):
            n += 1
            key = (s.held[a], s.held[b])
            counts[key] = counts.get(key, 0) + 1
    return n, counts


def _finish(master, api, exp_ids: List[int]) -> None:
    """Every trial completes (preempted ones resumed); the scheduler never failed."""
    for exp_id in exp_ids:
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=150)
        assert exp["state"] == "COMPLETED", exp
        assert all(t["state"] == "COMPLETED" and t["total_batches"] == 40
                   for t in exp["trials"]), exp["trials"]
    with open(os.path.join(master.data_dir, "master-test.log"), errors="replace") as f:
        errors = [line for line in f if "scheduling failed" in line]
    assert not errors, errors[:3]


def test_fair_share_splits_by_weight(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=2)
    model_dir = slow_model_dir(tiny_dir, tmp_path)
    with master.client() as api:
        a = create_experiment(api, _config(6), model_dir)
        b = create_experiment(api, _config(6), model_dir)
        # Equal weights: one slot each while both have work. a starts first with both
        # slots; once b has come in and a trial of a has given its slot back (at a
        # workload's end), the split stays even.
        samples = _observe(api, [a, b], lambda s: s.unfinished[a] <= 4 and s.unfinished[b] <= 4)
        first_even = next((i for i, s in enumerate(samples) if s.held == {a: 1, b: 1}), None)
        assert first_even is not None, [vars(s) for s in samples]
        n, counts = _split(samples[first_even:], a, b,
                           lambda s: s.unfinished[a] >= 1 and s.unfinished[b] >= 1)
        assert n >= 10, counts
        assert counts.get((1, 1), 0) >= 0.7 * n, counts

        # Weight 4:1 on two slots: b's share rounds to both slots while it has the demand.
        r = api.patch(f"/experiments/{b}", json={"weight": 4})
        assert r.status_code == 200, r.text
        samples = _observe(api, [a, b], lambda s: s.unfinished[b] <= 1)
        n, counts = _split(samples, a, b, lambda s: s.unfinished[b] >= 2)
        assert n >= 10, counts
        assert counts.get((0, 2), 0) >= 0.6 * n, counts
        assert counts.get((1, 1), 0) + counts.get((0, 2), 0) == n, counts
        _finish(master, api, [a, b])


def test_priority_scheduler_fifo_and_priority(config_master_factory, tiny_dir, tmp_path):
    master = config_master_factory(
        {"resource_manager": {"slots": 2, "scheduler": {"type": "priority"}}})
    model_dir = slow_model_dir(tiny_dir, tmp_path)
    with master.client() as api:
        a = create_experiment(api, _config(6), model_dir)
        b = create_experiment(api, _config(6), model_dir)
        # First come, first served: b waits while a has trials waiting for a slot.
        samples = _observe(api, [a, b], lambda s: s.unfinished[a] <= 4)
        n, counts = _split(samples, a, b, lambda s: s.unfinished[a] >= 3)
        assert n >= 10, counts
        assert counts.get((2, 0), 0) >= 0.8 * n, counts

        # b made more urgent: it preempts a and takes both slots while it has the work.
        r = api.patch(f"/experiments/{b}", json={"priority": 1})
        assert r.status_code == 200, r.text
        samples = _observe(api, [a, b], lambda s: s.unfinished[b] <= 1)
        n, counts = _split(samples, a, b, lambda s: s.unfinished[b] >= 2)
        assert n >= 10, counts
        assert counts.get((0, 2), 0) >= 0.6 * n, counts
        _finish(master, api, [a, b])
