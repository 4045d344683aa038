"""ExperimentCore: the lifecycle as a pure object, driven by simulated trials."""

from __future__ import annotations

import json
import math
import uuid
from typing import Any, Dict, List, Optional, Set, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from determined import engine
from determined import searcher as searchers
from determined.config import validate_config
from determined.engine import ExperimentCore, IllegalTransition, TrialState


def make_config(name: str = "random", max_restarts: int = 2, **searcher: Any) -> Dict[str, Any]:
    fields: Dict[str, Any] = {"name": name, "metric": "loss", "smaller_is_better": True,
                              "max_length": {"batches": 8}}
    if name == "random":
        fields.update(max_trials=3)
    if name == "adaptive_asha":
        fields.update(max_trials=6, max_length={"batches": 16}, divisor=2, max_rungs=3)
    fields.update(searcher)
    return validate_config({
        "hyperparameters": {"global_batch_size": 4,
                            "lr": {"type": "double", "minval": 0.01, "maxval": 1.0}},
        "searcher": fields, "max_restarts": max_restarts,
        "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/unused",
                               "save_trial_best": 1, "save_trial_latest": 1},
        "reproducibility": {"experiment_seed": 7}, "entrypoint": "model_def:Trial",
    })


def ck(n: int) -> str:
    """A checkpoint id (checkpoint ids are UUIDs)."""
    return str(uuid.UUID(int=n))


def loss(hparams: Dict[str, Any], batches: int) -> float:
    return abs(hparams["lr"] - 0.3) + 1.0 / (1 + batches)


class Sim:
    """Plays processes and a store around a core; checks invariants on every effect."""

    def __init__(self, core: ExperimentCore, nan_for: Tuple[int, ...] = ()):
        self.core = core
        self.nan_for = nan_for
        self.processes: Dict[int, int] = {}  # request id -> batches the process holds
        self.stored: Dict[Tuple[int, str], Set[int]] = {}  # (rid, kind) -> batches stored
        self.registered: List[str] = []
        self.deleted: List[str] = []
        self.finished: Optional[str] = None
        self.created: Set[int] = set()
        self.ckpt_seq = 0
        self.awaiting: Set[int] = set()  # processes blocked waiting for an operation
        self.woken: Set[int] = set()

    def apply(self, effects: List[Any]) -> None:
        for e in effects:
            if isinstance(e, engine.CreateTrial):
                assert e.request_id not in self.created
                self.created.add(e.request_id)
            elif isinstance(e, engine.StoreMetrics):
                rows = self.stored.setdefault((e.request_id, e.kind), set())
                assert e.batches not in rows, f"metric stored twice: {e}"
                rows.add(e.batches)
            elif isinstance(e, engine.RollbackMetrics):
                for (rid, _), rows in self.stored.items():
                    if rid == e.request_id:
                        rows -= {b for b in rows if b > e.batches}
            elif isinstance(e, engine.RegisterCheckpoint):
                self.registered.append(e.uuid)
            elif isinstance(e, engine.DeleteCheckpoint):
                assert e.uuid in self.registered and e.uuid not in self.deleted
                self.deleted.append(e.uuid)
            elif isinstance(e, engine.KillTrial):
                pass  # the process dies; the exit is a separate event
            elif isinstance(e, (engine.WakeTrial, engine.StopTrial)):
                self.woken.add(e.request_id)
            elif isinstance(e, engine.FinishExperiment):
                assert self.finished is None
                self.finished = e.state
        self.check()

    def check(self) -> None:
        live = set(self.core.live())
        assert live == set(self.processes), (live, self.processes)
        for r, t in self.core.trials.items():
            assert not (t.state in engine.LIVE and t.state in engine.TERMINAL)

    def start(self, r: int) -> None:
        self.processes[r] = self.core.trial(r).checkpoint_batches
        self.apply(self.core.trial_started(r))

    def exit(self, r: int, code: Optional[int] = 0, signal: Optional[int] = None) -> None:
        del self.processes[r]
        self.awaiting.discard(r)
        self.woken.discard(r)
        self.apply(self.core.trial_exited(r, code=code, signal=signal))

    def step(self, r: int) -> None:
        """One request of the trial's process."""
        core = self.core
        if r in self.awaiting and r not in self.woken:
            return  # blocked until the adapter hears WakeTrial or StopTrial
        was_waiting = r in self.awaiting
        self.awaiting.discard(r)
        self.woken.discard(r)
        if not was_waiting and core.should_stop(r):
            self._checkpoint(r)
            self.exit(r, 0)
            return
        answer = core.next_op(r)
        op = answer.op if answer is not None else None
        t = core.trial(r)
        if op is None:
            self.awaiting.add(r)
            return
        if isinstance(op, searchers.Train):
            target = op.length.units
            if target > self.processes[r]:
                self.processes[r] = target
                self.apply(core.trial_trained(r, target, {"loss": 1.0}))
        elif isinstance(op, searchers.Validate):
            b = self.processes[r]
            value = math.nan if r in self.nan_for else loss(t.hparams, b)
            name = core.cfg.metric
            self.apply(core.trial_validated(r, b, {"validation_metrics": {name: value}}))
            self.apply(core.validate_op_completed(r, {"validation_metrics": {name: value}}))
        elif isinstance(op, searchers.Checkpoint):
            self._checkpoint(r)
        elif isinstance(op, searchers.Close):
            self._checkpoint(r)  # the runner's final checkpoint
            self.exit(r, 0)

    def _checkpoint(self, r: int) -> None:
        t = self.core.trial(r)
        b = self.processes[r]
        if t.latest_checkpoint and t.checkpoint_batches == b:
            return
        self.ckpt_seq += 1
        self.apply(self.core.trial_checkpointed(r, b, ck(self.ckpt_seq)))

    def run_to_end(self, slots: int = 2, limit: int = 5000) -> None:
        for _ in range(limit):
            if self.core.finished:
                return
            free = slots - len(self.processes)
            sched = self.core.schedulable()
            if sched and free <= 0:
                self.apply(self.core.suspend_idle())
            for r in sched[:max(free, 0)]:
                self.start(r)
            for r in list(self.processes):
                if r in self.processes:
                    self.step(r)
        raise AssertionError("the experiment did not finish")


