"""The node-side half of the Ray resource manager: the actors that run on a Ray
node (imported there by Ray, never run in the master). :class:`TrialRank` runs one
rank's process and posts its output to the master; :class:`TaskRunner` runs a task's
process. Both processes die with their actor (``PR_SET_PDEATHSIG``).

GPUs: Ray picks an actor's GPUs (``num_gpus``), not the master's scheduler, whose
slot numbers may differ. The process sees exactly Ray's (:func:`ray_gpu_env`):
``CUDA_VISIBLE_DEVICES`` and ``DET_SLOT_IDS`` (``det.get_cluster_info().slot_ids``)
both name the node's GPU ids Ray gave the actor, as on an agent where both name the
machine's GPUs of the trial's slots."""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple

from determined._procs import kill_leftovers, read_line_batches, set_parent_death_signal
from determined.agent._parts import interface_env
from determined.common import scratch
from determined.common.api import MasterClient, unpack_context
from determined.launch._machines import chief_port
from determined.tasks._launch import TaskProcess, task_from_command

__all__ = ["TrialRank", "TaskRunner", "ray_gpu_env"]


def ray_gpu_env() -> Dict[str, str]:
    """The GPUs Ray gave this actor as its process's ``CUDA_VISIBLE_DEVICES`` and
    ``DET_SLOT_IDS`` ({} for an actor without GPUs)."""
    import ray

    ids = ",".join(str(i) for i in ray.get_gpu_ids())
    return {"CUDA_VISIBLE_DEVICES": ids, "DET_SLOT_IDS": ids} if ids else {}


class TrialRank:
    """One rank of a trial, as a Ray actor on its node (see the module docstring)."""

    def __init__(self) -> None:
        self.proc: Any = None
        self.workdir: Optional[str] = None
        scratch.sweep_dead_owners()  # left by trial processes killed with their actors

    def rendezvous(self, script: bool) -> Tuple[str, int]:
        """This node's address and a free port on it, where rank 0 listens (for a
        script: torchrun's port of a free per-trial offset)."""
        import ray

        return ray.util.get_node_ip_address(), chief_port(script)

    def run(self, env: Dict[str, str], spec: Dict[str, Any], experiment_id: int, rank: int,
            threads: int, module: Optional[str], prefix: str) -> Tuple[int, List[str]]:
        """Run the process to its end (``module``, or the trial runner), posting its
        output to the master (each line after ``prefix``); return its exit code and the
        output lines the master refused (posted too late)."""
        import ray

        client = MasterClient(env["DET_MASTER"], token=env["DET_TRIAL_TOKEN"])
        # Named after this actor's process: a node's next actor removes it if the
        # process is killed (no finally runs).
        self.workdir = scratch.make(f"ray-trial-{rank}", own=True)
        try:
            model_dir = os.path.join(self.workdir, "model_def")
            answer = client.request("GET", f"/experiments/{experiment_id}/model_def")
            unpack_context(base64.b64decode(answer["b64_tgz"]), model_dir)
            spec = dict(spec, threads=threads, env=dict(spec["env"], model_dir=model_dir))
            spec_path = os.path.join(self.workdir, "spec.json")
            with open(spec_path, "w", encoding="utf-8") as f:
                json.dump(spec, f, default=str)
            child_env = dict(os.environ, **env)
            # Collective libraries reach the other nodes from this node's address.
            child_env.update(interface_env(ray.util.get_node_ip_address(), child_env))
            gpus = ray_gpu_env()
            child_env.update(gpus)
            child_env.update({"DET_TRIAL_SPEC": spec_path, "DET_DIST_SPEC": spec_path,
                              "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"})
            child_env.pop("DET_PARENT_PID", None)
            # It owns the scratch directories of its tree (removed below once it exited).
            cmd = [sys.executable, "-m", "determined.common.scratch",
                   module or "determined.harness._rest_host"]
            self.proc = subprocess.Popen(cmd, env=child_env, cwd=model_dir,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         preexec_fn=set_parent_death_signal)
            unsent: List[str] = []
            if gpus:
                to_rank = f" (rank {rank})" if rank and not prefix else ""
                _post_logs(client, [f"{prefix}det-ray: Ray gave GPU(s) "
                                    f"{gpus['CUDA_VISIBLE_DEVICES']} on node "
                                    f"{env.get('DET_AGENT_ID')}{to_rank}"])

            def post(batch: List[str]) -> None:
                nonlocal unsent
                if not _post_logs(client, batch):
                    unsent = (unsent + batch)[-1000:]

            assert self.proc.stdout is not None
            proc = self.proc
            read_line_batches(proc.stdout.fileno(), post, max_age=0.5,
                              prefix=prefix,
                              exited=lambda: proc.poll() is not None)
            code = proc.wait()
            kill_leftovers(proc.pid)
            scratch.remove_owned(proc.pid)  # left by a process that was killed
            return code, unsent
        finally:
            client.close()
            shutil.rmtree(self.workdir, ignore_errors=True)


