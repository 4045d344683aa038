"""The embedded agent: trial processes started on the master's own machine.

Each trial runs ``determined.harness._rest_host`` in a new session (its own
process group), so killing a trial kills everything it started. Its stdout and
stderr go to the log store in batches (:func:`determined._procs.follow_spawned`),
all of them before its exit is reported; once it exited, what it left in its group is
killed (a child holding its output open does not hold up its exit).

Trial processes are forked from a zygote that has already imported the platform
and PyTorch (if installed), see :class:`determined._procs.Spawner`: starting one
takes milliseconds instead of an interpreter start and a framework import, and
each still runs exactly one trial in a fresh process.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

from determined._procs import ExitCodes, Spawner, follow_spawned
from determined._procs._gpu_metrics import DEFAULT_INTERVAL, GpuSampler, samples_by_owner
from determined._procs._gpus import Gpu, gpu_inventory, shared_gpu_note, slot_gpus, trial_gpu_env
from determined.master import scheduler
from determined.master.resource_managers._base import ExitCallback, LogSink, Part, TrialLaunch

__all__ = ["EmbeddedResourceManager", "AGENT_ID"]

AGENT_ID = "embedded"

logger = logging.getLogger("determined.master")

#: (trial_id, GPU readings: see determined._procs._gpu_metrics)
GpuSink = Callable[[int, List[Dict[str, Any]]], None]


class EmbeddedResourceManager:
    """One agent with ``slots`` slots on this machine (a
    :class:`~determined.master.resource_managers._base.ResourceManager`).

    Args:
        slots: how many slots the agent offers.
        on_exit: called (from a reader thread) with ``(trial_id, exit_code)`` once a
            trial process has exited and its output has been shipped.
        log_sink: stores a trial's log lines.
        slots_per_gpu: slots per GPU of this machine (several trials share a GPU).
        gpu_memory_fraction: each slot's cap on its GPU's memory (see
            :func:`~determined._procs._gpus.trial_gpu_env`).
        gpu_sink: stores readings of a trial's GPUs, taken every ``gpu_metrics_interval``
            seconds while it runs.
        gpus: this machine's GPUs (default: :func:`gpu_inventory`).
    """

    def __init__(self, slots: int, on_exit: ExitCallback, log_sink: LogSink,
                 slots_per_gpu: int = 1, gpu_memory_fraction: Optional[float] = None,
                 gpu_sink: Optional[GpuSink] = None,
                 gpu_metrics_interval: float = DEFAULT_INTERVAL,
                 gpus: Optional[Sequence[Gpu]] = None):
        if slots < 1:
            raise ValueError(f"Expected slots >= 1. Received: slots={slots}")
        self.slots = slots
        by_slot = slot_gpus(gpu_inventory() if gpus is None else gpus, slots_per_gpu)
        # Slots are GPUs when there are enough GPU slots (the default), else CPUs.
        self.gpus: List[Gpu] = by_slot[:slots] if len(by_slot) >= slots else []
        if by_slot and not self.gpus:
            logger.warning("resource_manager.slots %d exceeds the %d GPU slots here (%d GPU(s) "
                           "x slots_per_gpu %d): the embedded agent offers CPU slots",
                           slots, len(by_slot), len(by_slot) // slots_per_gpu, slots_per_gpu)
        self.slots_per_gpu = slots_per_gpu
        self._memory_fraction = gpu_memory_fraction
        self._gpu_sink = gpu_sink
        self._trial_gpus: Dict[int, List[str]] = {}  # running trial id -> its GPUs
        self._on_exit = on_exit
        self._log_sink = log_sink
        self._procs: Dict[int, int] = {}  # trial id -> pid
        self._exits = ExitCodes()
        self._lock = threading.Lock()
        self._closed = False
        self._spawner = Spawner(self._exits.report)
        # Import the frameworks in the zygote now, not when the first trial starts.
        threading.Thread(target=self._warm_up, name="det-zygote-start", daemon=True).start()
        self._sampler = GpuSampler(gpu_metrics_interval, self._busy_gpus, self._file_samples)
        if self.gpus and gpu_sink is not None:
            self._sampler.start()

    def _warm_up(self) -> None:
        try:
            self._spawner.start()
        except Exception as e:  # the first launch retries and reports
            logger.warning("could not start the trial zygote: %s", e)

    def agents(self) -> List[scheduler.Agent]:
        return [scheduler.Agent(AGENT_ID, self.slots)]

    def has_agent(self, agent_id: str) -> bool:
        return agent_id == AGENT_ID

    def can_span(self, parts: Sequence[Part]) -> bool:
        """No: the embedded agent starts all of a trial's ranks itself."""
        return len(parts) == 1 and self.has_agent(parts[0][0])

    def launch(self, launch: TrialLaunch) -> int:
        """Start the trial's process (rank 0: it starts the other ranks); returns its pid."""
        if not self.can_span(launch.parts):
            raise RuntimeError(f"the embedded agent runs trials on its own slots only. "
                               f"Received: parts={list(launch.parts)}")
        return self._start(launch.trial_id, launch.env, launch.slot_ids, launch.model_dir)

    def _start(self, trial_id: int, env: Dict[str, str], slot_ids: Sequence[int],
               cwd: str) -> int:
        assignment = dict(env)
        assignment["DET_SLOT_IDS"] = ",".join(str(s) for s in slot_ids)
        gpu_env = trial_gpu_env(self.gpus, slot_ids, self.slots_per_gpu,
                                self._memory_fraction)
        assignment.update(gpu_env)
        note = shared_gpu_note(gpu_env)
        if note is not None:
            self._store_lines(trial_id, [f"det-master: {note}"])
        pid, out_fd = self._spawner.spawn(assignment, cwd)
        with self._lock:
            self._procs[trial_id] = pid
            if gpu_env:
                self._trial_gpus[trial_id] = gpu_env["CUDA_VISIBLE_DEVICES"].split(",")
        threading.Thread(target=self._read, args=(trial_id, pid, out_fd),
                         name=f"det-trial-{trial_id}", daemon=True).start()
        return pid

    def _busy_gpus(self) -> List[str]:
        with self._lock:
            return sorted({g for gpus in self._trial_gpus.values() for g in gpus})

    def _file_samples(self, samples: List[Dict[str, Any]]) -> None:
        with self._lock:
            owners = dict(self._trial_gpus)
        assert self._gpu_sink is not None
        for trial_id, mine in samples_by_owner(samples, owners).items():
            self._gpu_sink(trial_id, mine)

    def kill(self, trial_id: int) -> None:
        """SIGKILL the trial's whole process group (no-op if it is gone)."""
        with self._lock:
            pid = self._procs.get(trial_id)
        if pid is None:
            return
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def holds(self, trial_id: int) -> bool:
        with self._lock:
            return trial_id in self._procs

    def pid(self, trial_id: int) -> Optional[int]:
        with self._lock:
            return self._procs.get(trial_id)

    # Tasks on the embedded agent are the task manager's own processes.

    def runs_tasks(self, agent_id: str) -> bool:
        return False

    def launch_task(self, agent_id: str, task_id: str, command: Dict[str, Any]) -> str:
        raise RuntimeError("the master's task manager starts the embedded agent's tasks itself")

    def holds_task(self, task_id: str) -> bool:
        return False

    def kill_task(self, task_id: str) -> None:
        pass

    def close(self) -> None:
        """Kill every trial process."""
        self._closed = True  # exits from now on are the master's own doing
        with self._lock:
            ids = list(self._procs)
        for trial_id in ids:
            self.kill(trial_id)
        self._sampler.stop()
        self._spawner.close()

    # -- threads ------------------------------------------------------------------------

    def _read(self, trial_id: int, pid: int, out_fd: int) -> None:
        code = follow_spawned(pid, out_fd, self._exits,
                              lambda lines: self._store_lines(trial_id, lines), max_age=0.1)
        with self._lock:  # its lines are stored: the exit may be handled
            self._procs.pop(trial_id, None)
            self._trial_gpus.pop(trial_id, None)
        if not self._closed:
            self._on_exit(trial_id, code)

    def _store_lines(self, trial_id: int, lines: List[str]) -> None:
        try:
            self._log_sink(trial_id, lines)
        except Exception as e:  # a log write must never stop the reader
            logger.warning("could not store logs of trial %s: %s", trial_id, e)
