"""A Ray node's task directory is named after its actor's process (``det-ray-task-<task
id>-<pid>.<start>.<ns>-``): when that process is SIGKILLed (no ``finally`` runs), the
node's next actor removes what it left. A real one-node Ray cluster on this machine."""

import os
import pathlib
import shutil
import signal
import tempfile

import pytest

from determined.common import scratch
from determined.master.resource_managers._ray_actors import TaskRunner
from master_testing import free_ray_agent_ports, wait_until

pytestmark = pytest.mark.timeout(300)

MB = 1024 * 1024


def _named(pid):
    stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    start = int(stat[stat.rindex(")") + 2:].split()[19])
    return f"{pid}.{start:x}.{os.stat(f'/proc/{pid}/ns/pid').st_ino:x}"




@pytest.fixture
def ray_node(monkeypatch):
    """A one-node Ray cluster whose processes' temporary directory is a short one of
    this test's (Ray's sockets live in it too)."""
    import ray
    from ray.cluster_utils import Cluster

    root = pathlib.Path(tempfile.mkdtemp(prefix="drs", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(root))
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    cluster = Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=2, include_dashboard=False, object_store_memory=80 * MB,
        **free_ray_agent_ports()))
    try:
        cluster.connect(namespace="test-ray-actor-scratch")
        yield root
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(root, ignore_errors=True)


def test_killed_actors_task_directory_is_removed_by_the_next_actor(ray_node):
    import ray

    runner = ray.remote(num_cpus=0)(TaskRunner)
    first = runner.remote()
    command = {"task_id": "ab12cd34", "kind": "command", "token": "t",
               "master_url": "http://127.0.0.1:9", "config": {
                   "entrypoint": ["echo actor $PPID; exec sleep 120"]}}
    ray.get(first.start.remote(command, {}), timeout=120)
    lines = []
    wait_until(lambda: lines.extend(ray.get(first.read.remote(1.0))[0]) or lines,
               timeout=120, what="the task's first line")
    actor = int(lines[0].split()[1])  # the task process's parent
    (left,) = [p.name for p in ray_node.iterdir() if p.name.startswith("det-ray-task-")]
    assert left.startswith(f"det-ray-task-ab12cd34-{_named(actor)}-"), left

    os.kill(actor, signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{actor}"), timeout=60,
               what="the actor's process to be gone")
    assert (ray_node / left).is_dir()  # nothing ran to remove it
    second = runner.remote()
    ray.get(second.read.remote(0.0), timeout=120)  # constructed: it swept
    assert not (ray_node / left).exists()
    assert scratch.owned(actor) == []