class TaskRunner:
    """A task's process on its Ray node, as an actor (see
    :meth:`RayResourceManager.launch_task`): :meth:`start` it, :meth:`read` its output
    and exit, :meth:`stop` it. The process dies with the actor (``PR_SET_PDEATHSIG``
    on the thread reading it)."""

    def __init__(self) -> None:
        self._lines: "queue.Queue[str]" = queue.Queue()
        self._done = threading.Event()
        self._code: Optional[int] = None
        self._process: Any = None
        self._stopped = False
        self._lock = threading.Lock()
        scratch.sweep_dead_owners()  # left by actors (and their processes) killed before

    def start(self, command: Dict[str, Any], env_vars: Dict[str, str]
              ) -> Tuple[str, Optional[int]]:
        """Prepare the task's directory and start its process; returns the node's
        address and the port its service (if any) listens on."""
        import ray

        host = ray.util.get_node_ip_address()
        env_vars = dict(env_vars, **ray_gpu_env())
        task_dir = scratch.make(f"ray-task-{command['task_id']}", own=True)  # as TrialRank's
        started: "queue.Queue[Any]" = queue.Queue()
        threading.Thread(target=self._run, name="det-task-process", daemon=True,
                         args=(command, task_dir, host, env_vars, started)).start()
        answer = started.get()
        if isinstance(answer, BaseException):
            raise answer
        return host, answer

    def _run(self, command: Dict[str, Any], task_dir: str, host: str,
             env_vars: Dict[str, str], started: "queue.Queue[Any]") -> None:
        try:
            argv, env, work, port = task_from_command(command, task_dir, host,
                                                      str(command["master_url"]), env_vars)
            with self._lock:
                self._process = TaskProcess(argv, env, work)
                stopped = self._stopped
            if stopped:
                self._process.stop()
        except Exception as e:
            shutil.rmtree(task_dir, ignore_errors=True)
            started.put(e)
            return
        started.put(port)
        try:
            self._code = self._process.pump(self._queue_lines)
        finally:
            shutil.rmtree(task_dir, ignore_errors=True)
            self._done.set()

    def _queue_lines(self, lines: List[str]) -> None:
        for line in lines:
            self._lines.put(line)

    def read(self, wait: float) -> Tuple[List[str], Optional[int], bool]:
        """Output lines since the last call (waiting up to ``wait`` seconds for some or
        for the end), the exit code (once ended) and whether it ended."""
        if self._lines.empty():
            self._done.wait(wait)
        done = self._done.is_set()  # every line is queued before this is set
        lines: List[str] = []
        while True:
            try:
                lines.append(self._lines.get_nowait())
            except queue.Empty:
                break
        return lines, self._code if done else None, done

    def stop(self) -> None:
        """SIGTERM the task's process group, SIGKILL a few seconds later."""
        with self._lock:
            self._stopped = True
            process = self._process
        if process is not None:
            process.stop()


def _post_logs(client: Any, lines: List[str]) -> bool:
    """Store lines through the REST API; False when the master refused them (the
    trial's token is revoked once the trial ended: the master stores the rest)."""
    if not lines:
        return True
    try:
        client.request("POST", "/trial-runner/logs", json={"lines": lines})
        return True
    except Exception:  # the master may be restarting; output is not worth a crash
        return False
