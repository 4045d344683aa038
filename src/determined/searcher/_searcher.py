"""The driver-facing searcher: one search method plus trial bookkeeping and snapshots.

Drivers (the local runner, the cluster master) use only :class:`Searcher`, built by
:func:`make_searcher`. Each event method returns the operations to apply, in order;
operations for one request id must run in order. The driver contract:

- call ``start()`` once, then report events as they happen, one at a time;
- ``on_trial_created`` once the trial for a ``Create`` exists;
- ``on_validation_completed`` once per ``Validate`` op (not for validations the driver
  runs on its own, e.g. for ``min_validation_period``);
- ``on_trial_closed`` once a ``Close`` op finished;
- ``on_trial_exited_early`` when a trial stopped for good without ``Close`` (errors past
  ``max_restarts``, user stop, invalid hyperparameters); such a trial needs no ``Close``;
- for script trials: ``on_validation_reported`` for every validation a trial reports
  on its own (self-paced searches decide on these: ``searcher.time_metric``), and
  ``on_trial_finished`` when a trial's script ended it successfully without a ``Close``.

``Shutdown`` comes last, once the search is over and every trial is closed or exited.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import random
from typing import Any, Dict, List, Mapping, Optional, Type

from determined.common.frozen_entries import FrozenEntries
from determined.config import Length, MetricOrder, Unit, missing_metric_text
from determined.searcher._adaptive import AdaptiveSearch
from determined.searcher._adaptive_simple import AdaptiveSimpleSearch
from determined.searcher._asha import AdaptiveASHASearch
from determined.searcher._base import SearchContext, SearchMethod
from determined.searcher._checks import check_int, require
from determined.searcher._errors import SearcherError
from determined.searcher._grid import GridSearch
from determined.searcher._hparams import validate_space
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
from determined.searcher._pbt import PBTSearch
from determined.searcher._random import RandomSearch
from determined.searcher._rungs import BracketRungs
from determined.searcher._sampler import Sampler, make_sampler
from determined.searcher._single import SingleSearch
from determined.searcher._time_metric import TimeMetric, time_value

__all__ = ["SEARCH_METHODS", "Searcher", "make_searcher"]

#: ``searcher.name`` -> search method class (each has ``from_config(cfg, hparams)``).
SEARCH_METHODS: Dict[str, Type[Any]] = {
    "single": SingleSearch,
    "random": RandomSearch,
    "grid": GridSearch,
    "adaptive_asha": AdaptiveASHASearch,
    "adaptive_simple": AdaptiveSimpleSearch,
    "adaptive": AdaptiveSearch,
    "pbt": PBTSearch,
}

_SNAPSHOT_VERSION = 1


@dataclasses.dataclass
class _Trial:
    request_id: int
    trial_seed: int
    hparams: Dict[str, Any]
    checkpoint_of: Optional[int]
    created: bool = False
    train_units: int = 0  # cumulative target of the latest Train op
    pending_validations: List[int] = dataclasses.field(default_factory=list)
    validated_units: int = 0
    close_requested: bool = False
    closed: bool = False
    exited: Optional[str] = None
    reported_time: float = 0.0  # highest time-metric value (self-paced searches)

    @property
    def finished(self) -> bool:
        return self.closed or self.exited is not None

    def to_dict(self) -> Dict[str, Any]:
        # By hand: dataclasses.asdict deep-copies every field, and snapshots call this
        # for every trial after every event.
        return {
            "request_id": self.request_id, "trial_seed": self.trial_seed,
            "hparams": copy.deepcopy(self.hparams), "checkpoint_of": self.checkpoint_of,
            "created": self.created, "train_units": self.train_units,
            "pending_validations": list(self.pending_validations),
            "validated_units": self.validated_units, "close_requested": self.close_requested,
            "closed": self.closed, "exited": self.exited,
            "reported_time": self.reported_time,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "_Trial":
        return cls(**copy.deepcopy(dict(d)))


class Searcher:
    """Drives one search method for one experiment.

    Args:
        method: The search algorithm.
        hyperparameters: The normalized hyperparameter space.
        experiment_seed: Seeds the one experiment RNG (hparams and trial seeds).
        metric: Name of the validation metric to optimise.
        smaller_is_better: Whether smaller metric values are better.
        sampler: Where new trials' hyperparameters come from (default: random); it is
            told every result with the length it was measured at.
        config: The experiment config ``metric`` came from, so that a validation
            without it is worded in the user's terms (``config.missing_metric_text``:
            an assumed default metric says so); default: a config naming just ``metric``.

    Example:
        >>> config = {
        ...     "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 0.2}},
        ...     "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
        ...     "reproducibility": {"experiment_seed": 1},
        ... }
        >>> s = make_searcher(config)
        >>> [type(op).__name__ for op in s.start()]
        ['Create', 'Train', 'Validate']
        >>> s.on_trial_created(1), s.on_validation_completed(1, {"loss": 0.5})
        ([], [Close(request_id=1)])
        >>> s.on_trial_closed(1)
        [Shutdown(failure=False, reason='')]
    """

    def __init__(
        self,
        method: SearchMethod,
        hyperparameters: Mapping[str, Any],
        experiment_seed: int,
        metric: str,
        smaller_is_better: bool = True,
        sampler: Optional[Sampler] = None,
        config: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if not isinstance(method, SearchMethod):
            raise ValueError(f"Expected a SearchMethod. Received: method={method!r}")
        validate_space(hyperparameters)
        check_int("experiment_seed", experiment_seed, min_value=0, max_value=2**31 - 1)
        if not isinstance(metric, str) or not metric:
            raise ValueError(
                f"Expected metric to be a non-empty string. Received: metric={metric!r}"
            )
        if not isinstance(smaller_is_better, bool):
            raise ValueError(
                "Expected smaller_is_better to be a bool. "
                f"Received: smaller_is_better={smaller_is_better!r}"
            )
        self.method = method
        self.metric = metric
        self._metric_config: Dict[str, Any] = {"searcher": {"metric": metric}}
        internal = config.get("internal") if config is not None else None
        if isinstance(internal, Mapping):
            self._metric_config["internal"] = internal
        self.smaller_is_better = smaller_is_better
        self.experiment_seed = experiment_seed
        self._ctx = SearchContext(hyperparameters, random.Random(experiment_seed), sampler=sampler)
        self._trials: Dict[int, _Trial] = {}
        self._frozen = FrozenEntries()  # a finished trial never changes again
        self._started = False
        self._shutdown: Optional[Shutdown] = None
        self._capacity: Optional[int] = None

    # Read-only views for drivers.

    @property
    def name(self) -> str:
        return self.method.name

    @property
    def unit(self) -> Optional[Unit]:
        """The unit of ``Train`` lengths; None for a self-paced search."""
        return self.method.unit

    @property
    def self_paced(self) -> bool:
        """Trials get no ``Train``/``Validate``: their scripts train their own length."""
        return self.method.self_paced

    @property
    def time_metric(self) -> Optional[TimeMetric]:
        return self.method.time_metric

    @property
    def sampler(self) -> Sampler:
        return self._ctx.sampler

    @property
    def shutdown(self) -> Optional[Shutdown]:
        """The ``Shutdown`` once emitted, else None."""
        return self._shutdown

    @property
    def request_ids(self) -> List[int]:
        return sorted(self._trials)

    def rung_table(self) -> Optional[List[BracketRungs]]:
        """The search method's brackets and rungs with the results it recorded at each,
        best first, metrics as validated (NaN for a trial ranked worst because it
        exited); None when the method has no rungs."""
        table = self.method.rung_table()
        if table is None:
            return None
        order = MetricOrder(self.smaller_is_better)

        def shown(metric: float) -> float:
            return order.signed(metric) if math.isfinite(metric) else math.nan

        return [dataclasses.replace(b, results=tuple(
            tuple(dataclasses.replace(r, metric=shown(r.metric)) for r in rung)
            for rung in b.results)) for b in table]

    def trial_hparams(self, request_id: int) -> Dict[str, Any]:
        return copy.deepcopy(self._trial(request_id).hparams)

    def trial_seed(self, request_id: int) -> int:
        return self._trial(request_id).trial_seed

    def trained_length(self, request_id: int) -> Optional[Length]:
        """The cumulative length the latest ``Train`` op asked of the trial (None when
        self-paced)."""
        unit = self.unit
        return None if unit is None else Length(unit, self._trial(request_id).train_units)

    def is_finished(self, request_id: int) -> bool:
        """Closed (after ``on_trial_closed``) or exited early."""
        return self._trial(request_id).finished

    def _trial(self, request_id: int) -> _Trial:
        try:
            return self._trials[request_id]
        except KeyError:
            raise SearcherError(
                f"Expected a request id the searcher created. Received: request_id={request_id!r}"
            ) from None

    # Events.

    def start(self) -> List[Operation]:
        """Initial operations; call once per experiment (not after ``restore``)."""
        if self._started:
            raise SearcherError("start() was already called for this searcher")
        self._started = True
        return self._apply(self.method.initial_operations(self._ctx))

    def _live_trial(self, request_id: int, event: str) -> _Trial:
        if not self._started or self._shutdown is not None:
            raise SearcherError(f"{event}: the search is not running")
        trial = self._trial(request_id)
        if trial.finished:
            raise SearcherError(f"{event}: trial {request_id} is already finished")
        return trial

    def on_trial_created(self, request_id: int) -> List[Operation]:
        trial = self._live_trial(request_id, "on_trial_created")
        if trial.created:
            return []
        trial.created = True
        return self._apply(self.method.on_trial_created(self._ctx, request_id))

    def on_validation_completed(
        self, request_id: int, metrics: Mapping[str, Any]
    ) -> List[Operation]:
        """A ``Validate`` finished with these validation metrics.

        Raises:
            SearcherError: ``metrics`` lacks the searcher metric or it is not a number,
                or no ``Validate`` was outstanding for the trial.
        """
        trial = self._live_trial(request_id, "on_validation_completed")
        if not trial.pending_validations:
            raise SearcherError(
                f"on_validation_completed: trial {request_id} has no outstanding Validate"
            )
        signed = self._signed_metric(request_id, metrics)
        trial.validated_units = trial.pending_validations.pop(0)
        self._ctx.sampler.observe(trial.hparams, trial.validated_units, signed)
        return self._apply(self.method.on_validation_completed(self._ctx, request_id, signed))

    def _signed_metric(self, request_id: int, metrics: Mapping[str, Any]) -> float:
        """The searcher metric of a validation report, signed so that smaller is better
        (NaN ranks worst)."""
        if not isinstance(metrics, Mapping):
            raise SearcherError(
                f"Expected the validation metrics of trial {request_id} to be a mapping. "
                f"Received: {metrics!r}"
            )
        if self.metric not in metrics:
            raise SearcherError(missing_metric_text(
                self._metric_config, map(str, metrics),
                where=f"the validation metrics of trial {request_id}"))
        value = metrics[self.metric]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SearcherError(
                f"Expected the searcher metric {self.metric!r} to be a number. "
                f"Received: {self.metric}={value!r}"
            )
        return MetricOrder(self.smaller_is_better).signed(value)  # NaN ranks worst: inf

    def on_validation_reported(
        self, request_id: int, metrics: Mapping[str, Any], steps: int = 0
    ) -> List[Operation]:
        """A script trial reported validation ``metrics`` at ``steps`` on its own (not
        for a ``Validate`` op). Only self-paced searches use it: the value of
        ``searcher.time_metric`` (else ``steps``) measures the trial's training, and the
        method may close the trial. A report without the time metric, or for a trial
        already asked to close, changes nothing.

        Raises:
            SearcherError: the time metric is present but not a number >= 0, or the
                searcher metric is missing or not a number.
        """
        trial = self._live_trial(request_id, "on_validation_reported")
        if not self.self_paced or trial.close_requested:
            return []
        name = self.time_metric.name if self.time_metric else None
        try:
            time = float(steps) if name is None else time_value(metrics, name)
        except ValueError as e:
            raise SearcherError(f"Trial {request_id}: {e}") from None
        if time is None:
            return []
        signed = self._signed_metric(request_id, metrics)
        if name is not None:
            trial.reported_time = max(trial.reported_time, time)
        self._ctx.sampler.observe(trial.hparams, int(time), signed)
        return self._apply(self.method.on_validation_reported(self._ctx, request_id, time, signed))

    def on_trial_finished(self, request_id: int) -> List[Operation]:
        """The trial's script exited successfully without (or before) the ``Close`` it
        was sent: the trial is closed. A searcher-requested close is reported as
        ``on_trial_closed``; otherwise the method decides what the trial's end means
        (self-paced: it is done; else whatever it still owed counts as not delivered)."""
        trial = self._live_trial(request_id, "on_trial_finished")
        if trial.close_requested:
            return self.on_trial_closed(request_id)
        trial.close_requested = trial.closed = True
        trial.pending_validations = []
        return self._apply(self.method.on_trial_finished(self._ctx, request_id))

    def on_trial_closed(self, request_id: int) -> List[Operation]:
        trial = self._live_trial(request_id, "on_trial_closed")
        if not trial.close_requested:
            raise SearcherError(f"on_trial_closed: trial {request_id} was not asked to close")
        trial.closed = True
        return self._apply(self.method.on_trial_closed(self._ctx, request_id))

    def on_trial_exited_early(self, request_id: int, reason: ExitedReason) -> List[Operation]:
        """The trial stopped for good; it needs no ``Close``. Repeats are ignored."""
        reason = ExitedReason(reason)
        if not self._started or self._shutdown is not None:
            raise SearcherError("on_trial_exited_early: the search is not running")
        trial = self._trial(request_id)
        if trial.finished:
            return []
        trial.exited = reason.value
        if trial.pending_validations:  # it counts as the worst result where it was heading
            self._ctx.sampler.observe(trial.hparams, trial.pending_validations[0], math.inf)
        trial.pending_validations = []
        return self._apply(self.method.on_trial_exited_early(self._ctx, request_id, reason))

    def on_capacity_changed(self, capacity: int) -> List[Operation]:
        """``capacity`` trials can run at once: the slots available to the experiment
        divided by ``resources.slots_per_trial``. Call it before ``start()`` when known and
        again whenever it changes. Searchers with automatic concurrency
        (``max_concurrent_trials: 0``) then keep about that many trials busy instead of
        opening a fixed number; others ignore it. Repeats of the same value do nothing.
        """
        capacity = check_int("capacity", capacity, min_value=1)
        if capacity == self._capacity or self._shutdown is not None:
            return []
        self._capacity = capacity
        ops = self.method.on_capacity_changed(self._ctx, capacity)
        return self._apply(ops) if self._started else ops

    @property
    def capacity(self) -> Optional[int]:
        """The latest ``on_capacity_changed`` value (None: never told)."""
        return self._capacity

    def progress(self, trained_units: Optional[Mapping[int, float]] = None) -> float:
        """Fraction of the search done, in [0, 1]; 1 after ``Shutdown``.

        Args:
            trained_units: units each trial (by request id) has trained so far, when
                the caller knows; otherwise only validated lengths count, and a
                trial that validates only at its end shows no progress until then.
                For a self-paced search: time-metric units, or a fraction of the trial
                when the search has no time metric.
        """
        if self._shutdown is not None:
            return 1.0
        trained = trained_units or {}
        if self.self_paced:  # a finished trial counts whole: it trained what it meant to
            whole = self.method.trial_units
            units = sum(whole if t.finished else min(max(t.reported_time, trained.get(r, 0)), whole)
                        for r, t in self._trials.items())
        else:
            units = sum(max(t.validated_units, trained.get(r, 0))
                        for r, t in self._trials.items())
        return min(max(self.method.progress(units), 0.0), 1.0)

    # Bookkeeping.

    def _bug(self, op: Operation, why: str) -> RuntimeError:
        return RuntimeError(f"search method {self.name!r} emitted {op}: {why}")

    def _apply(self, ops: List[Operation]) -> List[Operation]:
        for op in ops:
            if isinstance(op, Create):
                if op.request_id in self._trials:
                    raise self._bug(op, "request id reused")
                self._trials[op.request_id] = _Trial(
                    op.request_id, op.trial_seed, copy.deepcopy(op.hparams), op.checkpoint_of
                )
                continue
            trial = self._trials.get(op.request_id)  # type: ignore[union-attr]
            if trial is None or trial.finished or trial.close_requested:
                raise self._bug(op, "the trial is unknown, finished or closing")
            if isinstance(op, Train):
                if op.length.unit != self.unit or op.length.units < trial.train_units:
                    raise self._bug(op, f"lengths must be cumulative in {self.unit.value}")
                trial.train_units = op.length.units
            elif isinstance(op, Validate):
                trial.pending_validations.append(trial.train_units)
            elif isinstance(op, Close):
                trial.close_requested = True
            elif not isinstance(op, Checkpoint):
                raise self._bug(op, "unknown operation")
        out = list(ops)
        if self._started and all(t.finished for t in self._trials.values()):
            errored = [t for t in self._trials.values() if t.exited == ExitedReason.ERRORED.value]
            if errored and len(errored) == len(self._trials):
                self._shutdown = Shutdown(
                    True, "its only trial failed with an error" if len(errored) == 1
                    else f"all {len(errored)} trials failed with an error"
                )
            else:
                self._shutdown = Shutdown()
            out.append(self._shutdown)
        return out

    # Snapshots.

    def snapshot(self) -> Dict[str, Any]:
        """All state as JSON-able data (``json.dumps`` works on it)."""
        version, internal, gauss = self._ctx.rng.getstate()
        return {
            "version": _SNAPSHOT_VERSION,
            "searcher": self.name,
            "experiment_seed": self.experiment_seed,
            "rng": [version, list(internal), gauss],
            "next_request_id": self._ctx.next_request_id,
            "started": self._started,
            "capacity": self._capacity,
            "shutdown": None if self._shutdown is None else self._shutdown.to_dict(),
            "trials": [self._trial_dict(t) for _, t in sorted(self._trials.items())],
            "method": self.method.state_dict(),
            "sampler": {"name": self.sampler.name, "state": self.sampler.state_dict()},
        }

    def _trial_dict(self, t: _Trial) -> Dict[str, Any]:
        # No operation or event reaches a finished trial: its entry is built once.
        return self._frozen.entry(t.request_id, t.finished, t.to_dict)

    @classmethod
    def restore(cls, config: Mapping[str, Any], snapshot: Mapping[str, Any]) -> "Searcher":
        """A searcher for ``config`` that continues exactly where ``snapshot`` was taken."""
        searcher = make_searcher(config)
        version_ok = snapshot.get("version") == _SNAPSHOT_VERSION
        if not version_ok or snapshot.get("searcher") != searcher.name:
            raise ValueError(
                f"Expected a version {_SNAPSHOT_VERSION} snapshot of a {searcher.name!r} searcher. "
                f"Received: version={snapshot.get('version')!r}, "
                f"searcher={snapshot.get('searcher')!r}"
            )
        version, internal, gauss = snapshot["rng"]
        searcher._ctx.rng.setstate((version, tuple(internal), gauss))
        searcher._ctx.next_request_id = int(snapshot["next_request_id"])
        searcher._started = bool(snapshot["started"])
        capacity = snapshot.get("capacity")
        searcher._capacity = None if capacity is None else int(capacity)
        shutdown = snapshot.get("shutdown")
        searcher._shutdown = None if shutdown is None else Shutdown.from_dict(shutdown)
        searcher._trials = {
            int(d["request_id"]): _Trial.from_dict(d) for d in snapshot["trials"]
        }
        searcher.method.load_state_dict(snapshot["method"])
        sampler = snapshot.get("sampler") or {"name": "random", "state": {}}
        if sampler["name"] != searcher.sampler.name:
            raise ValueError(
                f"Expected a snapshot of a searcher with sampler {searcher.sampler.name!r}. "
                f"Received: sampler={sampler['name']!r}"
            )
        searcher.sampler.load_state_dict(sampler["state"])
        return searcher


def make_searcher(config: Mapping[str, Any]) -> Searcher:
    """Build the searcher for a normalized experiment config.

    Raises:
        ValueError: naming the offending field (``searcher.name``, ``searcher.divisor``, ...).
    """
    if not isinstance(config, Mapping):
        raise ValueError(f"Expected the experiment config to be a mapping. Received: {config!r}")
    cfg = config.get("searcher")
    if not isinstance(cfg, Mapping):
        raise ValueError(f"Expected searcher to be a mapping. Received: searcher={cfg!r}")
    name = cfg.get("name")
    if name not in SEARCH_METHODS:
        raise ValueError(
            f"Expected searcher.name to be one of {sorted(SEARCH_METHODS)}. "
            f"Received: searcher.name={name!r}"
        )
    hyperparameters = config.get("hyperparameters")
    validate_space(hyperparameters)
    method = SEARCH_METHODS[name].from_config(cfg, hyperparameters)
    reproducibility = config.get("reproducibility") or {}
    seed = require(reproducibility, "experiment_seed", "reproducibility")
    sampler = make_sampler(cfg.get("sampler") or "random", name, hyperparameters)  # type: ignore[arg-type]
    return Searcher(
        method,
        hyperparameters,  # type: ignore[arg-type]
        seed,
        require(cfg, "metric"),
        cfg.get("smaller_is_better", True),
        sampler,
        config,
    )
