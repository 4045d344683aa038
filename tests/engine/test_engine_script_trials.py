"""ExperimentCore with script trials (a command entrypoint), driven by simulated scripts:
steps in the searcher's unit, exit codes, self-paced (time-metric) searches, PBT."""

from __future__ import annotations

import random
import uuid
from typing import Any, Dict, List, Optional, Set

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from determined import engine
from determined import searcher as searchers
from determined.config import validate_config
from determined.engine import ExperimentCore, TrialState

METRIC = "loss"


def script_config(searcher: Dict[str, Any], max_restarts: int = 2) -> Dict[str, Any]:
    return validate_config({
        "entrypoint": "python3 train.py",
        "hyperparameters": {"lr": {"type": "double", "minval": 0.01, "maxval": 1.0}},
        "searcher": {"metric": METRIC, **searcher},
        "max_restarts": max_restarts,
        "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/unused",
                               "save_trial_best": 1, "save_trial_latest": 1},
        "reproducibility": {"experiment_seed": 11},
    })


TIME_ASHA = {"name": "adaptive_asha", "max_trials": 8, "time_metric": "batches",
             "max_time": 16, "divisor": 2, "max_rungs": 3, "mode": "aggressive"}


def loss(hparams: Dict[str, Any], steps: int) -> float:
    return abs(hparams["lr"] - 0.3) + 1.0 / (1 + steps)


