"""The experiment lifecycle as a plain object: events in, effects out, JSON snapshots.

:class:`ExperimentCore` feeds its searcher the events its trials report, queues the
searcher's operations per trial, moves trials through :class:`TrialState` (one
transition table, ``_states.TRANSITIONS``) and answers every event with the effects
an adapter must carry out (create a trial record, store metrics, register or delete a
checkpoint, stop or kill a process, finish the experiment). It does no I/O: the local
driver and the master are adapters around it.

Who owns what: the core owns trial states, each trial's queue of searcher operations,
the restart budget, the best metric, the checkpoint records needed for garbage
collection and the experiment's state. The adapter owns processes, slots (it asks
``schedulable()`` which trials want one), ids (it maps request ids to trial ids) and
storage.

Example:
    >>> cfg = {"hyperparameters": {"global_batch_size": 8},
    ...        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 4}},
    ...        "reproducibility": {"experiment_seed": 1}, "max_restarts": 1,
    ...        "resources": {"slots_per_trial": 1}, "checkpoint_storage": {}}
    >>> core = ExperimentCore(cfg)
    >>> [type(e).__name__ for e in core.start()][:2]
    ['SetExperimentState', 'CreateTrial']
    >>> core.schedulable()
    [1]
"""

from __future__ import annotations

import copy
import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from determined import searcher as searchers
from determined.common.frozen_entries import FrozenEntries
from determined.common.entrypoint import steps_text
from determined.config import (ExperimentConfig, Length, global_batch_size,
                               is_script_entrypoint, step_unit)
from determined.engine import _checkpoints as ckpts
from determined.engine import _effects as fx
from determined.engine import _snapshot
from determined.engine._assignment import Assignment
from determined.engine._checkpoints import check_checkpoint_id
from determined.engine._scripts import ScriptTrials
from determined.engine._states import (
    LIVE,
    EngineError,
    TERMINAL,
    TERMINAL_EXPERIMENT,
    TRANSITIONS,
    ExperimentState,
    IllegalTransition,
    TrialState,
    check_experiment_transition,
    recorded_trial_state,
)
from determined.engine._trial import CoreTrial, stopped_after_checkpoint, trial_error

__all__ = ["ExperimentCore", "EngineError", "check_checkpoint_id"]

_S, _E = TrialState, ExperimentState
_STOPPING = {_E.STOPPING_COMPLETED: _E.COMPLETED, _E.STOPPING_CANCELED: _E.CANCELED,
             _E.STOPPING_ERROR: _E.ERROR}


