"""Distributed trials: one process per slot, rank 0 (the chief) talks to the host.

A trial with ``resources.slots_per_trial`` = N > 1 runs as N processes joined by
``torch.distributed`` (NCCL where the ranks have GPUs, gloo otherwise). Only the
chief has a real :class:`TrialHost`; it broadcasts each operation and each
decision (stop, checkpoint after a validation) so that every rank runs the same
workloads. Gradients and metrics
are exchanged by the framework's controller (``determined.pytorch``).

Who starts the ranks:

* :func:`distributed_trial` -- the trial process started by a driver (the local
  driver's trial process, the master's ``_rest_host``) becomes rank 0 and starts
  ranks 1..N-1 on this machine (each runs :func:`worker_main`).
* A launcher that already started every rank (the Ray resource manager: one
  actor per rank, on any node) sets ``DET_RANK``, ``DET_SIZE``
  (and ``DET_LOCAL_RANK``, ``DET_LOCAL_SIZE``, ``DET_NUM_AGENTS``, ``MASTER_ADDR``,
  ``MASTER_PORT``) in each process's environment; :func:`distributed_trial` then
  starts nothing.

Failure: a rank that dies closes its sockets, so the others' next collective
raises at once; a rank that hangs makes them time out after
``DET_DIST_TIMEOUT`` seconds (default 600). The chief's exit code is the trial's.

This module imports no framework at import time (``torch`` only inside
:class:`Collective` and :func:`_backend`).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Dict, Iterator, List, Optional

from determined.config import is_script_entrypoint
from determined.errors import DeterminedError
from determined.harness._env import DistributedInfo, TrialEnv
from determined.common.trial_ops import EXIT_USER_ERROR
from determined.harness._host import TrialHost, TrialOp

__all__ = [
    "Collective",
    "CollectiveError",
    "FollowerHost",
    "LocalRanks",
    "connect",
    "disconnect",
    "distributed_trial",
    "info_from_environ",
    "worker_main",
]

logger = logging.getLogger("determined")

_WORKER_COMMAND = (
    "import sys; from determined.harness._distributed import worker_main; sys.exit(worker_main())"
)
_CONTROL_TIMEOUT = datetime.timedelta(days=7)  # ranks wait on the chief's host for ops


class CollectiveError(DeterminedError):
    """An exchange between a trial's ranks failed: another rank died or hung. Not the
    user's code's fault, so the platform restarts the trial (``max_restarts``)."""

    @classmethod
    def wrap(cls, what: str, exc: BaseException) -> "CollectiveError":
        return cls(f"{what} across the trial's ranks failed (another rank died or hung): {exc}")


def _timeout() -> datetime.timedelta:
    raw = os.environ.get("DET_DIST_TIMEOUT", "600")
    try:
        seconds = float(raw)
    except ValueError:
        raise ValueError(
            f"Expected DET_DIST_TIMEOUT to be a number of seconds. Received: {raw!r}"
        ) from None
    return datetime.timedelta(seconds=seconds)


class Collective:
    """The collectives the trial runner and controllers use across ranks.

    ``broadcast`` and ``allgather`` carry the chief's decisions on a group whose
    timeout is long (the chief may wait long for its next operation); ``gather``
    moves metrics on the default group, which times out after ``DET_DIST_TIMEOUT``.
    """

    def __init__(self, info: DistributedInfo):
        import torch.distributed as dist

        self.info = info
        self.rank, self.size = info.rank, info.size
        self._dist = dist
        self.backend = _backend()
        try:
            if not dist.is_initialized():
                if self.backend == "nccl":
                    import torch

                    torch.cuda.set_device(info.local_rank % torch.cuda.device_count())
                dist.init_process_group(
                    self.backend,
                    init_method=f"tcp://{info.master_addr}:{info.master_port}",
                    rank=info.rank,
                    world_size=info.size,
                    timeout=_timeout(),
                )
            self._control = dist.new_group(backend="gloo", timeout=_CONTROL_TIMEOUT)
            # Python objects (metrics) travel over gloo whatever moves the gradients.
            self._objects = (dist.new_group(backend="gloo", timeout=_timeout())
                             if self.backend != "gloo" else None)
        except RuntimeError as e:
            raise CollectiveError.wrap(
                f"joining (rank {info.rank} of {info.size}, rendezvous at "
                f"{info.master_addr}:{info.master_port})", e) from None

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    def broadcast(self, obj: Any) -> Any:
        """The chief's ``obj`` on every rank (others pass anything, e.g. None)."""
        box = [obj]
        try:
            self._dist.broadcast_object_list(box, src=0, group=self._control)
        except RuntimeError as e:
            raise CollectiveError.wrap("a broadcast from the chief", e) from None
        return box[0]

    def allgather(self, obj: Any) -> List[Any]:
        """Every rank's ``obj``, by rank, on every rank."""
        out: List[Any] = [None] * self.size
        try:
            self._dist.all_gather_object(out, obj, group=self._control)
        except RuntimeError as e:
            raise CollectiveError.wrap("an all-gather", e) from None
        return out

    def gather(self, obj: Any) -> Optional[List[Any]]:
        """Every rank's ``obj``, by rank, on the chief; None elsewhere."""
        out: Optional[List[Any]] = [None] * self.size if self.is_chief else None
        try:
            self._dist.gather_object(obj, out, dst=0, group=self._objects)
        except RuntimeError as e:
            raise CollectiveError.wrap("gathering metrics", e) from None
        return out

    def close(self) -> None:
        """Leave the group (after the last collective every rank ran)."""
        if self._dist.is_initialized():
            self._dist.destroy_process_group()