class Scripts:
    """Plays script processes around a core. ``style``: ``"ops"`` follows the
    operations (0.38 ``core.searcher.operations()``), ``"own"`` trains its own length
    and reports validations with the time metric every ``period`` steps. Every step
    checks ``should_stop`` (0.38 ``should_preempt``): the script then checkpoints and
    exits 0."""

    def __init__(self, core: ExperimentCore, style: str = "own", length: int = 16,
                 period: int = 2, checkpoint_each_op: bool = True, obeys_stop: bool = True):
        self.core = core
        self.style = style
        self.length = length
        self.period = period
        self.checkpoint_each_op = checkpoint_each_op
        self.obeys_stop = obeys_stop  # False: exits 0 on a stop without checkpointing
        self.steps: Dict[int, int] = {}  # request id -> steps of the running process
        self.op: Dict[int, Any] = {}  # ops style: the operation being worked on
        self.finished: Optional[str] = None
        self.logs: List[str] = []
        self.assignments: List[Any] = []
        self.starts: Dict[int, int] = {}
        self.closed_by_searcher: Set[int] = set()
        self.seq = 0

    def apply(self, effects: List[Any]) -> None:
        for e in effects:
            if isinstance(e, engine.TrialLog):
                self.logs.append(e.line)
            elif isinstance(e, engine.FinishExperiment):
                assert self.finished is None
                self.finished = e.state
        assert set(self.core.live()) == set(self.steps)

    def start(self, r: int) -> None:
        self.steps[r] = self.core.trial(r).checkpoint_batches
        self.starts[r] = self.starts.get(r, 0) + 1
        self.apply(self.core.trial_started(r))

    def checkpoint(self, r: int) -> None:
        t = self.core.trial(r)
        if t.latest_checkpoint and t.checkpoint_batches == self.steps[r]:
            return
        self.seq += 1
        self.apply(self.core.trial_checkpointed(r, self.steps[r], str(uuid.UUID(int=self.seq))))

    def exit(self, r: int, code: int = 0) -> None:
        self.apply(self.core.script_exited(r, code))  # the wrapper's report, then its exit
        del self.steps[r]
        self.op.pop(r, None)
        self.apply(self.core.trial_exited(r, code=code))

    def train_one(self, r: int) -> None:
        self.steps[r] += 1
        s = self.steps[r]
        self.apply(self.core.trial_trained(r, s, {"loss": 1.0}))
        self.apply(self.core.trial_progressed(r, s))

    def validate(self, r: int) -> Dict[str, Any]:
        s = self.steps[r]
        metrics = {METRIC: loss(self.core.trial(r).hparams, s), "batches": s}
        self.apply(self.core.trial_validated(r, s, {"validation_metrics": metrics}))
        return metrics

    def step(self, r: int) -> None:
        """One step of the script's loop."""
        if self.core.should_stop(r):
            self.checkpoint(r)
            self.exit(r, 0)
            return
        if self.style == "own":
            if self.steps[r] >= self.length:
                self.checkpoint(r)
                self.exit(r, 0)
                return
            self.train_one(r)
            if self.steps[r] % self.period == 0 or self.steps[r] == self.length:
                self.validate(r)
            return
        op = self.op.get(r)
        if op is None:
            answer = self.core.next_op(r)
            if answer is None:
                return  # blocked: asks again on its next step
            self.assignments.append(answer)
            op = answer.op
            assert not isinstance(op, searchers.Checkpoint), "a script got a Checkpoint"
            if isinstance(op, searchers.Close):
                if not answer.resume_later:
                    self.closed_by_searcher.add(r)
                if self.obeys_stop or not answer.resume_later:
                    self.checkpoint(r)
                self.exit(r, 0)
                return
            self.op[r] = op
        if isinstance(op, searchers.Train) and self.steps[r] < op.length.units:
            self.train_one(r)
            return
        if isinstance(op, searchers.Validate):
            metrics = self.validate(r)
            if self.checkpoint_each_op:
                self.checkpoint(r)
            self.apply(self.core.validate_op_completed(r, {"validation_metrics": metrics}))
        del self.op[r]

    def run(self, slots: int = 3, limit: int = 20000, rng: Optional[random.Random] = None,
            crash: float = 0.0, pauses: float = 0.0) -> None:
        for _ in range(limit):
            if self.core.finished:
                return
            if rng is not None and rng.random() < pauses:
                self.apply(self.core.pause())
                for r in list(self.steps):
                    self.step(r)  # each running script sees should_stop
                self.apply(self.core.activate())
            free = slots - len(self.steps)
            sched = self.core.schedulable()
            if sched and free <= 0:
                self.apply(self.core.suspend_idle())
            for r in sched[:max(free, 0)]:
                self.start(r)
            running = list(self.steps)
            if rng is not None:
                rng.shuffle(running)
            for r in running:
                if r not in self.steps:
                    continue
                if rng is not None and rng.random() < crash:
                    self.exit(r, 1)
                    continue
                self.step(r)
        raise AssertionError("the experiment did not finish")


def new(searcher: Dict[str, Any], **kwargs: Any) -> Scripts:
    config = kwargs.pop("config", None) or script_config(searcher,
                                                         kwargs.pop("max_restarts", 2))
    core = ExperimentCore(config)
    assert core.scripted
    sim = Scripts(core, **kwargs)
    sim.apply(core.start())
    return sim


def test_time_metric_asha_stops_scripts_and_never_resumes_them() -> None:
    sim = new(TIME_ASHA)
    sim.run()
    core = sim.core
    assert sim.finished == "COMPLETED"
    assert len(core.trials) == 8
    assert all(t.state is TrialState.COMPLETED for t in core.trials.values())
    assert all(n == 1 for n in sim.starts.values()), sim.starts  # none resumed
    stopped = [t for t in core.trials.values() if t.checkpoint_batches < 16]
    assert stopped, "the searcher stopped no trial early"
    assert core.progress() == 1.0
    assert any(line == "Script exited with code 0" for line in sim.logs)


def test_progress_follows_reported_progress_in_time_units() -> None:
    sim = new({**TIME_ASHA, "max_trials": 2, "max_concurrent_trials": 2})
    for r in sim.core.schedulable():
        sim.start(r)
    assert sim.core.progress() == 0.0
    assert sim.core.trial_progressed(1, 8) == []
    assert sim.core.progress() == pytest.approx(8 / 32)


