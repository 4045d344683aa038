"""Trials see exactly the GPUs Ray gave their actors, not the master's slot numbers: a
real Ray cluster of two worker nodes with two fake GPUs each (``num_gpus=2`` on this
CPU machine: Ray hands out their ids and sets ``CUDA_VISIBLE_DEVICES`` as on GPUs).
``CUDA_VISIBLE_DEVICES``, ``DET_SLOT_IDS`` and ``det.get_cluster_info().slot_ids``
must all name Ray's ids, for Trial classes, scripts and tasks, on one node and spanning two
(a script's node: its actor's GPUs; a Trial class: each rank is an actor with one GPU)."""

import json

import pytest

from master_testing import create_experiment, free_ray_agent_ports, wait_for_state, wait_until
from span_testing import (
    CORE_DIR,
    DIST_DIR,
    check_script_two_and_one,
    check_trial_two_and_one,
    place_trial_config,
    places,
)
from test_ray_cluster import MB, _new_task, _started, _task_in, _task_lines
from test_ray_script_spanning import ENDED, _config, _free_slots, _logs, _master

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def gpu_cluster():
    from ray.cluster_utils import Cluster

    small = dict(object_store_memory=80 * MB)
    cluster = _started(lambda: Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=0, include_dashboard=False, **small, **free_ray_agent_ports())))
    try:
        for _ in range(2):
            _started(lambda: cluster.add_node(num_cpus=2, num_gpus=2, **small, **free_ray_agent_ports()))
        cluster.wait_for_nodes(timeout=180)
        yield cluster
    finally:
        cluster.shutdown()


def _run(api, config, model_dir) -> dict:
    exp_id = create_experiment(api, config, model_dir)
    exp = wait_for_state(api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    assert exp["state"] == "COMPLETED", (exp, _logs(api, trial["id"]))
    wait_until(lambda: _free_slots(api), timeout=60, what="the slots to be free")
    return trial


def _hold_gpu_zero(cluster):
    """On each worker node, an actor of the test's own holding one GPU (Ray gives it
    id 0: the lowest free). Returns them and their node ids."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0, num_gpus=1)
    class Holder:
        def gpu_ids(self):
            return [str(i) for i in ray.get_gpu_ids()]

    nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("GPU")]
    holders = [Holder.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        n, soft=False)).remote() for n in nodes]
    held = ray.get([h.gpu_ids.remote() for h in holders], timeout=120)
    assert held == [["0"], ["0"]], held  # the master's first free slot is 0: it differs
    return holders


def test_trials_see_the_gpus_ray_gave_their_actors(gpu_cluster, tmp_path):
    import ray

    gpu_cluster.connect(namespace="test-gpu-holders")
    try:
        with _master(gpu_cluster, tmp_path) as api:
            holders = _hold_gpu_zero(gpu_cluster)
            # One slot: the master's scheduler picks slot 0 of the node; Ray gives GPU 1.
            log_dir = tmp_path / "one-slot-trial"
            log_dir.mkdir()
            trial = _run(api, place_trial_config(log_dir, 1, batches=2), DIST_DIR)
            (place,) = places(log_dir, 1)
            assert place["cuda_visible_devices"] == place["det_slot_ids"] == "1", place
            assert "det-ray: Ray gave GPU(s) 1 on node ray-" in _logs(api, trial["id"])
            markers = tmp_path / "one-slot-script"
            markers.mkdir()
            _run(api, dict(_config(markers, 2), resources={"slots_per_trial": 1}), CORE_DIR)
            info = json.loads((markers / "rank0.json").read_text())
            assert info["cuda_visible_devices"] == info["det_slot_ids"] == "1", info
            assert info["slot_ids"] == [1], info
            task = _new_task(api, "command", config={
                "entrypoint": "echo gpus=$CUDA_VISIBLE_DEVICES slots=$DET_SLOT_IDS",
                "resources": {"slots": 1}})
            assert _task_in(api, task, "TERMINATED")["exit_code"] == 0
            assert "gpus=1 slots=1" in _task_lines(api, task), _task_lines(api, task)
            for holder in holders:
                ray.kill(holder)

            # Spanning both nodes, split 2+1: each node's actors see their own GPUs.
            markers = tmp_path / "spanning-script"
            markers.mkdir()
            trial = _run(api, dict(_config(markers, 4), resources={"slots_per_trial": 3}),
                         CORE_DIR)
            ranks = [json.loads((markers / f"rank{r}.json").read_text()) for r in range(3)]
            check_script_two_and_one(ranks)
            for info in ranks:
                ids = info["cuda_visible_devices"]
                assert ids and info["det_slot_ids"] == ids, ranks
                assert info["slot_ids"] == [int(i) for i in ids.split(",")], ranks
            assert sorted(ranks[0]["slot_ids"]) == [0, 1], ranks
            logs = _logs(api, trial["id"])
            assert logs.count("det-ray: Ray gave GPU(s)") == 2, logs

            log_dir = tmp_path / "spanning-trial"
            log_dir.mkdir()
            _run(api, place_trial_config(log_dir, 3), DIST_DIR)
            found = places(log_dir, 3)
            check_trial_two_and_one(found, part_slots=False)
            for p in found:  # one actor, so one GPU, per rank
                assert p["det_slot_ids"] == p["cuda_visible_devices"] in ("0", "1"), found
            assert {found[0]["det_slot_ids"], found[1]["det_slot_ids"]} == {"0", "1"}, found
    finally:
        ray.shutdown()