def _backend() -> str:
    """``nccl`` where this rank has a GPU (gradients stay on it), else ``gloo``;
    ``DET_DIST_BACKEND`` overrides."""
    import torch
    import torch.distributed as dist

    forced = os.environ.get("DET_DIST_BACKEND")
    if forced:
        if forced not in ("gloo", "nccl"):
            raise ValueError(f"Expected DET_DIST_BACKEND gloo or nccl. Received: {forced!r}")
        return forced
    if torch.cuda.is_available() and dist.is_nccl_available():
        return "nccl"
    return "gloo"


_current: Optional[Collective] = None


def connect(info: DistributedInfo) -> Optional[Collective]:
    """This process's :class:`Collective` (joined once per process); None for one slot."""
    global _current
    if info.size <= 1:
        return None
    if _current is None:
        try:
            import torch.distributed  # noqa: F401
        except ImportError:
            raise RuntimeError(
                "distributed training (resources.slots_per_trial > 1) needs PyTorch"
            ) from None
        _current = Collective(info)
    return _current


def disconnect() -> None:
    """Leave the group joined by :func:`connect`, if any."""
    global _current
    if _current is not None:
        current, _current = _current, None
        try:
            current.close()
        except Exception as e:  # the trial's outcome is already decided
            logger.warning("leaving the distributed group failed: %s", e)


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


# ---------------------------------------------------------------------- launching


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
        self._dir = tempfile.mkdtemp(prefix="det-dist-")
        spec_path = os.path.join(self._dir, "spec.json")
        with open(spec_path, "w", encoding="utf-8") as f:
            json.dump({"env": env.to_dict(), "storage": storage_config, "threads": threads}, f,
                      default=str)
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
                [sys.executable, "-c", _WORKER_COMMAND],
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
        grace = max(30.0, min(_timeout().total_seconds(), 120.0))
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
    from determined.harness._trial_setup import prepare_trial_process

    # What a trial's container gave it upstream: working dir, variables, hook, mounts.
    env = prepare_trial_process(env, storage_config)
    if is_script_entrypoint(env.experiment_config.get("entrypoint")):
        yield env  # a script starts its own ranks (e.g. determined.launch.torch_distributed)
        return
    given = info_from_environ()
    if given is not None:
        env = _with_info(env, given)
    if env.distributed.size <= 1 and env.slots_per_trial <= 1:
        yield env
        return
    ranks: Optional[LocalRanks] = None
    if given is None:
        ranks = LocalRanks(env, storage_config, threads)
        env = _with_info(env, ranks.chief_info)
    ok = False
    try:
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
                from determined.errors import InvalidTrialError

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


def _with_info(env: TrialEnv, info: DistributedInfo) -> TrialEnv:
    import dataclasses

    return dataclasses.replace(env, distributed=info)


# ---------------------------------------------------------------------- worker ranks


def _die_with_parent() -> None:
    parent = os.environ.get("DET_PARENT_PID")
    if not parent:
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != int(parent):  # the chief died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != int(parent):
                os._exit(1)

    threading.Thread(target=watch, name="det-parent-watch", daemon=True).start()


def worker_main() -> int:
    """Rank r > 0 started by :class:`LocalRanks`: run the trial with no host of its own."""
    _die_with_parent()
    info = info_from_environ()
    if info is None:
        print("determined.harness._distributed: DET_RANK is not set", file=sys.stderr)
        return 2
    with open(os.environ["DET_DIST_SPEC"], encoding="utf-8") as f:
        spec = json.load(f)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s [rank {info.rank}] %(levelname)s %(message)s")
    threads = int(spec.get("threads", 1))
    from determined.errors import InvalidModelDefError, InvalidTrialError
    from determined.harness._runner import TrialRunner
    from determined.storage import build_storage

    env = _with_info(TrialEnv.from_dict(spec["env"]), info)
    if is_script_entrypoint(env.experiment_config.get("entrypoint")):
        print(f"rank {info.rank}: a script trial runs on its chief only (the script starts "
              "its own ranks); nothing to do here", flush=True)
        return 0
    os.chdir(env.model_dir)
    from determined.harness._trial_setup import prepare_trial_process

    # Started by a launcher (an agent, a Ray actor): this rank's own working directory,
    # variables, hook and mounts, as rank 0's. Ranks the chief started inherit its.
    env = prepare_trial_process(env, spec["storage"])
    sys.path.insert(0, env.model_dir)
    try:
        import torch

        torch.set_num_threads(threads)
        from determined.experimental._native_trial import native_trial_class

        runner = TrialRunner(env, FollowerHost(), build_storage(spec["storage"]),
                             trial_class=native_trial_class(env))
        runner.run()
        return 0
    except (InvalidTrialError, InvalidModelDefError) as e:
        print(f"rank {info.rank}: {e}", flush=True)
        return EXIT_USER_ERROR
    except Exception:
        print(f"rank {info.rank} failed:", flush=True)
        traceback.print_exc()
        return 1
    finally:
        disconnect()
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(worker_main())