def new(config: Dict[str, Any]) -> Tuple[ExperimentCore, Sim]:
    core = ExperimentCore(config)
    sim = Sim(core)
    sim.apply(core.start())
    return core, sim


def test_transition_table_rejects_illegal_moves() -> None:
    core, sim = new(make_config("single"))
    with pytest.raises(engine.EngineError, match="has no process"):
        core.trial_exited(1, code=0)
    t = core.trial(1)
    t.state = TrialState.COMPLETED
    with pytest.raises(IllegalTransition, match="cannot move from COMPLETED to RUNNING"):
        core.trial_started(1)


def test_single_search_completes_with_checkpoints_and_logs() -> None:
    core, sim = new(make_config("single"))
    logs: List[str] = []
    orig = sim.apply

    def apply(effects: List[Any]) -> None:
        logs.extend(e.line for e in effects if isinstance(e, engine.TrialLog))
        orig(effects)

    sim.apply = apply  # type: ignore[method-assign]
    sim.run_to_end()
    assert sim.finished == "COMPLETED"
    assert logs[0] == "Trial starts" and logs[-1] == "Trial completed"
    assert core.trial(1).state is TrialState.COMPLETED


def test_failure_restarts_from_latest_checkpoint_up_to_max_restarts() -> None:
    core, sim = new(make_config("single", max_restarts=2))
    events: List[Any] = []
    sim.start(1)
    sim.step(1)  # Train 8
    sim.apply(core.trial_checkpointed(1, 8, ck(1000)))
    del sim.processes[1]
    events = core.trial_exited(1, code=3)
    sim.apply(events)
    lines = [e.line for e in events if isinstance(e, engine.TrialLog)]
    assert f"Trial failed (exit code 3); restart 1 of 2 from {ck(1000)} at 8 batches" in lines
    assert core.trial(1).state is TrialState.PENDING
    sim.start(1)
    assert sim.processes[1] == 8
    del sim.processes[1]
    sim.apply(core.trial_exited(1, signal=9))
    sim.start(1)
    del sim.processes[1]
    events = core.trial_exited(1, code=1, message="ValueError in train_batch")
    sim.apply(events)
    assert core.trial(1).state is TrialState.ERROR
    assert any("no restarts left (2 of 2" in e.line for e in events
               if isinstance(e, engine.TrialLog))
    assert sim.finished == "ERROR"


