"""Run a whole experiment on this machine: an adapter around
:class:`~determined.engine.ExperimentCore`. The searcher and the core live in this
process; each trial runs in a process of its own (one per slot for a distributed
trial: see ``determined.harness._ranks``), ``slots // slots_per_trial`` trials
at a time, started and watched by :class:`~determined.local._processes.TrialProcesses`.

The driver is a single-threaded event loop: it starts trial processes when the core
has schedulable trials and slots are free, turns their messages into core events,
and carries out the effects the core answers with (records, checkpoints, kills).
A failed trial process restarts from its latest checkpoint up to ``max_restarts``
times, whatever the failure (the core's rule, as on a master).

Records go to the local directory's database (the master's schema, ``_store.py``):
trials, metrics, checkpoints, logs, states and, after every event that changes the
core, its snapshot, which ``det experiment resume --local`` continues from. Training
rows are written in batches (one transaction per turn of the loop, and always before a
snapshot or a rollback), so a fast trial does not wait on the database.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from determined import engine
from determined.common import scratch
from determined.common.identity import directory_id
from determined.common.log_view import WrittenFailure, written_failure
from determined.config import ExperimentConfig, is_script_entrypoint
from determined.harness import TrialEnv
from determined.local._interrupts import DeferredInterrupts
from determined.local._pool import WarmPool, process_context, trial_frameworks
from determined.local._processes import TrialProcesses
from determined.local._result import ExperimentResult, experiment_result
from determined.local._store import LocalStore
from determined.master.db import RecordEffects, checkpoint_resources, restore_location
from determined.storage import build_storage

__all__ = ["LocalDriver"]

logger = logging.getLogger("determined.local")


class LocalDriver:
    """Drive one experiment to its end.

    Args:
        config: the normalized experiment config.
        model_dir: the model definition directory.
        experiment_id: this experiment's id in ``store``.
        store: where records go.
        storage_config: the checkpoint_storage section to use.
        slots: slots of this machine; ``slots // resources.slots_per_trial`` trials
            run at once.
        on_event: called with (kind, trial, details) for progress displays: ``trial``
            is :meth:`trial_view` of the trial the event is about; kinds: created,
            started, training, validation, checkpoint, restart, error, closed,
            suspended and pausing (Ctrl-C: the trial checkpoints, then exits).
        source_checkpoint: (uuid, path) of the checkpoint every trial warm-starts from
            (``searcher.source_checkpoint_uuid`` / ``source_trial_id``,
            ``master.db.resolve_source_checkpoint``), or None.
    """

    def __init__(
        self,
        config: Dict[str, Any],
        model_dir: str,
        experiment_id: int,
        store: LocalStore,
        storage_config: Dict[str, Any],
        slots: int = 1,
        on_event: Optional[Callable[[str, Dict[str, Any], Dict[str, Any]], None]] = None,
        source_checkpoint: Optional[Tuple[str, str]] = None,
    ):
        self.config = config
        self.cfg = ExperimentConfig(config)
        self.model_dir = os.path.abspath(model_dir)
        self.experiment_id = experiment_id
        self.store = store
        self.storage_config = storage_config
        self.storage = build_storage(storage_config)
        self.slots = max(1, slots)
        per_trial = self.cfg.slots_per_trial
        if per_trial > self.slots:
            raise ValueError(
                f"Expected at least resources.slots_per_trial={per_trial} slots to run a trial. "
                f"Received: slots={self.slots}"
            )
        self.concurrent = self.slots // per_trial  # trials running at once
        self.on_event = on_event or (lambda kind, trial, details: None)
        self.db = store.store
        # Other local directories (and masters) number experiments from 1 too.
        self.owner = directory_id(store.local_dir)
        store.name_user_files(self.model_dir)  # a script's own tracebacks, as stored
        self.source_path = source_checkpoint[1] if source_checkpoint else None
        self.core = engine.ExperimentCore(
            config, source_checkpoint=source_checkpoint[0] if source_checkpoint else None,
            capacity=self.concurrent)
        # What the core does not know of a trial's processes, by request id: when the
        # first one started, and the last error one reported.
        self.started: Dict[int, float] = {}
        self.errors: Dict[int, str] = {}
        self._log_starts: Dict[int, int] = {}  # where each process's output begins in its log
        self._script = is_script_entrypoint(config.get("entrypoint"))
        self.final_state: Optional[str] = None  # set when the driver ends the run itself
        self.records = RecordEffects(self.db, experiment_id, self._delete_files,
                                     log=store.log_line, buffer_training=True)
        self.records.on_created = self._created
        self._set_snapshot_extra()
        self._resumed = False
        self._interrupts = DeferredInterrupts()  # Ctrl-C acts between events, not inside one
        frameworks = trial_frameworks(config, self.model_dir)
        self._threads = max(1, (os.cpu_count() or 1) // self.slots)
        self.processes = TrialProcesses(
            WarmPool(process_context(frameworks), self.concurrent, frameworks, self._threads),
            on_message=self._handle, on_exit=self._process_ended)

    # ------------------------------------------------------------------ main loop

    def run(self) -> ExperimentResult:
        scratch.sweep_dead_owners()  # what trial processes of runs that were killed left
        try:
            with self._interrupts:
                return self._run()
        finally:
            self.processes.pool.close()

    def restore(self, snapshot: Dict[str, Any]) -> None:
        """Continue from the records and core snapshot of an interrupted run: trials
        whose processes were lost resume from their latest checkpoints."""
        self.core = engine.ExperimentCore.restore(self.config, snapshot)
        if self.core.finished:
            raise ValueError(f"experiment {self.experiment_id} has already ended "
                             f"({self.core.state.value})")
        local = snapshot.get("local") or {}
        self.source_path = local.get("source_checkpoint_path")
        self._set_snapshot_extra()
        latest: Dict[int, Any] = {}
        for rec in self.db.list_trials(self.experiment_id):
            r = int(rec.request_id)
            if r not in self.core.trials:
                continue  # created after the snapshot: the core creates it again
            self.records.trial_ids[r] = rec.id
            self.started[r] = rec.start_time.timestamp()
            self.store.resume_logs(rec.id)
            c = self.db.latest_checkpoint(rec.id)
            if c is not None:
                latest[r] = (c.uuid, c.total_batches)
        missing = set(self.core.trials) - set(self.records.trial_ids)
        if missing:
            raise ValueError(f"experiment {self.experiment_id}: its records lack trials "
                             f"(request ids {sorted(missing)}) its snapshot has")
        self._resumed = True
        self._do(self.core.recover(latest))
        self._do(self.core.activate())

    def _run(self) -> ExperimentResult:
        try:
            if not self._resumed:
                self._do(self.core.start(activate=True))
            while not self.core.finished:
                self._interrupts.raise_pending()
                self._start_queued()
                if self.core.finished:
                    break
                if not self.processes:  # the core ends a search that cannot go on: a bug
                    raise RuntimeError(f"experiment {self.experiment_id} is "
                                       f"{self.core.state.value} with no trial to run")
                self._refill_pool()
                self.processes.wait(wake=self._interrupts.wake)
                self.records.flush()
        except KeyboardInterrupt:
            self._stop_gracefully()
            raise
        except BaseException as err:
            self._kill_all("ERROR", f"{type(err).__name__}: {err}")
            raise
        finally:
            self.store.pump_all(final=True)
        return experiment_result(self.core, self.db, self.experiment_id, self.storage,
                                 self.store.dir, self.started, self.errors, self.final_state)

    def _start_queued(self) -> None:
        queued = self.core.schedulable()
        per_trial = self.cfg.slots_per_trial
        if engine.release_waiting(wanting=len(queued), running=len(self.core.live()),
                                  waiting=len(self.core.waiting()),
                                  free_slots=(self.concurrent - len(self.processes)) * per_trial,
                                  slots_per_trial=per_trial):
            self._do(self.core.suspend_idle())  # idle trials give their slots back
        for request_id in queued:
            if len(self.processes) >= self.concurrent:
                return
            self.start_trial(request_id)

    def _refill_pool(self) -> None:
        """Keep processes warm for trials that may start soon."""
        waiting = sum(1 for t in self.core.trials.values()
                      if t.state in (engine.TrialState.PENDING, engine.TrialState.IDLE))
        if self.core.shutdown is None:
            waiting = max(waiting, 1)
        self.processes.pool.fill(min(self.concurrent, waiting))

    # ------------------------------------------------------------------ effects

    def _do(self, effects: List[Any]) -> None:
        """Records first (``RecordEffects``), then the process effects."""
        engine.dispatch(self.records.apply(effects, self.core), self)

    def _set_snapshot_extra(self) -> None:
        self.records.snapshot_extra = {
            "local": {"model_dir": self.model_dir, "source_checkpoint_path": self.source_path},
            "source_checkpoint_path": self.source_path}

    # process effects (engine.dispatch calls these)

    def launch_trial(self, e: engine.LaunchTrial) -> None:
        pass  # _start_queued asks the core for schedulable trials every turn

    def finish_experiment(self, e: engine.FinishExperiment) -> None:
        pass  # the loop ends once the core is finished

    def kill_process(self, e: engine.KillTrial) -> None:
        self.processes.kill(e.request_id)

    def wake_trial(self, e: Any) -> None:
        if self.processes.awaiting_op(e.request_id):
            self._send_next_op(e.request_id)

    def stop_trial(self, e: engine.StopTrial) -> None:
        if self.processes.awaiting_op(e.request_id):
            self._send_next_op(e.request_id)
        else:
            self.processes.send(e.request_id, ("stop",))

    def _delete_files(self, uuids: List[str]) -> None:
        for uuid in uuids:
            try:
                self.storage.delete(uuid)
            except Exception as err:  # noqa: BLE001 - GC must not fail the search
                logger.warning("could not delete checkpoint %s: %s", uuid, err)

    def _created(self, request_id: int, trial_id: int) -> None:
        self.store.watch(trial_id)
        self.on_event("created", self.trial_view(request_id), {})

    def trial_view(self, r: int) -> Dict[str, Any]:
        """What a display shows of a trial now: ``trial_id``, ``hparams``, ``batches``,
        ``best_metric``, ``restarts``, ``latest_checkpoint``, ``checkpoint_batches``."""
        t = self.core.trial(r)
        return {"trial_id": self.records.tid(r), "hparams": t.hparams, "batches": t.batches,
                "best_metric": t.best_metric, "restarts": t.restarts,
                "latest_checkpoint": t.latest_checkpoint,
                "checkpoint_batches": t.checkpoint_batches}

    # ------------------------------------------------------------------ processes

    def _send_next_op(self, r: int) -> None:
        answer = self.core.next_op(r)
        self.processes.set_awaiting_op(r, answer is None)
        if answer is not None:
            self.processes.send(r, ("op", answer.to_dict()))

    def start_trial(self, r: int) -> None:
        """Start a process for trial ``r`` (the loop does so for schedulable trials)."""
        self._do(self.core.trial_started(r))
        t, trial_id = self.core.trial(r), self.records.tid(r)
        restore, warm = restore_location(self.core, r, self.storage, self.source_path)
        env = TrialEnv(experiment_config=self.config, hparams=t.hparams,
                       model_dir=self.model_dir, experiment_id=self.experiment_id,
                       trial_id=trial_id, trial_seed=t.seed, latest_checkpoint=restore,
                       warm_start=warm, owner=self.owner)
        log_path = self.store.trial_log_path(trial_id)
        self._log_starts[r] = os.path.getsize(log_path) if os.path.exists(log_path) else 0
        self.processes.start(r, (env, self.storage_config, log_path, self._threads))
        self.started.setdefault(r, time.time())
        self.on_event("started", self.trial_view(r),
                      {"restart": t.restarts, "resumed": restore is not None and not warm})

    def _handle(self, r: int, msg: Any) -> None:
        """A message from trial ``r``'s process (``harness._pipe_host``'s protocol)."""
        kind = msg[0]
        if kind == "next_op":
            self._send_next_op(r)
        elif kind == "training":
            self._trained(r, [(msg[1], msg[2])])
        elif kind == "training_batch":
            self._trained(r, msg[1])
        elif kind == "validation":
            self._do(self.core.trial_validated(r, msg[1], msg[2]))
            self.on_event("validation", self.trial_view(r),
                          msg[2].get("validation_metrics") or {})
        elif kind == "validate_op_completed":
            self._do(self.core.validate_op_completed(r, msg[2]))
        elif kind == "checkpoint":
            _, batches, uuid, meta = msg
            meta = meta or {}
            self._do(self.core.trial_checkpointed(
                r, batches, uuid, checkpoint_resources(self.storage, uuid),
                str(meta.get("framework", "")), str(meta.get("format", ""))))
            self.on_event("checkpoint", self.trial_view(r), {"uuid": uuid})
        elif kind == "is_best":
            self.processes.send(r, ("best", self.core.is_best(msg[1])))
        elif kind == "best_validation":
            self.processes.send(r, ("best_value", self.core.best_validation()))
        elif kind == "recorded_checkpoints":
            self.records.flush()
            self.processes.send(r, ("recorded", [c.uuid for c in self.db.list_checkpoints(
                trial_id=self.records.tid(r))]))
        elif kind == "early_exit":
            self._do(self.core.early_exit(r))
        elif kind == "progress":
            self._do(self.core.trial_progressed(r, msg[1]))
        elif kind == "script_exited":
            self._do(self.core.script_exited(r, msg[1]))

    def _trained(self, r: int, reports: List[Tuple[int, Dict[str, Any]]]) -> None:
        """Training reports (oldest first); the display hears of the latest only."""
        for batches, metrics in reports:
            self._do(self.core.trial_trained(r, batches, metrics))
        if reports:
            self.on_event("training", self.trial_view(r), reports[-1][1])

    def _process_ended(self, r: int, code: Optional[int], error: Optional[str]) -> None:
        self.records.flush()
        self.store.pump(self.records.tid(r), final=True)
        restarts_before = self.core.trial(r).restarts
        signal = -code if code is not None and code < 0 else None
        message = error or ""  # the core stores it as the trial's error
        if not error and code is not None and code > 0 and self._script:
            found = self._script_failure(r)
            if found is not None:  # the core's message as a master's; the run's own line
                message = found.text
                error = (f"the script failed (exit code {code})"
                         f"{'; ' + found.lead if found.lead else ''}:\n{found.lines}")
        self._do(self.core.trial_exited(r, code=None if signal else code, signal=signal,
                                        message=message))
        t, view = self.core.trial(r), self.trial_view(r)
        if error:
            self.errors[r] = error
        error = self.errors.get(r) or t.error
        if t.restarts > restarts_before:
            self.on_event("restart", view, {"error": error, "code": code})
        elif t.state is engine.TrialState.ERROR:
            self.on_event("error", view, {"error": error})
        elif t.state is engine.TrialState.COMPLETED:
            self.on_event("closed", view, {"was_running": True})
        elif t.state in (engine.TrialState.PENDING, engine.TrialState.IDLE):
            self.on_event("suspended", view, {})

    def _script_failure(self, r: int) -> Optional[WrittenFailure]:
        """Why trial ``r``'s script failed, from what its process wrote to the log:
        ``common.log_view.written_failure`` (the last Python traceback, its paths in the
        model directory, of a distributed script the rank that failed first; without
        one, the script's last lines of output). None if it wrote nothing."""
        try:
            with open(self.store.trial_log_path(self.records.tid(r)), "rb") as f:
                f.seek(self._log_starts.get(r, 0))
                text = f.read(1 << 20).decode("utf-8", errors="replace")
        except OSError:
            return None
        return written_failure(text, self.model_dir)

    def _stop_gracefully(self) -> None:
        """Ctrl-C: running trials checkpoint and exit, the experiment is PAUSED and
        ``det experiment resume --local ID`` continues it; a second Ctrl-C kills them."""
        try:
            self._do(self.core.pause())
            for r, t in self.core.trials.items():
                if t.state is engine.TrialState.STOPPING:
                    self.on_event("pausing", self.trial_view(r), {})
            deadline = time.monotonic() + 120
            while self.processes and time.monotonic() < deadline and \
                    self._interrupts.count < 2:
                self.processes.wait(wake=self._interrupts.wake)
                self._interrupts.drain()
        except KeyboardInterrupt:  # a second Ctrl-C where SIGINT is not deferred
            pass
        self._kill_all("PAUSED" if not self.processes else "CANCELED")

    def _kill_all(self, state: str, reason: str = "") -> None:
        """End every trial process now; the experiment ends ``state`` (ERROR or
        CANCELED, through the core's abort) or stays PAUSED."""
        self.processes.terminate_all()
        self.final_state = state
        if state == "PAUSED":
            return
        try:
            self._do(self.core.abort(state, reason))
        except Exception as err:  # noqa: BLE001 - the original error matters more
            logger.warning("could not record experiment %s as %s: %s",
                           self.experiment_id, state, err)
