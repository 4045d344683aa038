"""The contract every search method keeps, and the context it draws trials from.

A :class:`SearchMethod` is told of trial events and answers with operations. It owns
only its algorithm's bookkeeping; the :class:`~determined.searcher.Searcher` around it
validates the operations, tracks trial state, extracts and signs the metric, and emits
``Shutdown``. The contract:

- Events arrive one at a time (no threads). The metric given to
  ``on_validation_completed`` is already signed: smaller is better.
- ``on_validation_completed`` is called once per ``Validate`` op, in order.
- After ``on_trial_exited_early`` (or after the method emitted ``Close``) the method
  never emits another op for that trial. An exited trial needs no ``Close``.
- ``Train`` lengths are cumulative and non-decreasing per trial.
- New trials come only from :meth:`SearchContext.create`, which draws ids, hparams and
  seeds from the experiment RNG; a method draws from ``ctx.rng`` for nothing else
  except sampling (PBT's explore).
- All state is returned by ``state_dict()`` as JSON-able data; ``load_state_dict``
  on a method built from the same arguments makes it behave identically.

A *self-paced* method (``unit`` is None: a time-metric search, or ``single``/``random``/
``grid`` without ``max_length``) emits no ``Train`` or ``Validate``: its trials' scripts
train their own length. It hears their validations through ``on_validation_reported``
and a trial that ended on its own through ``on_trial_finished``.
"""

from __future__ import annotations

import abc
import random
from typing import Any, Dict, List, Mapping, Optional

from determined.config import Unit
from determined.searcher._operations import Create, ExitedReason, Operation
from determined.searcher._sampler import RandomSampler, Sampler
from determined.searcher._time_metric import TimeMetric

__all__ = ["SearchContext", "SearchMethod", "WORST_METRIC", "encode_metric", "decode_metric"]

TRIAL_SEED_BOUND = 2**31

#: The signed metric given to trials that exited early.
WORST_METRIC = float("inf")


def encode_metric(metric: float) -> Optional[float]:
    """JSON-safe metric: ``None`` stands for the worst (infinite) value."""
    return None if metric == WORST_METRIC else metric


def decode_metric(value: Optional[float]) -> float:
    return WORST_METRIC if value is None else float(value)


class SearchContext:
    """The experiment RNG, the hyperparameter space, the sampler and request-id assignment.

    Args:
        hyperparameters: The normalized hyperparameter space.
        rng: The one RNG of the experiment.
        next_request_id: The id the next ``Create`` gets.
        sampler: Where new trials' hyperparameters come from (default: random).
    """

    def __init__(
        self,
        hyperparameters: Mapping[str, Any],
        rng: random.Random,
        next_request_id: int = 1,
        sampler: Optional[Sampler] = None,
    ) -> None:
        self.hyperparameters = hyperparameters
        self.rng = rng
        self.next_request_id = next_request_id
        self.sampler = sampler if sampler is not None else RandomSampler()

    def sample(self) -> Dict[str, Any]:
        """A full hparam assignment for a new trial, from the sampler."""
        return self.sampler.suggest(self.hyperparameters, self.rng)

    def create(
        self, hparams: Optional[Dict[str, Any]] = None, checkpoint_of: Optional[int] = None
    ) -> Create:
        """A ``Create`` with the next request id; hparams are sampled first, then the seed."""
        if hparams is None:
            hparams = self.sample()
        seed = self.rng.randrange(TRIAL_SEED_BOUND)
        op = Create(self.next_request_id, seed, hparams, checkpoint_of)
        self.next_request_id += 1
        return op


class SearchMethod(abc.ABC):
    """One search algorithm: events in, operations out (see the module docstring)."""

    #: The name used in ``searcher.name``.
    name: str = ""

    #: ``searcher.time_metric``/``max_time`` when the method decides on reported values.
    time_metric: Optional[TimeMetric] = None

    @property
    @abc.abstractmethod
    def unit(self) -> Optional[Unit]:
        """The unit every ``Train`` length of this method uses; None when self-paced."""

    @property
    def self_paced(self) -> bool:
        """Trials train their own length: no ``Train``/``Validate`` operations."""
        return self.unit is None

    @property
    def trial_units(self) -> int:
        """What one whole self-paced trial counts for progress: ``max_time``, or 1 when
        the trials' progress comes as a fraction."""
        return self.time_metric.max_time if self.time_metric else 1

    @abc.abstractmethod
    def initial_operations(self, ctx: SearchContext) -> List[Operation]:
        """Operations at experiment start (initial creates with their work)."""

    def on_trial_created(self, ctx: SearchContext, request_id: int) -> List[Operation]:
        """The driver created the trial for a ``Create``."""
        return []

    @abc.abstractmethod
    def on_validation_completed(
        self, ctx: SearchContext, request_id: int, metric: float
    ) -> List[Operation]:
        """A ``Validate`` finished; ``metric`` is signed so that smaller is better."""

    def on_trial_closed(self, ctx: SearchContext, request_id: int) -> List[Operation]:
        """A ``Close`` finished."""
        return []

    def on_validation_reported(
        self, ctx: SearchContext, request_id: int, time: float, metric: float
    ) -> List[Operation]:
        """A self-paced trial reported a validation: ``time`` is its time metric's value
        (its steps when the search has no time metric), ``metric`` signed. The default
        decides nothing."""
        return []

    def on_trial_finished(self, ctx: SearchContext, request_id: int) -> List[Operation]:
        """The trial's own code ended it successfully without a ``Close`` (a script that
        exited 0). By default it is treated as a trial that stopped early: whatever it
        still owed counts as the worst result, but not as a failure."""
        return self.on_trial_exited_early(ctx, request_id, ExitedReason.USER_REQUESTED_STOP)

    def on_capacity_changed(self, ctx: SearchContext, capacity: int) -> List[Operation]:
        """``capacity`` trials can run at once for this experiment (may come before
        ``initial_operations``). Methods whose concurrency is automatic follow it; the
        default ignores it."""
        return []

    @abc.abstractmethod
    def on_trial_exited_early(
        self, ctx: SearchContext, request_id: int, reason: ExitedReason
    ) -> List[Operation]:
        """The trial stopped for good without a ``Close`` (see :class:`ExitedReason`)."""

    def rung_table(self) -> Optional[List[Any]]:
        """The method's brackets and rungs (``BracketRungs``, see ``_rungs``) with the
        results it recorded at each; None for a method without rungs."""
        return None

    @abc.abstractmethod
    def progress(self, units_done: int) -> float:
        """Fraction of the search done; ``units_done`` sums validated training lengths."""

    @abc.abstractmethod
    def state_dict(self) -> Dict[str, Any]:
        """All mutable state, JSON-able."""

    @abc.abstractmethod
    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
