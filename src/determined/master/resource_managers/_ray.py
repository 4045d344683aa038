"""The Ray resource manager: trials on an existing Ray cluster.

With ``resource_manager: {type: ray, address: HOST:PORT}`` the master connects to
the cluster as a driver (it adds no resources to it and keeps its own database).
Every alive Ray node is an agent to the scheduler; a slot is a GPU, or
``cpus_per_slot`` CPUs on nodes without GPUs.

A trial gets a placement group with one bundle per slot, each pinned to the node
the scheduler chose (bundle label ``ray.io/node-id``): strategy PACK when the
trial fits one node, SPREAD otherwise. Each rank is a Ray actor in its bundle that
fetches the model definition from the master, runs the rank's process (rank 0
``determined.harness._rest_host``, others ``harness._rank_main.worker_main``; they
rendezvous at rank 0's node address) and ships its output to the master's log
store. A script trial gets one bundle and actor per node instead, holding the node's
slots, whose process runs the script once there, as remote agents run a spanning
script's parts (:mod:`determined.launch._machines`: the chief's node the trial
runner with the script's link, the others ``determined.harness._script_part``; the
same cluster info and port offset). Trial processes talk to the master through the
REST API, as on our agents.

The trial ends when rank 0's process exits (its exit code is the trial's) or when
any rank or node's part fails; after a clean end of rank 0 the other actors get
``chief_grace`` seconds to end by themselves, as on remote agents. An actor that
dies with its node counts as a lost trial (``LOST_EXIT_CODE``): the master restarts
it from its latest checkpoint, counted against ``max_restarts``. Killing a trial
kills its actors, whose processes die with them (``PR_SET_PDEATHSIG``).

GPUs: Ray picks each actor's GPUs; the trial process sees exactly those (see
:func:`~determined.master.resource_managers._ray_actors.ray_gpu_env`).

Tasks (commands, notebooks, shells, TensorBoards) run on a node too: one
:class:`TaskRunner` actor pinned to the node the master chose, holding the task's
slots as Ray resources, starts the task's process as our agents do
(:func:`determined.tasks._launch.task_from_command`) with its service on the node's
address (reached through the master's proxy). A master thread per task collects its
output and exit from the actor and reports them to :attr:`RayResourceManager.task_events`;
an actor that dies with its node ends the task with "Ray node ... lost".
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from determined.config import is_script_entrypoint
from determined.launch._machines import (CHIEF_GRACE_SECONDS, OUTLIVED_CHIEF, PartProcess,
                                         meet_at, part_env, part_processes, part_ranks,
                                         script_rendezvous)
from determined.master import scheduler
from determined.master.resource_managers._ray_actors import TaskRunner, TrialRank
from determined.master.resource_managers._base import (
    LOST_EXIT_CODE,
    ExitCallback,
    LogSink,
    Part,
    TrialLaunch,
)

__all__ = ["RayResourceManager", "NODE_LABEL"]

logger = logging.getLogger("determined.master")

#: The label every Ray node carries with its id (bundles are pinned with it).
NODE_LABEL = "ray.io/node-id"



@dataclasses.dataclass
class _Trial:
    trial_id: int
    parts: List[Tuple[str, Tuple[int, ...]]]
    actors: List[Any] = dataclasses.field(default_factory=list)
    placement_group: Any = None
    killed: bool = False


@dataclasses.dataclass
class _Task:
    task_id: str
    agent_id: str
    actor: Any = None
    killed: bool = False


class RayResourceManager:
    """Ray nodes as agents; trials as actors in placement groups (a
    :class:`~determined.master.resource_managers._base.ResourceManager`).

    Args:
        address: the cluster's address (``HOST:PORT`` of the head's GCS, or ``auto``).
        on_exit: ``(trial_id, exit_code)`` once a trial ended.
        log_sink: stores start-up failures and output a trial posted too late (its
            actors post output through the REST API while its token is valid).
        cpus_per_slot: CPUs per slot on nodes without GPUs.
        on_change: called when nodes join or leave (wake the scheduler).
        on_lost: called with a trial id whose node was lost, before ``on_exit``.
        poll_seconds: how often the node list is read.
        chief_grace: seconds the other actors of a trial get to end after rank 0's
            clean end (then they are killed).
    """

    agent_prefix = "ray-"

    def __init__(self, address: str, on_exit: ExitCallback, log_sink: LogSink,
                 cpus_per_slot: float = 1.0, on_change: Optional[Callable[[], None]] = None,
                 on_lost: Optional[Callable[[int], Any]] = None, poll_seconds: float = 1.0,
                 chief_grace: float = CHIEF_GRACE_SECONDS):
        if not cpus_per_slot > 0:
            raise ValueError(f"Expected cpus_per_slot > 0. Received: {cpus_per_slot!r}")
        import ray

        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=address, namespace="determined", log_to_driver=False,
                     logging_level=logging.WARNING, configure_logging=False)
        self.address = address
        self.cpus_per_slot = float(cpus_per_slot)
        self.chief_grace = float(chief_grace)
        self._on_exit = on_exit
        self._log_sink = log_sink
        self._on_change = on_change or (lambda: None)
        self._on_lost = on_lost or (lambda trial_id: None)
        self._lock = threading.Lock()
        self._nodes: Dict[str, Dict[str, Any]] = {}  # agent id -> node info
        self._trials: Dict[int, _Trial] = {}
        self._tasks: Dict[str, _Task] = {}
        #: Receives tasks' ``task_started``/``task_logs``/``task_exited`` (the master's
        #: task manager; see :mod:`determined.master.resource_managers._remote`).
        self.task_events: Any = None
        self._closed = threading.Event()
        self._poll_seconds = poll_seconds
        self._refresh()
        self._monitor = threading.Thread(target=self._watch_nodes, name="det-ray-nodes",
                                         daemon=True)
        self._monitor.start()

    # -- nodes ----------------------------------------------------------------------------

    def _slots_of(self, resources: Dict[str, float]) -> int:
        gpus = int(resources.get("GPU", 0))
        if gpus > 0:
            return gpus
        return int(resources.get("CPU", 0) // self.cpus_per_slot)

    def _refresh(self) -> bool:
        nodes = {}
        for n in self._ray.nodes():
            if not n.get("Alive"):
                continue
            slots = self._slots_of(n.get("Resources") or {})
            if slots < 1:
                continue  # e.g. a head started with --num-cpus 0
            nodes[self.agent_prefix + n["NodeID"][:12]] = {
                "node_id": n["NodeID"], "address": n.get("NodeManagerAddress", ""),
                "slots": slots, "gpus": int((n.get("Resources") or {}).get("GPU", 0)),
                "last_seen": time.monotonic(),
            }
        with self._lock:
            changed = {k: v["slots"] for k, v in nodes.items()} != {
                k: v["slots"] for k, v in self._nodes.items()}
            self._nodes = nodes
        return changed

    def _watch_nodes(self) -> None:
        while not self._closed.wait(self._poll_seconds):
            try:
                if self._refresh():
                    self._on_change()
            except Exception as e:  # the GCS may be briefly unreachable
                logger.warning("reading the Ray cluster's nodes failed: %s", e)

    def agents(self) -> List[scheduler.Agent]:
        with self._lock:
            return [scheduler.Agent(a, n["slots"]) for a, n in self._nodes.items()]

    @property
    def slots(self) -> int:
        with self._lock:
            return sum(n["slots"] for n in self._nodes.values())

    def has_agent(self, agent_id: str) -> bool:
        with self._lock:
            return agent_id in self._nodes

    def describe(self) -> List[Dict[str, Any]]:
        """Alive nodes with their address and trials (for ``GET /agents``)."""
        now = time.monotonic()
        with self._lock:
            return [{"id": a, "slots": n["slots"], "label": "", "address": n["address"],
                     "type": "ray", "last_seen_seconds_ago": round(now - n["last_seen"], 3),
                     "trials": sorted(t.trial_id for t in self._trials.values()
                                      if any(p[0] == a for p in t.parts)),
                     "tasks": sorted(t.task_id for t in self._tasks.values()
                                     if t.agent_id == a)}
                    for a, n in self._nodes.items()]

    # -- tasks ----------------------------------------------------------------------------

    def runs_tasks(self, agent_id: str) -> bool:
        return self.has_agent(agent_id)

    def holds_task(self, task_id: str) -> bool:
        with self._lock:
            return task_id in self._tasks

    def launch_task(self, agent_id: str, task_id: str, command: Dict[str, Any]) -> str:
        """Start a task on the node ``agent_id`` (in the background): ``command`` as a
        remote agent gets it (see :func:`determined.tasks._launch.task_from_command`)
        plus ``master_url``. Returns a launch id."""
        with self._lock:
            node = self._nodes.get(agent_id)
            if node is None:
                raise RuntimeError(f"Ray node {agent_id} is gone")
            task = _Task(task_id, agent_id)
            self._tasks[task_id] = task
        threading.Thread(target=self._run_task,
                         args=(task, node["node_id"], bool(node["gpus"]), dict(command)),
                         name=f"det-ray-task-{task_id}", daemon=True).start()
        return f"ray-{task_id}"

    def kill_task(self, task_id: str) -> None:
        """Stop the task's process (SIGTERM, then SIGKILL); its exit is reported as usual."""
        with self._lock:
            task = self._tasks.get(task_id)
            if task is None:
                return
            task.killed = True
            actor = task.actor
        if actor is not None:
            try:
                actor.stop.remote()
            except Exception:  # the actor is gone: its reader reports the end
                pass

    def _run_task(self, task: _Task, node_id: str, gpus: bool, command: Dict[str, Any]) -> None:
        ray = self._ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        events = self.task_events
        slot_ids = [int(s) for s in command.get("slot_ids") or []]
        if not slot_ids:
            resources: Dict[str, float] = {"num_cpus": 0}
        elif gpus:
            resources = {"num_cpus": 0, "num_gpus": len(slot_ids)}
        else:
            resources = {"num_cpus": len(slot_ids) * self.cpus_per_slot}
        code: Optional[int] = None
        reason: Optional[str] = None
        actor = None
        try:
            actor = ray.remote(max_restarts=0, max_concurrency=4)(TaskRunner).options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                name=f"det-task-{task.task_id}", **resources).remote()
            with self._lock:
                task.actor = actor
                killed = task.killed
            if killed:
                raise _Killed()
            env_vars = {"DET_AGENT_ID": task.agent_id,
                        "DET_SLOT_IDS": ",".join(map(str, slot_ids))}
            host, port = ray.get(actor.start.remote(command, env_vars), timeout=300)
            events.task_logs(task.task_id, [
                f"det-master: started {command['kind']} task {task.task_id} on Ray node "
                f"{task.agent_id} ({host})"])
            events.task_started(task.task_id, host, port)
            if task.killed:  # asked to stop while it started
                actor.stop.remote()
            while True:
                lines, code, done = ray.get(actor.read.remote(0.5), timeout=120)
                if lines:
                    events.task_logs(task.task_id, lines)
                if done:
                    break
        except _Killed:
            pass
        except ray.exceptions.RayActorError:
            code = None
            if not task.killed:
                reason = f"Ray node {task.agent_id} lost"
        except Exception as e:  # start-up failed (the actor's error or a timeout)
            cause = getattr(e, "cause", None) or e
            logger.warning("task %s on Ray: %s: %s", task.task_id, type(cause).__name__, cause)
            events.task_logs(task.task_id, [f"det-master: could not start the task on Ray: "
                                            f"{type(cause).__name__}: {cause}"])
            code, reason = None, "could not start"
        finally:
            self._kill_actors([actor] if actor is not None else [])
            with self._lock:
                self._tasks.pop(task.task_id, None)
        if not self._closed.is_set():
            events.task_exited(task.task_id, code, reason)

    # -- trials ---------------------------------------------------------------------------

    def holds(self, trial_id: int) -> bool:
        with self._lock:
            return trial_id in self._trials

    def can_span(self, parts: Sequence[Part]) -> bool:
        """Any of the cluster's nodes (ranks rendezvous at rank 0's node)."""
        return all(self.has_agent(a) for a, _ in parts)

    def launch(self, launch: TrialLaunch) -> None:
        """Start the trial's ranks (in the background), one actor per slot of its parts
        (a script trial: per part); they reach the master at ``DET_MASTER`` with ``DET_TRIAL_TOKEN``."""
        trial_id, all_parts = launch.trial_id, [(a, tuple(s)) for a, s in launch.parts]
        env = {k: launch.env[k] for k in ("DET_MASTER", "DET_TRIAL_TOKEN")}
        trial = _Trial(trial_id, all_parts)
        with self._lock:
            missing = [a for a, _ in all_parts if a not in self._nodes]
            if missing:
                raise RuntimeError(f"Ray node(s) {missing} are gone")
            node_ids = {a: self._nodes[a]["node_id"] for a, _ in all_parts}
            gpus = any(self._nodes[a]["gpus"] for a, _ in all_parts)
            self._trials[trial_id] = trial
        threading.Thread(target=self._run, args=(trial, node_ids, gpus, env, launch.spec,
                                                  launch.experiment_id),
                         name=f"det-ray-trial-{trial_id}", daemon=True).start()

    def kill(self, trial_id: int) -> None:
        """Kill the trial's actors (and with them its processes)."""
        with self._lock:
            trial = self._trials.get(trial_id)
            if trial is None:
                return
            trial.killed = True
            actors = list(trial.actors)
        self._kill_actors(actors)

    def _kill_actors(self, actors: List[Any]) -> None:
        """Kill actors (their processes die with them); ones already gone are skipped."""
        for actor in actors:
            try:
                self._ray.kill(actor, no_restart=True)
            except Exception:  # already gone
                pass

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            ids = list(self._trials)
            actors = [t.actor for t in self._tasks.values() if t.actor is not None]
        for trial_id in ids:
            self.kill(trial_id)
        self._kill_actors(actors)

    def _run(self, trial: _Trial, node_ids: Dict[str, str], gpus: bool,
             env: Dict[str, str], spec: Dict[str, Any], experiment_id: int) -> None:
        ray = self._ray
        from ray.util.placement_group import placement_group, remove_placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        code = 1
        lost = False
        pg = None
        try:
            script = is_script_entrypoint(
                (spec.get("env") or {}).get("experiment_config", {}).get("entrypoint"))
            # A script runs once per node and starts that node's ranks itself: one actor
            # holds the node's slots. A Trial class runs one actor per slot.
            units = [(a, len(slots)) for a, slots in trial.parts] if script else \
                [(a, 1) for a, slots in trial.parts for _ in slots]
            unit = {"GPU": 1.0} if gpus else {"CPU": self.cpus_per_slot}
            pg = placement_group(
                [{k: v * n for k, v in unit.items()} for _, n in units],
                strategy="PACK" if len(trial.parts) == 1 else "SPREAD",
                bundle_label_selector=[{NODE_LABEL: node_ids[a]} for a, _ in units],
                name=f"det-trial-{trial.trial_id}",
            )
            trial.placement_group = pg
            ray.get(pg.ready(), timeout=120)
            actor_cls = ray.remote(max_restarts=0, max_concurrency=4)(TrialRank)
            actors = [actor_cls.options(
                num_cpus=0 if gpus else self.cpus_per_slot * n, num_gpus=n if gpus else 0,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=pg, placement_group_bundle_index=i),
                name=f"det-trial-{trial.trial_id}-{'part' if script else 'rank'}-{i}").remote()
                for i, (_, n) in enumerate(units)]
            with self._lock:
                trial.actors = actors
                killed = trial.killed
            if killed:
                raise _Killed()
            chief_ip, port = ray.get(actors[0].rendezvous.remote(script), timeout=120)
            threads = max(1, int(self.cpus_per_slot))
            if script:
                runs = self._script_parts(trial, env, spec, chief_ip, port)
            else:
                runs = self._trial_ranks(trial, env, spec, chief_ip, port)
            refs = [actor.run.remote(run_env, run_spec, experiment_id, rank, threads, module,
                                     prefix)
                    for actor, (run_env, run_spec, rank, module, prefix) in zip(actors, runs)]
            names = [f"{'machine' if script else 'rank'} {i} of the trial on Ray node {a}"
                     for i, (a, _) in enumerate(units)]
            code, lost = self._wait(trial, refs, names)
        except _Killed:
            code = LOST_EXIT_CODE
        except Exception as e:  # start-up failed: the master's restart rules apply
            logger.warning("trial %s on Ray: %s: %s", trial.trial_id, type(e).__name__, e)
            self._log_sink(trial.trial_id, [f"det-master: could not run the trial on Ray: "
                                            f"{type(e).__name__}: {e}"])
        finally:
            self._kill_actors(trial.actors)
            if pg is not None:
                try:
                    remove_placement_group(pg)
                except Exception:
                    pass
            with self._lock:
                self._trials.pop(trial.trial_id, None)
                killed = trial.killed
        if lost and not killed:
            self._log_sink(trial.trial_id, ["det-master: a Ray node of the trial was lost"])
            self._on_lost(trial.trial_id)
            self._forget_dead_nodes(node_ids)
        if not self._closed.is_set():
            self._on_exit(trial.trial_id, code)

    def _trial_ranks(self, trial: _Trial, env: Dict[str, str], spec: Dict[str, Any],
                     chief_ip: str, port: int) -> List[_Run]:
        """A Trial class: one run per slot (rank 0 the trial runner), each with its
        node's part as remote agents start it (:mod:`determined.launch._machines`)."""
        if sum(len(s) for _, s in trial.parts) == 1:
            return [(dict(env, DET_AGENT_ID=trial.parts[0][0]), spec, 0, None, "")]
        runs = []
        for part, ranks in zip(trial.parts, self._places(trial, chief_ip, port)):
            for proc in part_processes(ranks, len(part[1]), script=False):
                runs.append(self._part_run(part, ranks, proc, env, spec, chief_ip, port,
                                           script=False))
        return runs

    def _script_parts(self, trial: _Trial, env: Dict[str, str], spec: Dict[str, Any],
                      chief_ip: str, port: int) -> List[_Run]:
        """A script: one run per node, as remote agents run a spanning script's parts
        (:mod:`determined.launch._machines`); one node runs it as an agent does."""
        if len(trial.parts) == 1:
            return [(dict(env, DET_AGENT_ID=trial.parts[0][0]), spec, 0, None, "")]
        runs = []
        for part, ranks in zip(trial.parts, self._places(trial, chief_ip, port)):
            (proc,) = part_processes(ranks, len(part[1]), script=True)
            runs.append(self._part_run(part, ranks, proc, env,
                                       dict(spec, rendezvous=script_rendezvous(ranks, chief_ip)),
                                       chief_ip, port, script=True))
        return runs

    def _places(self, trial: _Trial, chief_ip: str, port: int) -> List[Dict[str, Any]]:
        """Each node's ``ranks`` (see :func:`part_ranks`), meeting at rank 0's node."""
        with self._lock:
            addrs = [self._nodes.get(a, {}).get("address") or chief_ip for a, _ in trial.parts]
        places = part_ranks([len(s) for _, s in trial.parts], addrs)
        for ranks in places:
            meet_at(ranks, chief_ip, port)
        return places

    @staticmethod
    def _part_run(part: Tuple[str, Tuple[int, ...]], ranks: Dict[str, Any],
                  proc: PartProcess, env: Dict[str, str], spec: Dict[str, Any], chief_ip: str,
                  port: int, script: bool) -> "_Run":
        """What one actor of a node's part runs (``proc`` of :func:`part_processes`)."""
        agent, slots = part
        run_env = dict(part_env(ranks, slots, env["DET_TRIAL_TOKEN"], chief_ip, port, script),
                       DET_MASTER=env["DET_MASTER"], DET_AGENT_ID=agent,
                       DET_RANK=str(proc.rank), DET_LOCAL_RANK=str(proc.local_rank))
        return run_env, spec, proc.rank, proc.module, proc.prefix

    def _forget_dead_nodes(self, node_ids: Dict[str, str], timeout: float = 30.0) -> None:
        """Before a lost trial is rescheduled: wait until the node list shows which of
        its nodes died, so the scheduler does not place it there again."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            alive = {n["NodeID"] for n in self._ray.nodes() if n.get("Alive")}
            if any(nid not in alive for nid in node_ids.values()):
                break
            time.sleep(0.5)
        if self._refresh():
            self._on_change()

    def _wait(self, trial: _Trial, refs: List[Any], names: List[str]) -> Tuple[int, bool]:
        """(exit code, lost): rank 0's code, or the first failing actor's before it
        (``names``: what each actor runs, for the log); after rank 0's clean end the
        others get :attr:`chief_grace` seconds. The caller kills the actors left."""
        ray, trial_id = self._ray, trial.trial_id
        pending = list(refs)
        chief_done_at: Optional[float] = None
        while pending:
            timeout = None if chief_done_at is None else max(
                0.0, chief_done_at + self.chief_grace - time.monotonic())
            ready, pending = ray.wait(pending, num_returns=1, timeout=timeout)
            if not ready:
                line = OUTLIVED_CHIEF.format(grace=self.chief_grace)
                logger.info("trial %s: %s", trial_id, line)
                self._log_sink(trial_id, [line])
                return 0, False
            ref = ready[0]
            code, lost = self._ended(trial_id, ref)
            if code != 0 and not trial.killed:
                what = "was lost" if lost else f"exited with code {code}"
                self._log_sink(trial_id, [f"det-master: {names[refs.index(ref)]} {what}; "
                                          "stopping the others"])
            if code != 0:
                return (0, False) if chief_done_at is not None else (code, lost)
            if ref is refs[0]:
                chief_done_at = time.monotonic()
        return 0, False

    def _ended(self, trial_id: int, ref: Any) -> Tuple[int, bool]:
        """(exit code, lost) of an actor's finished run; stores its unsent output."""
        ray = self._ray
        try:
            code, unsent = ray.get(ref)
        except ray.exceptions.RayActorError:
            return LOST_EXIT_CODE, True
        except Exception:
            return 1, False
        if unsent:
            self._log_sink(trial_id, list(unsent))
        return code, False


#: What one actor runs: (environment, spec, rank, module or None for the trial runner,
#: prefix of its output lines).
_Run = Tuple[Dict[str, str], Dict[str, Any], int, Optional[str], str]


class _Killed(Exception):
    pass
