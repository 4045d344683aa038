"""Script trials: the lifecycle rules of an experiment whose entrypoint is a command.

A script (``python3 train.py``) counts its own steps in the searcher's length unit (the
"batches" of its reports are those steps: no ``global_batch_size``), may train its own
length (self-paced searches: ``searcher.time_metric``, or no ``max_length``) and ends
when it exits:

- exit 0 after the searcher closed it (in a time-metric search: stopped it) ->
  COMPLETED, and the searcher hears ``on_trial_closed``;
- exit 0 while the engine was stopping it (pause, preemption, a PBT ``Checkpoint`` it
  owed) -> it resumes later from its latest checkpoint;
- exit 0 on its own -> COMPLETED, and the searcher hears ``on_trial_finished``
  (whether or not the operations it was given were done);
- any other exit -> a failure, restarted from the latest checkpoint as for Trials.

A script cannot carry out a ``Checkpoint`` operation: the latest checkpoint at the
trial's current steps satisfies it; otherwise the trial is stopped, so that the script
checkpoints and exits, and resumes later with its remaining operations.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional

from determined import searcher as searchers
from determined.common.entrypoint import steps_text
from determined.engine import _effects as fx
from determined.engine._assignment import Assignment
from determined.engine._states import LIVE, ExperimentState, TrialState
from determined.engine._trial import CoreTrial, stopped_after_checkpoint

__all__ = ["ScriptTrials"]

_S = TrialState
_EXPERIMENT_STOPPING = (ExperimentState.STOPPING_COMPLETED, ExperimentState.STOPPING_CANCELED,
                        ExperimentState.STOPPING_ERROR)


class ScriptTrials:
    """``ExperimentCore``'s events and rules for script trials (a mixin of the core: its
    methods use the core's trials, searcher and helpers)."""

    #: The experiment's entrypoint is a command: its trials are scripts.
    scripted: bool = False
    step_unit: str = "step"

    # ------------------------------------------------------------------ events

    def trial_progressed(self, request_id: int, units: float) -> List[fx.Effect]:
        """The trial's progress (0.38 ``op.report_progress``): ``units`` in the searcher's
        length unit (time-metric units with ``searcher.time_metric``; a fraction of the
        trial when the searcher has no length). Feeds ``progress()``; no effect."""
        t = self.trial(request_id)
        if t.state in LIVE and float(units) > t.progress_units:
            t.progress_units = float(units)
        return []

    def script_exited(self, request_id: int, code: int) -> List[fx.Effect]:
        """The trial's script ended with ``code`` (negative: killed by that signal). The
        trial process's own exit (``trial_exited``) follows and decides what it means."""
        how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return [fx.TrialLog(request_id, f"Script {how}")]

    # ------------------------------------------------------------------ rules

    def _script_units(self, t: CoreTrial) -> float:
        """What the trial has trained, for ``progress()``: reported progress (in a
        self-paced search only that), else its steps."""
        if self.searcher.self_paced:
            return t.progress_units
        return max(float(t.batches), t.progress_units)

    def _script_closing(self, t: CoreTrial) -> bool:
        """The searcher closed the trial (in a time-metric search: stopped it)."""
        return isinstance(t.current_op, searchers.Close) or any(
            isinstance(op, searchers.Close) for op in t.ops)

    def _script_must_stop(self, t: CoreTrial) -> bool:
        """Part of ``should_stop``: a script checkpoints and exits once it is closed."""
        return self.scripted and self._script_closing(t)

    def _script_checkpointed_now(self, t: CoreTrial) -> bool:
        return t.latest_checkpoint is not None and t.checkpoint_batches >= t.batches

    def _script_settle_checkpoints(self, t: CoreTrial) -> bool:
        """Drop the ``Checkpoint`` operations the trial's latest checkpoint satisfies
        (the one it owes now, or the next ones queued before any other work); returns
        whether any was (a warm-start child waiting for it may start)."""
        if not self.scripted or not self._script_checkpointed_now(t):
            return False
        settled = False
        if isinstance(t.current_op, searchers.Checkpoint):
            t.current_op, settled = None, True
        while t.current_op is None and t.ops and isinstance(t.ops[0], searchers.Checkpoint):
            t.ops.pop(0)
            settled = True
        return settled

    def _script_launch_children(self, t: CoreTrial) -> List[fx.Effect]:
        return [fx.LaunchTrial(c.request_id) for c in self.trials.values()
                if c.checkpoint_of == t.request_id and c.state is _S.PENDING]

    def _script_queued(self, t: CoreTrial, op: object) -> List[fx.Effect]:
        """A searcher operation was queued for a running script trial: a ``Close`` makes
        it stop (its next request hears it); a ``Checkpoint`` may be satisfied already."""
        if not self.scripted:
            return []
        if isinstance(op, searchers.Checkpoint):
            return self._script_launch_children(t) if self._script_settle_checkpoints(t) else []
        if isinstance(op, searchers.Close) and t.state is _S.RUNNING:
            return [fx.StopTrial(t.request_id)]
        return []

    def _script_next_op(self, t: CoreTrial) -> Optional[Assignment]:
        """For ``next_op``: a ``Checkpoint`` at the head of the queue that the latest
        checkpoint does not satisfy makes the trial stop (a ``Close`` to resume from);
        None when the queue goes on as for Trials."""
        if not (self.scripted and t.ops and isinstance(t.ops[0], searchers.Checkpoint)):
            return None
        t.current_op = t.ops.pop(0)
        if self._script_checkpointed_now(t):  # (satisfied since it was queued)
            t.current_op = None
            return None
        self._quiet_move(t, _S.STOPPING)
        return Assignment(searchers.Close(t.request_id), resume_later=True)

    def _script_exit_0(self, t: CoreTrial) -> List[fx.Effect]:
        """What exit code 0 of a script trial means (see the module docstring)."""
        if t.exit_reported:
            return self._complete(t, report_close=False)
        if self._script_closing(t):
            return self._complete(t, report_close=True)
        if t.state is _S.STOPPING:
            if isinstance(t.current_op, searchers.Checkpoint):  # (settled once written)
                return self._failed(t, "exit code 0", (
                    f"the script exited without the checkpoint the searcher asked for "
                    f"(at {steps_text(t.batches, self.step_unit)})"))
            if self._script_idle_behind(t):
                return self._script_idle_stop(t)
            out = self._requeue(t)
            if self._script_settle_checkpoints(t):
                out += self._script_launch_children(t)
            resumes = bool(t.ops) or self.searcher.self_paced
            out.append(fx.TrialLog(t.request_id, stopped_after_checkpoint(
                steps_text(t.checkpoint_batches, self.step_unit), resumes)))
            return out + self._move(t, _S.PENDING if resumes else _S.IDLE, "script exited")
        out = self._end(t, _S.COMPLETED, "Trial completed: its script exited 0")
        if self.state in _EXPERIMENT_STOPPING:  # the search is over for it either way
            return out
        return out + self._searcher_event(self.searcher.on_trial_finished(t.request_id))

    def _script_idle_behind(self, t: CoreTrial) -> bool:
        """The script was stopped while it waited for work (its operations done, none
        queued: e.g. at an ASHA rung) and its latest checkpoint is older than its steps."""
        return (t.current_op is None and not t.ops and not self.searcher.self_paced
                and t.batches > t.checkpoint_batches)

    def _script_idle_stop(self, t: CoreTrial) -> List[fx.Effect]:
        """Exit 0 of a script stopped while idle, its checkpoint behind its steps. It
        goes IDLE with its metrics kept: training again up to the steps the searcher
        already has results for would only repeat them, and, being older than trials
        waiting for a slot, it would take the slot back each time it is given up (the
        search never went on). The searcher's next Train, cumulative, resumes it from
        the checkpoint; reports at steps already stored are dropped, not counted twice."""
        unit = self.step_unit
        since = (f"its latest checkpoint at {steps_text(t.checkpoint_batches, unit)}"
                 if t.latest_checkpoint else "it has no checkpoint")
        line = (f"Trial stopped at {steps_text(t.batches, unit)}, {since} (the script "
                "stored none when it stopped); if the searcher asks for more it resumes "
                "from " + ("there" if t.latest_checkpoint else "the start"))
        return [fx.TrialLog(t.request_id, line)] + self._move(t, _S.IDLE, "script exited")

    def _script_validated(self, t: CoreTrial, steps: int,
                          metrics: Mapping[str, Any]) -> List[fx.Effect]:
        """A self-paced search decides on every validation a script reports; one it
        cannot use (no searcher metric beside the time metric) is logged, not fatal."""
        if not (self.scripted and self.searcher.self_paced) or t.exit_reported:
            return []
        try:
            ops = self.searcher.on_validation_reported(t.request_id, metrics, steps)
        except searchers.SearcherError as e:
            return [fx.TrialLog(t.request_id, f"The searcher ignored the validation at "
                                              f"{steps_text(steps, self.step_unit)}: {e}")]
        return self._searcher_event(ops)
