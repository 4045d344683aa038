"""Play the driver with synthetic trials: for tests and ``det preview-search``.

The simulated driver keeps one op queue per trial. A trial holds one of ``concurrency``
slots while it has work (0 = unlimited) and gives it back when idle; among trials with
work, the next op run is the oldest issued one, or a seeded random trial's next op when
``shuffle_seed`` is set (to exercise asynchrony). A ``Create(checkpoint_of=P)`` waits
until every op issued for ``P`` before it has run, and warm-starts from the checkpoint
that the latest of them wrote.

In a self-paced search (``searcher.time_metric``, or no ``max_length``) each trial plays
a script instead: it trains ``report_every`` units at a time (its ops), reporting a
validation with the time metric after each, until the searcher closes it or it reaches
its own length (``script_length``), when it finishes on its own.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import random
from typing import (
    Any,
    Callable,
    Collection,
    Deque,
    Dict,
    List,
    Mapping,
    Optional,
    Set,
    Tuple,
    Union,
)

from determined.searcher._operations import (
    Checkpoint,
    Close,
    Create,
    ExitedReason,
    Operation,
    Shutdown,
    Train,
    Validate,
)
from determined.searcher._searcher import Searcher, make_searcher

__all__ = ["SimulatedTrial", "SimulationResult", "simulate"]

MetricFn = Callable[[Dict[str, Any], int, int], float]
ExitSpec = Union[ExitedReason, Tuple[ExitedReason, int]]


@dataclasses.dataclass
class SimulatedTrial:
    """What happened to one trial in a simulation (lengths in the searcher's unit)."""

    request_id: int
    trial_seed: int
    hparams: Dict[str, Any]
    checkpoint_of: Optional[int] = None
    inherited_units: int = 0  # units the warm-start checkpoint had trained
    trained_units: int = 0
    train_lengths: List[int] = dataclasses.field(default_factory=list)
    validations: List[Tuple[int, float]] = dataclasses.field(default_factory=list)
    checkpoints: List[int] = dataclasses.field(default_factory=list)
    closed: bool = False
    exited: Optional[ExitedReason] = None

    def to_dict(self) -> Dict[str, Any]:
        d = dataclasses.asdict(self)
        d["exited"] = None if self.exited is None else self.exited.value
        d["validations"] = [list(v) for v in self.validations]
        return d


@dataclasses.dataclass
class SimulationResult:
    """Summary of a simulated search."""

    trials: Dict[int, SimulatedTrial]
    total_units: int
    op_log: List[Operation]
    shutdown: Optional[Shutdown]
    events: int
    progress: List[float]

    def to_dict(self) -> Dict[str, Any]:
        return {
            "trials": [t.to_dict() for _, t in sorted(self.trials.items())],
            "total_units": self.total_units,
            "op_log": [op.to_dict() for op in self.op_log],
            "shutdown": None if self.shutdown is None else self.shutdown.to_dict(),
            "events": self.events,
        }


class _SimTrial:
    def __init__(self, create: Create, seq: int) -> None:
        self.seq = seq
        self.summary = SimulatedTrial(
            create.request_id, create.trial_seed, create.hparams, create.checkpoint_of
        )
        self.queue: Deque[Tuple[int, Operation]] = collections.deque([(seq, create)])
        self.created = False
        self.ops_done = 0  # ops run after the Create
        self.checkpoint_seqs: List[Tuple[int, int]] = []  # (seq of Checkpoint op, units)

    @property
    def finished(self) -> bool:
        return self.summary.closed or self.summary.exited is not None


def simulate(
    config: Mapping[str, Any],
    metric_fn: MetricFn,
    *,
    concurrency: int = 0,
    shuffle_seed: Optional[int] = None,
    exits: Optional[Mapping[int, ExitSpec]] = None,
    restore_at: Collection[int] = (),
    max_events: int = 100_000,
    capacity: Optional[int] = None,
    capacity_at: Optional[Mapping[int, int]] = None,
    report_every: Optional[int] = None,
    script_length: Optional[Callable[[Dict[str, Any], int], int]] = None,
) -> SimulationResult:
    """Run a whole search against synthetic trials.

    Args:
        config: The normalized experiment config.
        metric_fn: ``metric_fn(hparams, trained_units, trial_seed) -> float``, the value of
            the searcher metric at each validation (``trained_units`` excludes any
            warm-start; the summary records that as ``inherited_units``).
        concurrency: Trials with work run at most this many at a time (0 = unlimited).
        shuffle_seed: If set, run ops in a random (seeded) interleaving across trials.
        exits: ``{request_id: reason}`` or ``{request_id: (reason, n)}``: the trial exits
            early right before its ``n``-th op after ``Create`` (default 0: before any
            training). A trial that finished first does not exit.
        restore_at: After these event counts (1 = right after ``start``), replace the
            searcher with ``Searcher.restore(config, <JSON round trip of snapshot()>)``.
        max_events: Safety limit on searcher calls.
        capacity: Tell the searcher, before ``start``, that this many trials can run at
            once (``Searcher.on_capacity_changed``); usually equal to ``concurrency``.
        capacity_at: ``{event_count: capacity}``: change the capacity after these events
            (an event of its own); ``concurrency`` follows it when it was equal to
            ``capacity``.
        report_every: Self-paced searches: units a trial trains between validations
            (default: a sixteenth of ``max_time``, at least 1).
        script_length: Self-paced searches: ``script_length(hparams, trial_seed)``, the
            units a trial's script trains before it exits on its own (default:
            ``max_time``, or 16 without a time metric).

    Returns:
        A :class:`SimulationResult`; ``shutdown`` is None only if the search got stuck.

    Example:
        >>> config = {
        ...     "hyperparameters": {"x": {"type": "double", "minval": 0.0, "maxval": 1.0}},
        ...     "searcher": {"name": "random", "metric": "loss", "max_trials": 3,
        ...                  "max_length": {"batches": 10}},
        ...     "reproducibility": {"experiment_seed": 0},
        ... }
        >>> result = simulate(config, lambda hp, units, seed: hp["x"] / units)
        >>> result.total_units, result.shutdown
        (30, Shutdown(failure=False, reason=''))
    """
    metric_name = config["searcher"]["metric"]
    exit_plan: Dict[int, Tuple[ExitedReason, int]] = {}
    for rid, spec in (exits or {}).items():
        exit_plan[rid] = (spec, 0) if isinstance(spec, ExitedReason) else (spec[0], spec[1])
    order_rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
    restore_points = set(restore_at)

    searcher: Searcher = make_searcher(config)
    self_paced = searcher.self_paced
    time_name = searcher.time_metric.name if searcher.time_metric else None
    whole = searcher.time_metric.max_time if searcher.time_metric else 16
    period = report_every or max(whole // 16, 1)
    trials: Dict[int, _SimTrial] = {}
    op_log: List[Operation] = []
    progress: List[float] = []
    running: List[int] = []
    has_work: Set[int] = set()  # trials with a non-empty queue
    shutdown: Optional[Shutdown] = None
    seq = 0
    events = 0
    total_units = 0

    def enqueue(ops: List[Operation]) -> None:
        nonlocal seq, shutdown
        for op in ops:
            op_log.append(op)
            seq += 1
            if shutdown is not None:
                raise AssertionError(f"operation after Shutdown: {op}")
            if isinstance(op, Shutdown):
                shutdown = op
            elif isinstance(op, Create):
                trials[op.request_id] = _SimTrial(op, seq)
                has_work.add(op.request_id)
            else:
                trial = trials[op.request_id]
                if trial.finished:
                    raise AssertionError(f"operation for a finished trial: {op}")
                trial.queue.append((seq, op))
                has_work.add(op.request_id)

    def call(fn: Callable[..., List[Operation]], *args: Any) -> None:
        nonlocal events, searcher
        events += 1
        if events > max_events:
            raise AssertionError(f"simulation exceeded max_events={max_events}")
        enqueue(fn(*args))
        progress.append(searcher.progress())
        if events in restore_points:
            snap = json.loads(json.dumps(searcher.snapshot()))
            searcher = Searcher.restore(config, snap)

    def scripted(trial: _SimTrial) -> bool:
        return self_paced and trial.created and not trial.finished

    def next_seq(rid: int) -> int:
        trial = trials[rid]
        return trial.queue[0][0] if trial.queue else trial.seq

    def ready(rid: int) -> bool:
        trial = trials[rid]
        if trial.finished:
            return False
        if not trial.queue:
            return scripted(trial)
        seq0, op = trial.queue[0]
        if isinstance(op, Create) and op.checkpoint_of is not None:
            parent = trials[op.checkpoint_of]
            return not parent.queue or parent.queue[0][0] > seq0
        return True

    def exit_trial(trial: _SimTrial, reason: ExitedReason) -> None:
        trial.queue.clear()
        has_work.discard(trial.summary.request_id)
        trial.summary.exited = reason
        call(searcher.on_trial_exited_early, trial.summary.request_id, reason)

    def run_one(rid: int) -> None:
        nonlocal total_units
        trial = trials[rid]
        s = trial.summary
        plan = exit_plan.get(rid)
        if trial.created and plan is not None and plan[1] == trial.ops_done:
            exit_trial(trial, plan[0])
            return
        if scripted(trial) and not trial.queue:
            script_step(trial)
            return
        op_seq, op = trial.queue.popleft()
        if not trial.queue:
            has_work.discard(rid)
        if isinstance(op, Create):
            if op.checkpoint_of is not None:
                ckpts = [u for q, u in trials[op.checkpoint_of].checkpoint_seqs if q < op_seq]
                if not ckpts:  # the parent exited before writing the checkpoint
                    exit_trial(trial, ExitedReason.ERRORED)
                    return
                s.inherited_units = ckpts[-1]
            trial.created = True
            call(searcher.on_trial_created, rid)
            return
        trial.ops_done += 1
        if isinstance(op, Train):
            if op.length.units < s.trained_units:
                raise AssertionError(f"Train length went backwards: {op}")
            total_units += op.length.units - s.trained_units
            s.trained_units = op.length.units
            s.train_lengths.append(op.length.units)
        elif isinstance(op, Validate):
            value = float(metric_fn(s.hparams, s.trained_units, s.trial_seed))
            s.validations.append((s.trained_units, value))
            call(searcher.on_validation_completed, rid, {metric_name: value})
        elif isinstance(op, Checkpoint):
            s.checkpoints.append(s.trained_units)
            trial.checkpoint_seqs.append((op_seq, s.trained_units))
        elif isinstance(op, Close):
            s.closed = True
            call(searcher.on_trial_closed, rid)

    def script_step(trial: _SimTrial) -> None:
        """A self-paced trial trains ``period`` more units and reports a validation; at
        its own length it finishes."""
        nonlocal total_units
        s = trial.summary
        trial.ops_done += 1
        own = script_length(s.hparams, s.trial_seed) if script_length else whole
        step = max(min(period, own - s.trained_units), 0)
        total_units += step
        s.trained_units += step
        value = float(metric_fn(s.hparams, s.trained_units, s.trial_seed))
        s.validations.append((s.trained_units, value))
        metrics = {metric_name: value}
        if time_name is not None:
            metrics[time_name] = s.trained_units
        call(searcher.on_validation_reported, s.request_id, metrics, s.trained_units)
        if s.trained_units >= own and not trial.queue and not trial.finished:
            s.closed = True
            call(searcher.on_trial_finished, s.request_id)

    capacity_plan = dict(capacity_at or {})
    follow = capacity is not None and concurrency == capacity
    if capacity is not None:
        enqueue(searcher.on_capacity_changed(capacity))
    call(searcher.start)
    while shutdown is None:
        if events in capacity_plan:
            new = capacity_plan.pop(events)
            if follow:
                concurrency = new
            call(searcher.on_capacity_changed, new)
            continue
        running = [r for r in running if ready(r)]
        in_slot = set(running)
        candidates = set(has_work) | {r for r, t in trials.items() if scripted(t)}
        waiting = sorted(
            (next_seq(r), r) for r in candidates if r not in in_slot and ready(r)
        )
        for _, rid in waiting:
            if concurrency and len(running) >= concurrency:
                break
            running.append(rid)
        if not running:
            break
        if order_rng is None:
            rid = min(running, key=next_seq)
        else:
            rid = running[order_rng.randrange(len(running))]
        run_one(rid)

    return SimulationResult(
        trials={rid: t.summary for rid, t in trials.items()},
        total_units=total_units,
        op_log=op_log,
        shutdown=shutdown,
        events=events,
        progress=progress,
    )