def _metric_value(value: Any) -> Optional[float]:
    """A reported metric as a float, or None when it cannot rank a trial (not a number,
    or NaN); infinities are kept."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return None if math.isnan(value) else value


class ExperimentCore(ScriptTrials):
    """One experiment's lifecycle.

    Args:
        config: the normalized experiment config.
        source_checkpoint: the uuid every trial without a searcher parent warm-starts
            from (``searcher.source_checkpoint_uuid`` / ``source_trial_id``, resolved
            by the adapter).

    Every event method returns the effects to carry out, in order. The queries
    (``schedulable``, ``next_op``, ``should_stop``, ``is_best``, ``progress``, ...) return
    none; ``next_op`` moves the asking trial between states that have a process.
    """

    def __init__(self, config: Mapping[str, Any], source_checkpoint: Optional[str] = None,
                 capacity: Optional[int] = None):
        """``capacity``: the trials the slots can run at once, told to the searcher
        before it starts (automatic concurrency follows it); None when unknown."""
        self.config = dict(config)
        self.cfg = ExperimentConfig(self.config)
        self.searcher = searchers.make_searcher(self.config)
        self.scripted = is_script_entrypoint(self.config.get("entrypoint"))
        self.step_unit = step_unit(self.config)  # what the trials' steps count
        if capacity is not None and capacity >= 1:
            # Before the search starts: no trial exists yet, so no operation follows.
            self.searcher.on_capacity_changed(capacity)
        self.state = _E.PAUSED
        self.trials: Dict[int, CoreTrial] = {}
        self.shutdown: Optional[searchers.Shutdown] = None
        self.best_value: Optional[float] = None  # signed: smaller is better
        self.killed = False
        self.source_checkpoint = source_checkpoint
        self.checkpoints: Dict[str, Dict[str, Any]] = {}
        self.reason = ""
        self.events = 0  # searcher events applied
        self._seq = 0
        self._frozen = FrozenEntries()  # an ended trial never changes again

    # ------------------------------------------------------------------ plumbing
    # Every helper that changes state returns the effects of the change, in order.

    def trial(self, request_id: int) -> CoreTrial:
        try:
            return self.trials[request_id]
        except KeyError:
            raise EngineError(f"Expected the request id of a trial of this experiment. "
                              f"Received: request_id={request_id!r}") from None

    def _move(self, t: CoreTrial, new: TrialState, event: str) -> List[fx.Effect]:
        if new is t.state:
            return []
        if new not in TRANSITIONS[t.state]:
            raise IllegalTransition(t.request_id, t.state, new, event)
        t.state = new
        out: List[fx.Effect] = [fx.LaunchTrial(t.request_id)] if new is _S.PENDING else []
        return out + self._show(t)

    def _show(self, t: CoreTrial) -> List[fx.Effect]:
        shown = recorded_trial_state(t.state, self.state)
        if shown == t.shown_state:
            return []
        t.shown_state = shown
        return [fx.UpdateTrial(t.request_id, {"state": shown})]

    def _set_state(self, state: ExperimentState) -> List[fx.Effect]:
        if state is self.state:
            return []
        check_experiment_transition(self.state, state)
        self.state = state
        out: List[fx.Effect] = [fx.SetExperimentState(state.value)]
        for t in self.trials.values():
            out += self._show(t)
        return out

    def _signed(self, value: float) -> float:
        return self.cfg.metric_order.signed(value)

    # ------------------------------------------------------------------ searcher ops

    def start(self, activate: bool = True) -> List[fx.Effect]:
        """The searcher's first operations; ``activate`` starts the experiment ACTIVE."""
        out = self._set_state(_E.ACTIVE if activate else _E.PAUSED)
        return out + self._searcher_event(self.searcher.start())

    def _searcher_event(self, ops: List[Any]) -> List[fx.Effect]:
        self.events += 1
        out = self._apply(ops)
        out.append(fx.SaveSnapshot())
        return out + self._maybe_finish()

    def _apply(self, ops: Iterable[Any]) -> List[fx.Effect]:
        out: List[fx.Effect] = []
        for op in ops:
            if isinstance(op, searchers.Create):
                out += self._create(op)
            elif isinstance(op, searchers.Shutdown):
                self.shutdown = op
                self.reason = op.reason
            else:
                t = self.trial(op.request_id)
                t.ops.append(op)
                out += self._script_queued(t, op)
                if not t.ops:
                    continue  # (a script's latest checkpoint satisfied it)
                if t.state is _S.WAITING:
                    out.append(fx.WakeTrial(t.request_id))
                elif t.state is _S.IDLE:
                    if isinstance(t.ops[0], searchers.Close):
                        t.ops.clear()  # its last checkpoint is its final state
                        out += self._complete(t, report_close=True)
                    else:
                        out += self._move(t, _S.PENDING, "searcher operation")
        return out

    def _create(self, op: searchers.Create) -> List[fx.Effect]:
        if op.request_id in self.trials:
            raise EngineError(f"The searcher created request id {op.request_id} twice")
        warm = None if op.checkpoint_of is not None else self.source_checkpoint
        t = CoreTrial(op.request_id, copy.deepcopy(op.hparams), op.trial_seed,
                      op.checkpoint_of, warm_start=warm, arrival=len(self.trials) + 1)
        self.trials[op.request_id] = t
        # The record starts ACTIVE (t.shown_state's default); a paused experiment's new
        # trial is then shown PAUSED.
        out: List[fx.Effect] = [
            fx.CreateTrial(t.request_id, t.hparams, t.seed, t.checkpoint_of, warm),
            *self._show(t), fx.LaunchTrial(t.request_id)]
        return out + self._apply(self.searcher.on_trial_created(op.request_id))

    # ------------------------------------------------------------------ scheduling view

    def schedulable(self) -> List[int]:
        """Request ids of trials that want a slot now, oldest first."""
        if self.state is not _E.ACTIVE:
            return []
        return [r for r, t in sorted(self.trials.items(), key=lambda kv: kv[1].arrival)
                if t.state is _S.PENDING and self._parent_ready(t)]

    def live(self) -> List[int]:
        """Request ids of trials with a process."""
        return [r for r, t in self.trials.items() if t.state in LIVE]

    def waiting(self) -> List[int]:
        """Running trials that wait for work (they could give their slot back; a
        self-paced script trains on while it waits)."""
        if self.scripted and self.searcher.self_paced:
            return []
        return [r for r, t in self.trials.items() if t.state is _S.WAITING]

    def _parent_ready(self, t: CoreTrial) -> bool:
        if t.checkpoint_of is None:
            return True
        parent = self.trial(t.checkpoint_of)
        pending = any(isinstance(o, searchers.Checkpoint) for o in parent.ops) or (
            isinstance(parent.current_op, searchers.Checkpoint) and parent.state in LIVE
        )
        return not pending and parent.latest_checkpoint is not None

    def restore_point(self, request_id: int) -> Tuple[Optional[str], bool]:
        """(checkpoint uuid or None, whether it is a warm start) for a trial to start."""
        t = self.trial(request_id)
        if t.latest_checkpoint:
            return t.latest_checkpoint, False
        if t.checkpoint_of is not None:
            parent = self.trial(t.checkpoint_of).latest_checkpoint
            if parent:
                return parent, True
        if t.warm_start:
            return t.warm_start, True
        return None, False

    # ------------------------------------------------------------------ trial events

    def trial_started(self, request_id: int) -> List[fx.Effect]:
        """A process for the trial was started (the adapter took a slot for it)."""
        t = self.trial(request_id)
        out = self._move(t, _S.RUNNING, "trial started")
        uuid, warm = self.restore_point(request_id)
        if warm and t.warm_start != uuid:
            t.warm_start = uuid
            out.append(fx.UpdateTrial(request_id, {"warm_start_checkpoint": uuid}))
        what = ("starts" if t.starts == 0 else "restarts" if t.failed_last
                else "resumes")
        t.starts += 1
        line = f"Trial {what}"
        if t.restarts:
            line += f" (restart {t.restarts} of {self.cfg.max_restarts})"
        if uuid and not warm:
            line += (f", restoring checkpoint {uuid} at "
                     f"{steps_text(t.checkpoint_batches, self.step_unit)}")
        elif uuid:
            line += f", warm-started from checkpoint {uuid}"
        out.append(fx.TrialLog(request_id, line))
        # Saved now, the line's count survives a restart before the trial's next event
        # (its first checkpoint): restored, it resumes rather than "starts" again.
        out.append(fx.SaveSnapshot())
        return out

    def next_op(self, request_id: int) -> Optional[Assignment]:
        """The trial's next operation, or None if the searcher has not sent one yet
        (the trial is WAITING). A Close the searcher did not send (the trial stops and
        resumes later) is marked ``resume_later``. Asking again means the previous
        operation is done."""
        t = self.trial(request_id)
        if t.state not in LIVE or t.state in (_S.STOPPING, _S.KILLING):
            return self._stop_op(t)
        if t.state is _S.RUNNING and t.current_op is not None and not isinstance(
                t.current_op, searchers.Close):
            t.current_op = None
        if self.state is not _E.ACTIVE:
            self._quiet_move(t, _S.STOPPING)
            return self._stop_op(t)
        stop = self._script_next_op(t)
        if stop is not None:
            return stop
        if t.ops:
            op = t.ops.pop(0)
            t.current_op = op
            if isinstance(op, searchers.Train):
                t.last_train = op.length
            self._quiet_move(t, _S.RUNNING)
            return Assignment(op)
        self._quiet_move(t, _S.WAITING)
        return None

    def _quiet_move(self, t: CoreTrial, new: TrialState) -> None:
        # A query has no effect list: these moves, between states with a process,
        # neither launch a trial nor change what is displayed.
        effects = self._move(t, new, "next operation")
        if effects:
            raise AssertionError(f"next_op moved a trial with effects: {effects!r}")

    @staticmethod
    def _stop_op(t: CoreTrial) -> Assignment:
        searchers_close = isinstance(t.current_op, searchers.Close)
        return Assignment(t.current_op if searchers_close else searchers.Close(t.request_id),
                          resume_later=not searchers_close)

    def should_stop(self, request_id: int) -> bool:
        """Whether the trial's process must checkpoint and exit now."""
        t = self.trial(request_id)
        return (t.state not in (_S.RUNNING, _S.WAITING) or self.state is not _E.ACTIVE
                or self._script_must_stop(t))

    def trial_trained(self, request_id: int, batches: int,
                      metrics: Mapping[str, Any]) -> List[fx.Effect]:
        """A training report; a report at or below a count already stored is dropped."""
        t = self.trial(request_id)
        if t.state in LIVE and batches > t.batches:
            t.batches = batches
            return [fx.StoreMetrics(request_id, "training", batches, dict(metrics))]
        return []

    def trial_validated(self, request_id: int, batches: int,
                        report: Mapping[str, Any]) -> List[fx.Effect]:
        """A validation report as the trial process sent it (``validation_metrics``
        by name, ``num_inputs``): stored whole, its searcher metric read here."""
        t = self.trial(request_id)
        if t.state not in LIVE or batches <= t.validated_batches:
            return []
        t.validated_batches = batches
        t.batches = max(t.batches, batches)
        out: List[fx.Effect] = [fx.StoreMetrics(request_id, "validation", batches, dict(report))]
        metrics = report.get("validation_metrics") or {}
        value = _metric_value(metrics.get(self.cfg.metric))
        t.last_validation = (batches, value)
        for c in self.checkpoints.values():
            if c["request_id"] == request_id and c["batches"] == batches:
                c["metric"] = value
        if value is not None:
            signed = self._signed(value)
            if self.best_value is None or signed < self.best_value:
                self.best_value = signed
            if t.best_metric is None or signed < self._signed(t.best_metric):
                t.best_metric = value
                out.append(fx.UpdateTrial(request_id, {"best_validation": value}))
        return out + self._script_validated(t, batches, metrics)

    def progress(self) -> float:
        """Fraction of the search done, in [0, 1], counting what each trial has trained
        so far (converted to the searcher's unit), not only validated lengths."""
        unit, per_epoch = self.searcher.unit, self.cfg.records_per_epoch
        trained: Dict[int, float] = {
            r: (self._script_units(t) if self.scripted  # steps are in the searcher's unit
                else Length.fraction_from_batches(unit, t.batches,
                                                  global_batch_size(t.hparams) or 1, per_epoch))
            for r, t in self.trials.items()}
        return round(min(1.0, self.searcher.progress(trained)), 4)

    def rung_table(self) -> Optional[List[searchers.BracketRungs]]:
        """The searcher's brackets and rungs, keyed by request id (see
        ``Searcher.rung_table``); None when the searcher has no rungs."""
        return self.searcher.rung_table()

    def best_validation(self) -> Optional[float]:
        """The experiment's best searcher-metric value so far (None before any)."""
        if self.best_value is None:
            return None
        return self.best_value * self.cfg.metric_order.sign

    def is_best(self, value: Any) -> bool:
        """Whether a validation metric value would be the experiment's best so far
        (NaN never is)."""
        v = _metric_value(value)
        if v is None:
            return False
        return self.best_value is None or self._signed(v) <= self.best_value

    def trial_checkpointed(self, request_id: int, batches: int, uuid: str,
                           resources: Optional[Mapping[str, int]] = None, framework: str = "",
                           format: str = "") -> List[fx.Effect]:
        """A checkpoint was written completely (``resources``: its files, relative path
        -> bytes). The same report again (a retried request) changes nothing; other
        content under a known uuid (trial, batches, files, framework, format) is an
        EngineError."""
        t = self.trial(request_id)
        check_checkpoint_id(uuid)
        resources = dict(resources or {})
        content = ckpts.content_key(resources, framework, format)
        if ckpts.is_repeat(uuid, self.checkpoints.get(uuid), request_id, batches, content, self.step_unit):
            return []
        if t.state in TERMINAL:
            raise EngineError(f"Trial (request id {request_id}) reported checkpoint {uuid} "
                              f"after it ended ({t.state.value})")
        self._seq += 1
        metric = t.last_validation[1] if t.last_validation and t.last_validation[0] == batches \
            else None
        self.checkpoints[uuid] = {"request_id": request_id, "batches": batches,
                                  "order": self._seq, "metric": metric, "deleted": False,
                                  "content": content}
        t.latest_checkpoint, t.checkpoint_batches = uuid, batches
        self._script_settle_checkpoints(t)  # (the children are launched below)
        out: List[fx.Effect] = [
            fx.RegisterCheckpoint(request_id, uuid, batches, resources, framework, format),
            fx.UpdateTrial(request_id, {"latest_checkpoint": uuid, "total_batches": batches})]
        for child in self.trials.values():  # a warm-start child may wait for it
            if child.checkpoint_of == request_id and child.state is _S.PENDING:
                out.append(fx.LaunchTrial(child.request_id))
        out.append(fx.SaveSnapshot())
        return out

    def validate_op_completed(self, request_id: int,
                              report: Mapping[str, Any]) -> List[fx.Effect]:
        """The searcher's Validate operation for the trial finished with ``report``
        (``validation_metrics`` by name)."""
        metrics = report.get("validation_metrics") or {}
        t = self.trial(request_id)
        if not isinstance(t.current_op, searchers.Validate):
            raise EngineError(f"Trial (request id {request_id}) reported a Validate "
                              f"operation done, but its operation is {t.current_op!r}")
        t.current_op = None  # done: never replayed after a restart
        return self._searcher_event(self.searcher.on_validation_completed(request_id,
                                                                          dict(metrics)))

    def early_exit(self, request_id: int) -> List[fx.Effect]:
        """The user's code asked to stop the trial (it closes normally afterwards)."""
        t = self.trial(request_id)
        if t.exit_reported or t.state in TERMINAL:
            return []
        t.exit_reported = True
        out: List[fx.Effect] = [fx.TrialLog(request_id, "Trial requested to stop early")]
        return out + self._searcher_event(self.searcher.on_trial_exited_early(
            request_id, searchers.ExitedReason.USER_REQUESTED_STOP))

    def trial_exited(self, request_id: int, code: Optional[int] = 0,
                     signal: Optional[int] = None, message: str = "") -> List[fx.Effect]:
        """The trial's process ended with exit ``code`` or killed by ``signal``; if it
        failed, ``message`` says why, as its output does (lines: a traceback, the last
        ones it wrote; stored as the trial's error, its last line in the trial's log)."""
        t = self.trial(request_id)
        if t.state not in LIVE:
            raise EngineError(f"Trial (request id {request_id}) exited, but it has no "
                              f"process (state {t.state.value})")
        how = (f"killed by signal {signal}" if signal else f"exit code {code}")
        closed = isinstance(t.current_op, searchers.Close)
        t.failed_last = False
        if t.state is _S.KILLING:
            out = self._end(t, _S.CANCELED, f"Trial killed ({how})")
            out += self._report_killed(t)
        elif self.state is _E.STOPPING_CANCELED:
            out = self._end(t, _S.CANCELED, f"Trial stopped: experiment canceled ({how})")
        elif code == 0 and not signal and self.scripted:
            out = self._script_exit_0(t)
        elif code == 0 and not signal and not closed and not t.exit_reported:
            out = self._requeue(t)
            out.append(fx.TrialLog(request_id, stopped_after_checkpoint(
                steps_text(t.checkpoint_batches, self.step_unit), resumes=bool(t.ops))))
            out += self._move(t, _S.PENDING if t.ops else _S.IDLE, "trial exited")
        elif code == 0 and not signal:
            out = self._complete(t, report_close=closed and not t.exit_reported)
        else:
            out = self._failed(t, how, message)
        out.append(fx.SaveSnapshot())
        return out + self._maybe_finish()

    def _report_killed(self, t: CoreTrial) -> List[fx.Effect]:
        """The searcher hears of a trial the user killed (once; not while stopping)."""
        if t.exit_reported or self.state in _STOPPING:
            return []
        t.exit_reported = True
        return self._searcher_event(self.searcher.on_trial_exited_early(
            t.request_id, searchers.ExitedReason.USER_REQUESTED_STOP))

    def _failed(self, t: CoreTrial, how: str, message: str) -> List[fx.Effect]:
        """The trial's process failed ``how``; ``message`` says why (its lines: see
        ``trial_error``, which words the log's line and the stored error)."""
        error, stored = trial_error(how, message)
        t.error = error
        stored_error = fx.UpdateTrial(t.request_id, {"error": stored})
        budget = self.cfg.max_restarts
        if t.restarts < budget and not self.killed and self.state not in _STOPPING:
            t.restarts += 1
            t.failed_last = True
            out = [stored_error, *self._requeue(t)]
            where = (f"{t.latest_checkpoint} at {steps_text(t.checkpoint_batches, self.step_unit)}"
                     if t.latest_checkpoint else "the beginning")
            out += [fx.TrialLog(t.request_id,
                                f"{error}; restart {t.restarts} of {budget} from {where}"),
                    fx.UpdateTrial(t.request_id, {"restarts": t.restarts})]
            return out + self._move(t, _S.PENDING, "trial failed")
        why = "no restarts left" if t.restarts >= budget else "experiment stopping"
        out = [stored_error, *self._end(t, _S.ERROR,
                                        f"{error}; {why} ({t.restarts} of {budget} restarts used)")]
        if not t.exit_reported and self.state not in _STOPPING:
            t.exit_reported = True
            out += self._searcher_event(self.searcher.on_trial_exited_early(
                t.request_id, searchers.ExitedReason.ERRORED))
        return out

    def _requeue(self, t: CoreTrial) -> List[fx.Effect]:
        """Put back the work a stopped or failed process did not finish. Train lengths
        are cumulative, so repeating the last Train from an older checkpoint is exact."""
        done = self._last_train_done(t)
        if t.current_op is not None:
            if not (done and isinstance(t.current_op, searchers.Train)):
                t.ops.insert(0, t.current_op)
            t.current_op = None
        if not done and t.last_train is not None and not (
                t.ops and isinstance(t.ops[0], searchers.Train)):
            t.ops.insert(0, searchers.Train(t.request_id, t.last_train))
        out: List[fx.Effect] = []
        if t.batches > t.checkpoint_batches or t.validated_batches > t.checkpoint_batches:
            out.append(fx.RollbackMetrics(t.request_id, t.checkpoint_batches))
        t.batches = t.checkpoint_batches
        t.validated_batches = min(t.validated_batches, t.checkpoint_batches)
        return out

    def _last_train_done(self, t: CoreTrial) -> bool:
        if t.last_train is None:
            return True
        if not t.latest_checkpoint:
            return False
        if self.scripted:
            return t.checkpoint_batches >= t.last_train.units
        gbs = global_batch_size(t.hparams)
        try:
            target = self.cfg.length_to_batches(t.last_train, gbs) if gbs else None
        except ValueError:  # epochs without records_per_epoch
            return False
        if target is None:
            return False
        return t.checkpoint_batches >= target

    def _complete(self, t: CoreTrial, report_close: bool) -> List[fx.Effect]:
        out = self._end(t, _S.COMPLETED, "Trial completed")
        if report_close:
            out += self._searcher_event(self.searcher.on_trial_closed(t.request_id))
        return out

    def _end(self, t: CoreTrial, state: TrialState, line: str) -> List[fx.Effect]:
        t.ops.clear()
        t.current_op = None
        return self._move(t, state, "trial ended") + [fx.TrialLog(t.request_id, line)]

    # ------------------------------------------------------------------ user actions

    def activate(self) -> List[fx.Effect]:
        if self.state is not _E.PAUSED:
            return []
        out = self._set_state(_E.ACTIVE)
        out += [fx.LaunchTrial(r) for r in self.schedulable()]
        return out + [fx.SaveSnapshot()]

    def pause(self) -> List[fx.Effect]:
        """Running trials checkpoint and exit; nothing starts until ``activate``."""
        if self.state is not _E.ACTIVE:
            return []
        out = self._set_state(_E.PAUSED)
        for t in self.trials.values():
            if t.state in (_S.RUNNING, _S.WAITING):
                out += self._move(t, _S.STOPPING, "pause")
                out.append(fx.StopTrial(t.request_id))
        return out + [fx.SaveSnapshot()]

    def cancel(self, kill: bool = False) -> List[fx.Effect]:
        """Stop the experiment (``kill``: without checkpointing first)."""
        if self.state in TERMINAL_EXPERIMENT:
            return []
        out = [] if self.state in _STOPPING else self._set_state(_E.STOPPING_CANCELED)
        if kill:
            self.killed = True
        for t in self.trials.values():
            if kill and t.state in LIVE and t.state is not _S.KILLING:
                out += self._move(t, _S.KILLING, "kill")
                out.append(fx.KillTrial(t.request_id))
            elif t.state in (_S.RUNNING, _S.WAITING):
                out += self._move(t, _S.STOPPING, "cancel")
                out.append(fx.StopTrial(t.request_id))
        out.append(fx.SaveSnapshot())
        return out + self._maybe_finish()

    def abort(self, state: str, reason: str = "") -> List[fx.Effect]:
        """End the experiment at once as ``state`` (ERROR or CANCELED) because its adapter
        cannot go on: processes are killed without a checkpoint, every unfinished
        trial ends CANCELED, the searcher hears nothing more."""
        final = _E(state)
        if final not in (_E.ERROR, _E.CANCELED):
            raise EngineError(f"Expected an abort state of ERROR or CANCELED. "
                              f"Received: state={state!r}")
        if self.finished:
            return []
        self.killed = True
        if reason:
            self.reason = reason
        out: List[fx.Effect] = []
        for t in self.trials.values():
            if t.state in LIVE and t.state is not _S.KILLING:
                out.append(fx.KillTrial(t.request_id))
            if t.state not in TERMINAL:
                out += self._end(t, _S.CANCELED, f"Trial canceled: the experiment was aborted"
                                 f"{': ' + reason if reason else ''}")
        if final is _E.ERROR or self.state is _E.STOPPING_COMPLETED:
            # (a completing search cannot turn CANCELED)
            out += self._set_state(_E.STOPPING_ERROR)
        elif self.state not in _STOPPING:
            out += self._set_state(_E.STOPPING_CANCELED)
        final = _STOPPING[self.state]
        out += self._set_state(final)
        return out + [fx.SaveSnapshot(), fx.FinishExperiment(final.value, self.reason)]

    def kill_trial(self, request_id: int) -> List[fx.Effect]:
        """End one trial now: CANCELED, never restarted."""
        t = self.trial(request_id)
        if t.state in LIVE and t.state is not _S.KILLING:
            return self._move(t, _S.KILLING, "kill trial") + [fx.KillTrial(request_id)]
        if t.state not in (_S.PENDING, _S.IDLE):
            return []
        out = self._end(t, _S.CANCELED, "Trial killed")
        out += self._report_killed(t)
        out.append(fx.SaveSnapshot())
        return out + self._maybe_finish()

    def stop_trial(self, request_id: int) -> List[fx.Effect]:
        """Ask a running trial to checkpoint and give its slot back (preemption,
        suspension of an idle trial); it resumes when it has work and a slot."""
        t = self.trial(request_id)
        if t.state not in (_S.RUNNING, _S.WAITING):
            return []
        return self._move(t, _S.STOPPING, "stop trial") + [fx.StopTrial(request_id)]

    def capacity_changed(self, capacity: int) -> List[fx.Effect]:
        """``capacity`` trials can now run at once (agents joined or left): the searcher
        hears it as an event of its own (with automatic concurrency it may create
        trials); the same value again does nothing."""
        if capacity == self.searcher.capacity or self.shutdown is not None:
            return []
        return self._searcher_event(self.searcher.on_capacity_changed(capacity))

    def suspend_idle(self) -> List[fx.Effect]:
        """Stop every WAITING trial (they have no work and hold a slot)."""
        return [e for r in self.waiting() for e in self.stop_trial(r)]

    # ------------------------------------------------------------------ the end

    def _maybe_finish(self) -> List[fx.Effect]:
        if self.live():
            return []
        out: List[fx.Effect] = []
        if self.state in (_E.ACTIVE, _E.PAUSED):
            alive = [t for t in self.trials.values() if t.state not in TERMINAL]
            if self.shutdown is not None:
                target = _E.STOPPING_ERROR if self.shutdown.failure else _E.STOPPING_COMPLETED
            elif self.state is _E.ACTIVE and alive and not self.schedulable():
                # No process, and none can start: nothing will ever report again.
                target = _E.STOPPING_ERROR
                self.reason = ("every trial waits for work the searcher never sends"
                               if all(t.state is _S.IDLE for t in alive) else
                               "no trial can start: each waits for a checkpoint no running "
                               "trial will write")
            else:
                return []
            out += self._set_state(target)
        if self.state not in _STOPPING:
            return out
        final = _STOPPING[self.state]
        for t in self.trials.values():
            if t.state not in TERMINAL:
                out += self._end(t, _S.CANCELED, "Trial canceled: the experiment ended")
        for uuid in self.garbage():
            self.checkpoints[uuid]["deleted"] = True
            out.append(fx.DeleteCheckpoint(uuid))
        out += self._set_state(final)
        return out + [fx.SaveSnapshot(), fx.FinishExperiment(final.value, self.reason)]

    def garbage(self) -> List[str]:
        """Checkpoints the storage policy does not keep (``_checkpoints.garbage``)."""
        protected = {t.warm_start for t in self.trials.values() if t.warm_start}
        return ckpts.garbage(self.checkpoints, protected,
                             self.config.get("checkpoint_storage") or {},
                             self.cfg.smaller_is_better)

    def best_checkpoint(self) -> Optional[str]:
        """The kept checkpoint with the best metric (else the newest kept one)."""
        return ckpts.best_checkpoint(self.checkpoints, self.cfg.smaller_is_better)

    def best_trial(self) -> Optional[int]:
        """The request id of the trial with the best validation metric (NaN never
        counts; ties go to the oldest trial), or None before any."""
        scored = [t for t in self.trials.values() if t.best_metric is not None]
        if not scored:
            return None
        return min(scored, key=lambda t: (self._signed(t.best_metric), t.arrival)).request_id

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_EXPERIMENT

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> Dict[str, Any]:
        """All state as JSON-able data; ``ExperimentCore.restore`` continues from it."""
        return _snapshot.snapshot(self)

    @classmethod
    def restore(cls, config: Mapping[str, Any], snapshot: Mapping[str, Any]) -> "ExperimentCore":
        """The core ``snapshot`` was taken of, for ``config``."""
        return _snapshot.restore(cls, config, snapshot)

    def recover(self, latest: Optional[Mapping[int, Tuple[str, int]]] = None) -> List[fx.Effect]:
        """After a restore from a snapshot taken while processes ran (the driver or
        master died): their processes are gone. Each rolls back to its latest
        checkpoint (``latest``: request id -> (uuid, batches) the adapter's records
        know, if newer than the snapshot's) and waits for a slot again; not counted
        as a restart."""
        for r, (uuid, batches) in (latest or {}).items():
            t = self.trials.get(r)
            if t is not None and uuid and batches >= t.checkpoint_batches and \
                    uuid != t.latest_checkpoint:
                t.latest_checkpoint, t.checkpoint_batches = uuid, batches
                if uuid not in self.checkpoints:
                    self._seq += 1
                    self.checkpoints[uuid] = {"request_id": r, "batches": batches,
                                              "order": self._seq, "metric": None,
                                              "deleted": False}
        out: List[fx.Effect] = []
        for t in list(self.trials.values()):
            if t.state is _S.PENDING:
                # Its process may have started after the snapshot: what it stored past
                # what the snapshot (or a newer checkpoint) knows is a lost run's.
                t.batches = max(t.batches, t.checkpoint_batches)
                out.append(fx.RollbackMetrics(t.request_id, t.batches))
            if t.state not in LIVE:
                continue
            if t.state is _S.KILLING:  # its process is gone: the kill is done
                out += self.trial_exited(t.request_id, code=None, signal=9)
                continue
            out += self._requeue(t)
            # What the lost process stored past its checkpoint goes, even rows the
            # snapshot never heard of.
            out += [fx.RollbackMetrics(t.request_id, t.checkpoint_batches),
                    fx.TrialLog(t.request_id, "Trial process lost (driver or master restarted); "
                                "it resumes at "
                                f"{steps_text(t.checkpoint_batches, self.step_unit)}")]
            # From its live state straight to where it goes without a process.
            if t.ops and isinstance(t.ops[0], searchers.Close) and t.latest_checkpoint:
                t.ops.clear()
                out += self._complete(t, report_close=True)
            else:
                resumes = bool(t.ops) or (self.scripted and self.searcher.self_paced)
                out += self._move(t, _S.PENDING if resumes else _S.IDLE, "process lost")
        out.append(fx.SaveSnapshot())
        return out + self._maybe_finish()
