"""``core.DistributedContext`` and a multi-rank ``core.Context`` with real processes."""

import multiprocessing
import os
import socket
import traceback

import pytest

from determined import core
from determined.config import Length, Unit
from determined.core._context import context_for
from determined.core._hub import CollectiveError
from determined.core._session import Session
from determined.harness._env import TrialEnv
from determined.harness._inprocess import InProcessHost, train_validate_plan
from determined.storage import SharedFSStorageManager

pytestmark = pytest.mark.timeout(300)

# Ranks 0 and 1 on machine 0, rank 2 alone on machine 1.
LAYOUT = {0: (0, 2, 0), 1: (1, 2, 0), 2: (0, 1, 1)}  # rank -> local_rank, local_size, machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_ranks(target, size, *args):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_guard, args=(target, rank, queue, *args)) for rank in range(size)]
    for p in procs:
        p.start()
    results = {}
    for _ in procs:
        rank, ok, value = queue.get(timeout=240)
        assert ok, f"rank {rank} failed:\n{value}"
        results[rank] = value
    for p in procs:
        p.join(30)
    return results


def _guard(target, rank, queue, *args):
    try:
        queue.put((rank, True, target(rank, *args)))
    except BaseException:  # noqa: BLE001 - reported to the test
        queue.put((rank, False, traceback.format_exc()))


def _collectives(rank, port):
    local_rank, local_size, machine = LAYOUT[rank]
    dist = core.DistributedContext(rank=rank, size=3, local_rank=local_rank,
                                   local_size=local_size, cross_rank=machine, cross_size=2,
                                   chief_ip="127.0.0.1", pub_port=port)
    out = {
        "allgather": dist.allgather({"rank": rank}),
        "gather": dist.gather(rank * 2),
        "broadcast": dist.broadcast(["chief's"] if rank == 0 else None),
        "allgather_local": dist.allgather_local(rank),
        "gather_local": dist.gather_local(rank),
        "broadcast_local": dist.broadcast_local(f"from {rank}"),
        "sizes": (dist.get_rank(), dist.get_size(), dist.get_local_rank(), dist.get_num_agents()),
    }
    dist.close()
    return out


def test_collectives_across_three_processes_on_two_machines():
    results = _run_ranks(_collectives, 3, _free_port())
    for rank, out in results.items():
        assert out["allgather"] == [{"rank": 0}, {"rank": 1}, {"rank": 2}]
        assert out["broadcast"] == ["chief's"]
        assert out["sizes"][:2] == (rank, 3) and out["sizes"][3] == 2
    assert results[0]["gather"] == [0, 2, 4]
    assert results[1]["gather"] is None and results[2]["gather"] is None
    # Machine 0's local group is ranks 0 and 1; rank 2 is alone on machine 1.
    assert results[0]["allgather_local"] == results[1]["allgather_local"] == [0, 1]
    assert results[2]["allgather_local"] == [2]
    assert results[0]["gather_local"] == [0, 1] and results[1]["gather_local"] is None
    assert results[1]["broadcast_local"] == "from 0"
    assert results[2]["broadcast_local"] == "from 2"


def _dies_after_joining(rank, port):
    dist = core.DistributedContext(rank=rank, size=2, local_rank=rank, local_size=2,
                                   cross_rank=0, cross_size=1, pub_port=port)
    if rank == 1:
        os._exit(3)  # gone without a word
    try:
        dist.allgather("x")
    except CollectiveError as e:
        return str(e)
    return "no error"


def test_a_dead_rank_is_an_error_not_a_hang():
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_guard, args=(_dies_after_joining, r, queue, port))
             for r in range(2)]
    for p in procs:
        p.start()
    rank, ok, message = queue.get(timeout=240)
    assert (rank, ok) == (0, True)
    assert "process 1 of the group is gone" in message
    for p in procs:
        p.join(30)


def test_bad_ranks_are_refused():
    with pytest.raises(ValueError, match="rank < size"):
        core.DistributedContext(rank=2, size=2, local_rank=0, local_size=2, cross_rank=0,
                                cross_size=1)
    with pytest.raises(ValueError, match="chief_ip"):
        core.DistributedContext(rank=0, size=4, local_rank=0, local_size=2, cross_rank=0,
                                cross_size=2)
    with pytest.raises(ValueError, match="RANK"):
        os.environ.pop("RANK", None)
        core.DistributedContext.from_torch_distributed()