def test_log_lines_agree_in_number_with_one_batch() -> None:
    """A checkpoint at 1 batch is "at 1 batch" in the trial log, not "at 1 batches"."""
    core, sim = new(make_config("single", max_length={"batches": 1}))
    sim.start(1)
    sim.step(1)  # Train 1
    sim.apply(core.trial_checkpointed(1, 1, ck(1000)))
    del sim.processes[1]
    events = core.trial_exited(1, code=3)
    lines = [e.line for e in events if isinstance(e, engine.TrialLog)]
    assert f"Trial failed (exit code 3); restart 1 of 2 from {ck(1000)} at 1 batch" in lines


def test_a_restart_without_a_checkpoint_is_from_the_beginning() -> None:
    """Not "from the beginning at 0 batches"."""
    core, sim = new(make_config("single"))
    sim.start(1)
    del sim.processes[1]
    events = core.trial_exited(1, code=3)
    lines = [e.line for e in events if isinstance(e, engine.TrialLog)]
    assert "Trial failed (exit code 3); restart 1 of 2 from the beginning" in lines, lines


def test_idle_trial_crash_does_not_replay_its_validate() -> None:
    core, sim = new(make_config("adaptive_asha", max_restarts=3))
    for _ in range(200):
        sim.apply(core.suspend_idle()) if not core.schedulable() else None
        for r in core.schedulable()[:2 - len(sim.processes)]:
            sim.start(r)
        for r in list(sim.processes):
            sim.step(r)
        if core.waiting():
            break
    r = core.waiting()[0]
    sim.exit(r, signal=9)  # would replay Validate if it were requeued
    assert not any(isinstance(o, searchers.Validate) for o in core.trial(r).ops)
    sim.run_to_end()
    assert sim.finished == "COMPLETED"


def test_nan_is_never_best_and_gc_keeps_the_finite_best() -> None:
    cfg = make_config("random", max_trials=2, smaller_is_better=False)
    core = ExperimentCore(cfg)
    sim = Sim(core, nan_for=(2,))
    sim.apply(core.start())
    assert not core.is_best(float("nan"))
    sim.run_to_end(slots=1)
    assert core.best_value is not None and not math.isnan(core.best_value)
    assert core.trial(2).best_metric is None
    assert core.best_checkpoint() is not None
    assert core.checkpoints[core.best_checkpoint()]["request_id"] == 1


def test_pause_shows_paused_and_stops_running_trials() -> None:
    core, sim = new(make_config("single"))
    sim.start(1)
    effects = core.pause()
    assert engine.StopTrial(1) in effects
    assert engine.UpdateTrial(1, {"state": "PAUSED"}) in effects
    sim.apply(effects)
    sim.step(1)  # checkpoints and exits
    assert core.trial(1).state is TrialState.PENDING and core.schedulable() == []
    effects = core.activate()
    assert engine.UpdateTrial(1, {"state": "ACTIVE"}) in effects
    sim.apply(effects)
    sim.run_to_end()
    assert sim.finished == "COMPLETED"


def test_trials_of_an_experiment_created_paused_show_paused() -> None:
    core = ExperimentCore(make_config("random", max_trials=2))
    effects = core.start(activate=False)
    for rid in (1, 2):
        created = effects.index(next(e for e in effects if isinstance(e, engine.CreateTrial)
                                     and e.request_id == rid))
        assert engine.UpdateTrial(rid, {"state": "PAUSED"}) in effects[created + 1:]
    sim = Sim(core)
    sim.apply(effects)
    assert core.schedulable() == []
    assert engine.UpdateTrial(1, {"state": "ACTIVE"}) in core.activate()


def test_a_failed_trials_error_is_stored_bounded_and_its_log_names_the_last_line() -> None:
    """The process's output (a deep traceback here) is the trial's stored error, its
    first line and as many of its last as fit in ERROR_CHARS; the log's line and the
    core's ``error`` name its last line; each failure stores its own."""
    core, sim = new(make_config("single", max_restarts=1))
    sim.start(1)
    del sim.processes[1]
    frames = [f'  File "train.py", line {i}, in f{i}\n    f{i + 1}()' for i in range(300)]
    trace = "\n".join(["Traceback (most recent call last):", *frames, "RecursionError: deep"])
    effects = core.trial_exited(1, code=1, message=trace)
    (stored,) = [e.fields["error"] for e in effects
                 if isinstance(e, engine.UpdateTrial) and "error" in e.fields]
    lines = stored.splitlines()
    assert len(stored) <= engine.ERROR_CHARS < len(trace)
    assert lines[:2] == ["Trial failed (exit code 1): Traceback (most recent call last):", "…"]
    assert lines[-3:] == ['  File "train.py", line 299, in f299', "    f300()",
                          "RecursionError: deep"]
    logged = [e.line for e in effects if isinstance(e, engine.TrialLog)]
    assert logged[0].startswith("Trial failed (exit code 1): RecursionError: deep; restart 1")
    assert core.trial(1).error == "Trial failed (exit code 1): RecursionError: deep"
    sim.start(1)
    del sim.processes[1]
    effects = core.trial_exited(1, code=3)  # without a word: the first failure's goes
    assert engine.UpdateTrial(1, {"error": "Trial failed (exit code 3)"}) in effects
    assert core.trial(1).state is TrialState.ERROR