def test_single_without_max_length_runs_until_the_script_exits() -> None:
    sim = new({"name": "single"}, length=5)
    core = sim.core
    sim.start(1)
    assert core.next_op(1) is None  # no operation: next_operation() blocks
    assert core.waiting() == []  # ... but the trial is not idle: nothing suspends it
    core.trial_progressed(1, 0.5)  # no length: progress is a fraction of the trial
    assert core.progress() == pytest.approx(0.5)
    sim.run()
    assert sim.finished == "COMPLETED"
    assert core.trial(1).state is TrialState.COMPLETED
    assert core.trial(1).checkpoint_batches == 5
    assert "Trial completed: its script exited 0" in sim.logs


def test_exit_0_of_a_paused_script_resumes_it_later() -> None:
    sim = new({"name": "single"}, length=6)
    core = sim.core
    sim.start(1)
    sim.step(1)
    sim.step(1)
    sim.apply(core.pause())
    assert core.should_stop(1)
    sim.step(1)  # checkpoints at 2 steps and exits 0
    assert core.trial(1).state is not TrialState.COMPLETED
    sim.apply(core.activate())
    assert core.schedulable() == [1]
    sim.run()
    assert sim.finished == "COMPLETED" and sim.starts[1] == 2
    assert core.trial(1).checkpoint_batches == 6
    # In the script's own unit, as the stop line said it ("at 2 steps").
    resumed = [line for line in sim.logs if "restoring checkpoint" in line]
    assert len(resumed) == 1 and resumed[0].endswith(" at 2 steps"), sim.logs


def test_steps_are_the_searcher_unit_without_a_batch_size() -> None:
    # Epochs need neither records_per_epoch nor global_batch_size: steps are epochs.
    sim = new({"name": "single", "max_length": {"epochs": 3}}, style="ops")
    core = sim.core
    sim.start(1)
    for _ in range(4):  # Train(3 epochs): three steps and the ask for the next op
        sim.step(1)
    assert core.trial(1).batches == 3
    sim.checkpoint(1)
    sim.exit(1, 1)  # a crash after the Train's checkpoint: Validate is what is left
    assert [type(op).__name__ for op in core.trial(1).ops] == ["Validate"]
    sim.run()
    assert sim.finished == "COMPLETED" and sim.starts[1] == 2
    assert core.trial(1).state is TrialState.COMPLETED


def test_a_contradicting_checkpoint_report_counts_in_the_searcher_unit() -> None:
    sim = new({"name": "single", "max_length": {"epochs": 3}}, style="ops")
    sim.start(1)
    uid = str(uuid.UUID(int=99))
    sim.apply(sim.core.trial_checkpointed(1, 1, uid))
    with pytest.raises(engine.EngineError, match="at 1 epoch; this report says .* at 2 epochs"):
        sim.core.trial_checkpointed(1, 2, uid)


def test_a_script_ending_its_own_way_completes_and_the_search_goes_on() -> None:
    searcher = {"name": "adaptive_asha", "max_trials": 4, "max_length": {"batches": 8},
                "divisor": 2, "max_rungs": 2, "mode": "aggressive"}
    sim = new(searcher, style="ops")
    core = sim.core
    first = core.schedulable()[0]
    sim.start(first)
    sim.step(first)
    sim.checkpoint(first)
    sim.exit(first, 0)  # it exits 0 without doing its Train and Validate
    assert core.trial(first).state is TrialState.COMPLETED
    assert core.searcher.is_finished(first)
    sim.run()
    assert sim.finished == "COMPLETED"
    assert len(core.trials) == 4


