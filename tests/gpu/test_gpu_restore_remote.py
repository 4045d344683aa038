"""Restore anywhere on a remote agent, on a GPU: after a crash, a pause and activate,
and a master restart (the agent reconnects), the random streams and weights match an
uninterrupted run's (made on the embedded agent, in this file's own reference run). See
test_gpu_restore.py; CPU variant ``cpu_twin``."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "agent"))

from agent_testing import AgentCluster  # noqa: E402
from master_testing import create_experiment, wait_until  # noqa: E402
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