def test_killed_trial_log_says_killed() -> None:
    core, sim = new(make_config("random", max_trials=2))
    sim.start(1)
    effects = core.kill_trial(1)
    assert engine.KillTrial(1) in effects
    del sim.processes[1]
    effects = core.trial_exited(1, signal=9)
    lines = [e.line for e in effects if isinstance(e, engine.TrialLog)]
    assert lines == ["Trial killed (killed by signal 9)"]
    assert core.trial(1).state is TrialState.CANCELED


def test_snapshot_round_trips_through_json() -> None:
    core, sim = new(make_config("adaptive_asha"))
    for _ in range(30):
        for r in core.schedulable()[:2 - len(sim.processes)]:
            sim.start(r)
        for r in list(sim.processes):
            sim.step(r)
    snap = json.loads(json.dumps(core.snapshot()))
    again = ExperimentCore.restore(make_config("adaptive_asha"), snap)
    assert again.snapshot() == core.snapshot()


def test_a_start_before_a_restart_is_said_once() -> None:
    """A trial's start is saved in the snapshot (the adapter restores the last one it
    saved): restored before the trial's first checkpoint, the trial resumes; its log
    said "Trial starts" twice."""
    cfg = make_config("single")
    core = ExperimentCore(cfg)
    saved: List[Any] = []

    def apply(effects: List[Any]) -> List[str]:
        if any(isinstance(e, engine.SaveSnapshot) for e in effects):
            saved[:] = [json.loads(json.dumps(core.snapshot()))]
        return [e.line for e in effects if isinstance(e, engine.TrialLog)]

    apply(core.start())
    assert apply(core.trial_started(1)) == ["Trial starts"]
    core = ExperimentCore.restore(cfg, saved[0])  # the master or driver restarted
    assert apply(core.recover()) == [
        "Trial process lost (driver or master restarted); it resumes at 0 batches"]
    assert apply(core.trial_started(1)) == ["Trial resumes"]


def test_warm_start_source_checkpoint_for_every_trial() -> None:
    core = ExperimentCore(make_config("random", max_trials=2), source_checkpoint="src-uuid")
    effects = core.start()
    creates = [e for e in effects if isinstance(e, engine.CreateTrial)]
    assert [c.warm_start for c in creates] == ["src-uuid", "src-uuid"]
    assert core.restore_point(1) == ("src-uuid", True)


# -------------------------------------------------------------- property tests

ACTIONS = st.lists(st.tuples(st.sampled_from(
    ["start", "step", "step", "step", "crash", "kill", "pause", "activate", "suspend",
     "restore", "recover"]), st.integers(0, 20)), max_size=60)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=ACTIONS, name=st.sampled_from(["random", "adaptive_asha", "grid_like"]))