CONFIG = {"entrypoint": "python3 train.py",
          "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 4}}}


def _platform_rank(rank, port, tmp):
    """A two-rank trial: the chief has the host, rank 1 follows."""
    dist = core.DistributedContext(rank=rank, size=2, local_rank=rank, local_size=2,
                                   cross_rank=0, cross_size=1, pub_port=port)
    host = None
    if rank == 0:
        host = InProcessHost(train_validate_plan([Length(Unit.BATCHES, 2),
                                                  Length(Unit.BATCHES, 4)]),
                             stop_after_workloads=6)
    env = TrialEnv(experiment_config=CONFIG, hparams={}, model_dir=tmp, experiment_id=1,
                   trial_id=2)
    session = Session(host=host, storage=SharedFSStorageManager(os.path.join(tmp, "ckpt")),
                      env=env)
    lengths, preempted, ids = [], [], []
    with context_for(session, dist) as ctx:
        for op in ctx.searcher.operations():
            lengths.append(op.length)
            ctx.train.report_training_metrics(op.length, {"loss": float(rank)})
            with ctx.checkpoint.store_path({"steps_completed": op.length, f"r{rank}": rank},
                                           shard=True) as (path, sid):
                (path / f"shard{rank}.bin").write_bytes(bytes([rank]))
                ids.append(sid)
            with ctx.checkpoint.restore_path(sid) as path:
                files = sorted(os.listdir(path))
            if rank == 0:
                op.report_completed(0.5)
            preempted.append(ctx.preempt.should_preempt())
    records = None
    if host is not None:
        records = {"training": host.training, "checkpoints": host.checkpoints,
                   "searcher": host.searcher_validations}
    return {"lengths": lengths, "preempted": preempted, "ids": ids, "files": files,
            "records": records}


def test_ranks_follow_the_chiefs_host(tmp_path):
    results = _run_ranks(_platform_rank, 2, _free_port(), str(tmp_path))
    chief, worker = results[0], results[1]
    assert chief["lengths"] == worker["lengths"] == [2, 4]
    assert chief["ids"] == worker["ids"]
    assert chief["files"] == worker["files"] == ["metadata.json", "shard0.bin", "shard1.bin"]
    # The host saw the chief's reports only; six workloads make it ask for a stop,
    # and both ranks hear it.
    assert [(s, m["avg_metrics"]) for s, m in chief["records"]["training"]] == [
        (2, {"loss": 0.0}), (4, {"loss": 0.0})]
    assert chief["preempted"] == worker["preempted"] == [False, True]
    ckpts = chief["records"]["checkpoints"]
    assert [s for s, _, _ in ckpts] == [2, 4]
    assert ckpts[0][2]["r0"] == 0 and ckpts[0][2]["r1"] == 1
    assert [s for s, _ in chief["records"]["searcher"]] == [2, 4]


def test_merge_metadata_merges_dicts_and_names_conflicts():
    merged, conflicts = core.merge_metadata([
        {"steps_completed": 3, "opt": {"lr": 0.1}, "a": 1},
        {"steps_completed": 3, "opt": {"momentum": 0.9}, "a": 2}])
    assert merged == {"steps_completed": 3, "opt": {"lr": 0.1, "momentum": 0.9}, "a": 1}
    assert conflicts == {"/a": [0, 1]}


EXIT_SCRIPT = """
import atexit, os, socket
import torch.distributed as dist
from determined import core

# Registered first, so it runs last: after from_torch_distributed()'s exit hook.
atexit.register(lambda: print("initialized at exit:", dist.is_initialized(), flush=True))
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
                  GROUP_RANK="0", GROUP_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                  MASTER_PORT=str(port))
distributed = core.DistributedContext.from_torch_distributed()
dist.init_process_group("gloo")
distributed.close()
"""


def test_a_torch_group_the_script_leaves_is_destroyed_at_exit(tmp_path):
    """gloo's threads must not outlive the interpreter: a rank leaving its group aborted
    at exit now and then (code 134) after its training had succeeded."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True,
                         timeout=240, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "initialized at exit: False" in out.stdout, out.stdout + out.stderr
