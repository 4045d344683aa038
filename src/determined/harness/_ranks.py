"""Starting a distributed trial's ranks: one process per slot, rank 0 (the chief)
talks to the host.

A trial with ``resources.slots_per_trial`` = N > 1 runs as N processes joined by a
:class:`~determined.harness._collective.Collective` (``torch.distributed``: NCCL
where the ranks have GPUs, gloo otherwise). Only the chief has a real
:class:`TrialHost`; the runner broadcasts each operation and each decision (stop,
checkpoint after a validation) so that every rank runs the same workloads.
Gradients and metrics are exchanged by the framework's controller.

Who starts the ranks:

* :func:`distributed_trial` -- the trial process started by a driver (the local
  driver's trial process, the master's ``_rest_host``) becomes rank 0 and starts
  ranks 1..N-1 on this machine (each runs ``_rank_main.worker_main``).
* A launcher that already started every rank (an agent, the Ray resource manager:
  one process per rank, on any node) sets ``DET_RANK``, ``DET_SIZE`` (and
  ``DET_LOCAL_RANK``, ``DET_LOCAL_SIZE``, ``DET_NUM_AGENTS``, ``DET_NODE_RANK``, ``MASTER_ADDR``,
  ``MASTER_PORT``) in each process's environment; :func:`distributed_trial` then
  starts nothing.

Failure: see :mod:`._collective`. The chief's exit code is the trial's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Dict, Iterator, Optional

from determined.common import scratch
from determined.config import is_script_entrypoint
from determined.trial_ops import EXIT_USER_ERROR
from determined.errors import InvalidTrialError
from determined.harness._collective import CollectiveError, dist_timeout
from determined.harness._env import DistributedInfo, TrialEnv
from determined.harness._group import disconnect
from determined.harness._host import TrialHost, TrialOp
from determined.harness._rank_logs import chief_log_format, ranks_named
from determined.harness._trial_setup import prepare_trial_process

__all__ = ["FollowerHost", "LocalRanks", "WORKER_MODULE", "distributed_trial",
           "info_from_environ", "with_info"]

logger = logging.getLogger("determined")

#: What a rank > 0 runs (``_rank_main.worker_main``).
WORKER_MODULE = "determined.harness._rank_main"


class FollowerHost(TrialHost):
    """The host of ranks other than 0: operations come from the chief (the runner
    broadcasts them), and results are reported by the chief only."""

    def next_operation(self) -> TrialOp:
        raise RuntimeError("ranks other than 0 receive their operations from the chief")

    def report_training(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        pass

    def report_validation(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        pass

    def report_checkpoint(self, batches_trained: int, uuid: str, metadata: Dict[str, Any]) -> None:
        pass

    def is_best_validation(self, value: float) -> bool:
        return False


def info_from_environ(environ: Optional[Dict[str, str]] = None) -> Optional[DistributedInfo]:
    """The rank given by a launcher in ``DET_RANK``/``DET_SIZE``/...; None if unset."""
    environ = dict(os.environ if environ is None else environ)
    if "DET_RANK" not in environ:
        return None

    def number(name: str, default: Optional[int] = None) -> int:
        raw = environ.get(name)
        if raw is None:
            if default is None:
                raise ValueError(f"Expected {name} in the environment with DET_RANK")
            return default
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"Expected an integer in {name}. Received: {raw!r}") from None

    rank, size = number("DET_RANK"), number("DET_SIZE")
    if not 0 <= rank < size:
        raise ValueError(f"Expected 0 <= DET_RANK < DET_SIZE. Received: DET_RANK={rank}, DET_SIZE={size}")
    return DistributedInfo(
        rank=rank,
        size=size,
        local_rank=number("DET_LOCAL_RANK", rank),
        local_size=number("DET_LOCAL_SIZE", size),
        num_agents=number("DET_NUM_AGENTS", 1),
        node_rank=number("DET_NODE_RANK", 0),
        master_addr=environ.get("MASTER_ADDR", "127.0.0.1"),
        master_port=number("MASTER_PORT"),
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalRanks:
    """Ranks 1..N-1 of a trial, started on this machine by its chief (rank 0).

    Args:
        env: the trial's environment (``slots_per_trial`` gives N).
        storage_config: the checkpoint_storage section (the ranks read checkpoints).
        threads: torch threads per rank.
    """

    def __init__(self, env: TrialEnv, storage_config: Dict[str, Any], threads: int = 1):
        size = env.slots_per_trial
        if size < 2:
            raise ValueError(f"Expected slots_per_trial >= 2 to start ranks. Received: {size}")
        self.chief_info = DistributedInfo(
            rank=0, size=size, local_rank=0, local_size=size, num_agents=1,
            master_addr="127.0.0.1", master_port=_free_port(),
        )
        self._dir = scratch.make("dist")
        spec_path = os.path.join(self._dir, "spec.json")
        with open(spec_path, "w", encoding="utf-8") as f:
            json.dump({"env": env.to_dict(), "storage": storage_config, "threads": threads,
                       "log": chief_log_format()}, f, default=str)
        self.processes: Dict[int, subprocess.Popen] = {}
        for rank in range(1, size):
            child_env = dict(os.environ)
            child_env.update({
                "DET_RANK": str(rank), "DET_SIZE": str(size), "DET_LOCAL_RANK": str(rank),
                "DET_LOCAL_SIZE": str(size), "DET_NUM_AGENTS": "1",
                "MASTER_ADDR": self.chief_info.master_addr,
                "MASTER_PORT": str(self.chief_info.master_port),
                "DET_DIST_SPEC": spec_path, "DET_PARENT_PID": str(os.getpid()),
                "OMP_NUM_THREADS": str(threads),
            })
            self.processes[rank] = subprocess.Popen(
                [sys.executable, "-m", WORKER_MODULE],
                env=child_env, cwd=env.model_dir, stdin=subprocess.DEVNULL,
            )
        self._watchdog = threading.Thread(target=self._watch, name="det-ranks-watchdog", daemon=True)
        self._done = threading.Event()
        self._watchdog.start()

    def failed(self) -> Dict[int, int]:
        """Ranks that exited with a non-zero code, and their codes."""
        return {r: p.returncode for r, p in self.processes.items()
                if p.poll() is not None and p.returncode != 0}

    def _watch(self) -> None:
        """A rank that died before the chief's first collective (or while the chief
        waits outside one) would leave the chief hanging: end the chief then."""
        grace = max(30.0, min(dist_timeout().total_seconds(), 120.0))
        first_seen: Optional[float] = None
        while not self._done.wait(0.5):
            if self.failed():
                first_seen = first_seen or time.monotonic()
                if time.monotonic() - first_seen > grace:
                    logger.error("rank(s) %s failed and the chief did not notice; exiting",
                                 self.failed())
                    self.kill()
                    os._exit(1)

    def wait(self, timeout: float) -> Dict[int, Optional[int]]:
        """Wait up to ``timeout`` seconds for every rank; their exit codes (None: running)."""
        deadline = time.monotonic() + timeout
        for p in self.processes.values():
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        return {r: p.poll() for r, p in self.processes.items()}

    def kill(self) -> None:
        """Kill every rank still running."""
        for p in self.processes.values():
            if p.poll() is None:
                try:
                    p.kill()
                except OSError:
                    pass
        for p in self.processes.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        self._done.set()
        shutil.rmtree(self._dir, ignore_errors=True)


@contextlib.contextmanager
def distributed_trial(
    env: TrialEnv, storage_config: Dict[str, Any], threads: int = 1
) -> Iterator[TrialEnv]:
    """Set up this trial process's place among the trial's processes.

    Yields the environment to run the trial with: unchanged for one slot; with
    this process's :class:`DistributedInfo` otherwise. Unless a launcher gave this
    process a rank (``DET_RANK``), it becomes the chief and starts the other ranks
    on this machine; on the way out it waits for them (or kills them on an error).

    Example:
        >>> with distributed_trial(env, storage_config, threads) as env:  # doctest: +SKIP
        ...     host = my_host if env.distributed.rank == 0 else FollowerHost()
        ...     TrialRunner(env, host, build_storage(storage_config)).run()
    """
    # What a trial's container gave it upstream: working dir, variables, hook, mounts.
    env = prepare_trial_process(env, storage_config)
    if is_script_entrypoint(env.experiment_config.get("entrypoint")):
        yield env  # a script starts its own ranks (e.g. determined.launch.torch_distributed)
        return
    given = info_from_environ()
    if given is not None:
        env = with_info(env, given)
    if env.distributed.size <= 1 and env.slots_per_trial <= 1:
        yield env
        return
    ranks: Optional[LocalRanks] = None
    if given is None:
        ranks = LocalRanks(env, storage_config, threads)
        env = with_info(env, ranks.chief_info)
    ok = False
    try:
        with ranks_named(env.distributed.rank):  # as the other ranks' lines do
            yield env
        ok = True
    except BaseException as e:
        if ranks is not None:
            failed = ranks.wait(3.0)
            bad = {r: c for r, c in failed.items() if c not in (None, 0)}
            if bad:
                logger.error("trial ranks exited with codes %s (see their output above)", bad)
            ranks.kill()
            user_failed = sorted(r for r, c in bad.items() if c == EXIT_USER_ERROR)
            if isinstance(e, CollectiveError) and user_failed:
                # The chief only saw its peers go; their user code is to blame (no restart).
                raise InvalidTrialError(
                    f"rank(s) {user_failed} of the trial failed in user code (see the trial's log)"
                ) from None
        raise
    finally:
        if ranks is not None:
            if ok:  # they are past their last collective; rank 0 hosts the rendezvous store
                codes = ranks.wait(60.0)
                bad = {r: c for r, c in codes.items() if c != 0}
                if bad:
                    logger.warning("trial ranks did not exit cleanly: %s", bad)
            ranks.kill()
            ranks.close()
        disconnect()


def with_info(env: TrialEnv, info: DistributedInfo) -> TrialEnv:
    """``env`` as the rank ``info`` describes."""
    return dataclasses.replace(env, distributed=info)