@pytest.mark.parametrize("checkpoint_each_op,slots", [(True, 3), (False, 3), (True, 1)])
def test_pbt_drives_scripts_without_handing_them_checkpoint_operations(
        checkpoint_each_op: bool, slots: int) -> None:
    # (one slot: idle trials are suspended, and an idle one's checkpoint may satisfy
    # its Checkpoint at once)
    searcher = {"name": "pbt", "population_size": 3, "num_rounds": 3,
                "length_per_round": {"batches": 4},
                "replace_function": {"truncate_fraction": 0.34},
                "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2}}
    sim = new(searcher, style="ops", checkpoint_each_op=checkpoint_each_op)
    sim.run(slots=slots)
    core = sim.core
    assert sim.finished == "COMPLETED"
    children = [t for t in core.trials.values() if t.checkpoint_of is not None]
    assert children
    for child in children:  # warm-started from the parent's checkpoint at the round end
        parent = core.trial(child.checkpoint_of)
        assert child.warm_start in core.checkpoints
        assert core.checkpoints[child.warm_start]["request_id"] == parent.request_id
        assert core.checkpoints[child.warm_start]["batches"] % 4 == 0
    stops = [a for a in sim.assignments if a.resume_later]
    if slots == 3:
        assert bool(stops) == (not checkpoint_each_op)


def test_a_script_that_exits_without_the_checkpoint_it_owes_fails() -> None:
    searcher = {"name": "pbt", "population_size": 2, "num_rounds": 2,
                "length_per_round": {"batches": 2},
                "replace_function": {"truncate_fraction": 0.5},
                "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2}}
    sim = new(searcher, style="ops", checkpoint_each_op=False, obeys_stop=False,
              max_restarts=0)
    sim.run()
    errored = [t for t in sim.core.trials.values() if t.state is TrialState.ERROR]
    assert errored and "without the checkpoint the searcher asked for" in errored[0].error


def test_a_validation_without_the_searcher_metric_is_logged_not_fatal() -> None:
    sim = new(TIME_ASHA)
    core = sim.core
    r = core.schedulable()[0]
    sim.start(r)
    sim.steps[r] = 4
    effects = core.trial_validated(r, 4, {"validation_metrics": {"batches": 4}})
    lines = [e.line for e in effects if isinstance(e, engine.TrialLog)]
    assert (f"The searcher ignored the validation at 4 steps: the validation metrics of "
            f"trial {r} lack the searcher metric 'loss' (received: batches)") in lines, lines
    assert core.trial(r).state is TrialState.RUNNING


def test_snapshot_keeps_script_progress() -> None:
    sim = new(TIME_ASHA)
    core = sim.core
    r = core.schedulable()[0]
    sim.start(r)
    core.trial_progressed(r, 6)
    restored = ExperimentCore.restore(core.config, core.snapshot())
    assert restored.scripted and restored.trial(r).progress_units == 6
    assert restored.progress() == core.progress() > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    max_trials=st.integers(1, 10),
    max_time=st.integers(1, 24),
    length=st.integers(1, 30),
    period=st.integers(1, 5),
    slots=st.integers(1, 4),
    crash=st.sampled_from([0.0, 0.02, 0.1]),
    pauses=st.sampled_from([0.0, 0.03]),
)
def test_time_metric_search_over_scripts_always_ends_with_every_trial_finished(
        seed: int, max_trials: int, max_time: int, length: int, period: int, slots: int,
        crash: float, pauses: float) -> None:
    searcher = {**TIME_ASHA, "max_trials": max_trials, "max_time": max_time}
    sim = new(searcher, length=length, period=period, max_restarts=3)
    sim.run(slots=slots, rng=random.Random(seed), crash=crash, pauses=pauses)
    core = sim.core
    assert sim.finished in ("COMPLETED", "ERROR")
    assert all(t.state in engine.TERMINAL for t in core.trials.values())
    assert len(core.trials) == max_trials
    if sim.finished == "ERROR":
        assert all(t.state is TrialState.ERROR for t in core.trials.values())
    for t in core.trials.values():  # stopped where it reached max_time, or its own end
        assert t.checkpoint_batches <= max(min(length, max_time + period - 1), 0)