def test_random_event_sequences_keep_invariants(actions: List[Tuple[str, int]],
                                                name: str) -> None:
    cfg = make_config("random", max_trials=3) if name == "grid_like" else make_config(name)
    core, sim = new(cfg)
    for action, n in actions:
        if core.finished:
            break
        live = sorted(sim.processes)
        if action == "start" and core.schedulable():
            sim.start(core.schedulable()[n % len(core.schedulable())])
        elif action == "step" and live:
            sim.step(live[n % len(live)])
        elif action == "crash" and live:
            sim.exit(live[n % len(live)], code=1)
        elif action == "kill" and core.trials:
            r = sorted(core.trials)[n % len(core.trials)]
            sim.apply(core.kill_trial(r))
            if r in sim.processes:
                sim.exit(r, signal=9)
        elif action == "pause":
            sim.apply(core.pause())
        elif action == "activate":
            sim.apply(core.activate())
        elif action == "suspend":
            sim.apply(core.suspend_idle())
        elif action == "restore":
            core = ExperimentCore.restore(cfg, json.loads(json.dumps(core.snapshot())))
            sim.core = core
        elif action == "recover":  # the driver died: every process is gone
            core = ExperimentCore.restore(cfg, json.loads(json.dumps(core.snapshot())))
            sim.core = core
            sim.processes.clear()
            sim.awaiting.clear()
            sim.woken.clear()
            sim.apply(core.recover())
    sim.apply(core.activate())
    sim.run_to_end(slots=2)
    assert sim.finished in ("COMPLETED", "ERROR")
    assert core.searcher.shutdown is not None
    assert all(t.state in engine.TERMINAL for t in core.trials.values())
    # Every searcher trial was created once and answered (closed or exited early).
    assert sim.created == set(core.trials) == set(core.searcher.request_ids)
    assert all(core.searcher.is_finished(r) for r in core.trials)
    assert set(sim.deleted) <= set(sim.registered)


def test_crash_right_after_a_validate_does_not_replay_it() -> None:
    core, sim = new(make_config("random", max_trials=1))
    sim.start(1)
    sim.step(1)  # Train
    sim.step(1)  # Validate, reported done
    sim.exit(1, code=1)
    assert not any(isinstance(o, searchers.Validate) for o in core.trial(1).ops)
    sim.run_to_end()
    assert sim.finished == "COMPLETED"


def test_gc_ignores_nan_metrics() -> None:
    from determined.storage import CheckpointRecord, checkpoints_to_keep

    nan = float("nan")
    cks = [CheckpointRecord("a", 1, 1, nan), CheckpointRecord("b", 1, 2, 0.5),
           CheckpointRecord("c", 1, 3, nan), CheckpointRecord("d", 2, 4, 0.9)]
    for smaller in (True, False):
        best = "b" if smaller else "d"
        assert checkpoints_to_keep(cks, 1, 0, 0, smaller) == {best}


@pytest.mark.parametrize("bad", ["../etc", "", "ck-1", None, str(uuid.UUID(int=5)) + "/.."])
def test_checkpoint_ids_are_validated(bad: Any) -> None:
    core, sim = new(make_config("single"))
    sim.start(1)
    with pytest.raises(engine.EngineError, match="Expected a checkpoint id in UUID form"):
        core.trial_checkpointed(1, 0, bad)
    sim.apply(core.trial_checkpointed(1, 0, ck(1)))
    before = core.snapshot()
    assert core.trial_checkpointed(1, 0, ck(1)) == []  # a retried report: nothing changes
    assert core.snapshot() == before
    with pytest.raises(engine.EngineError, match="already reported.* at 0 batches; .* at 10 batches"):
        core.trial_checkpointed(1, 10, ck(1))


@pytest.mark.parametrize("unit, per_epoch, expected", [
    ("batches", None, 0.25), ("records", None, 0.25), ("epochs", 8, 0.25)])
def test_progress_counts_trained_units_before_any_validation(unit, per_epoch, expected) -> None:
    """Progress, in the searcher's unit, counts what a trial has trained before it
    validates (both adapters store this number)."""
    gbs = 4
    lengths = {"batches": 8, "records": 8 * gbs, "epochs": 8 * gbs // (per_epoch or 1)}
    config = make_config("single")
    config["searcher"]["max_length"] = {unit: lengths[unit]}
    if per_epoch:
        config["records_per_epoch"] = per_epoch
    core, sim = new(validate_config(config))
    sim.start(1)
    assert core.progress() == 0.0
    sim.apply(core.trial_trained(1, 2, {"loss": 1.0}))  # 2 of 8 batches
    assert core.progress() == expected


def test_progress_counts_part_of_an_epoch() -> None:
    """A trial part-way through an epoch shows that part: 2 batches of 4 records are 0.8
    of a 10-record epoch, 0.2 of 4 epochs (not 0 until a whole epoch is done)."""
    config = make_config("single")
    config["searcher"]["max_length"] = {"epochs": 4}
    config["records_per_epoch"] = 10
    core, sim = new(validate_config(config))
    sim.start(1)
    sim.apply(core.trial_trained(1, 2, {"loss": 1.0}))
    assert core.progress() == pytest.approx(0.2)
