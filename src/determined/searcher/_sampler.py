"""Where new trials' hyperparameters come from: ``searcher.sampler``.

A :class:`Sampler` is told every searcher result (``observe``) and asked for each new
trial's hyperparameters (``suggest``). It draws randomness only from the experiment RNG
it is handed, and keeps all other state in ``state_dict()``, so a searcher restored
from its snapshot suggests exactly what the original would have.

- ``random`` (:class:`RandomSampler`, the default): every leaf sampled independently
  (SPEC 3); it keeps no state.
- ``tpe`` (:class:`~determined.searcher.TPESampler`): a tree-structured Parzen
  estimator fit on every configuration's result at its longest training length
  (longer-trained configurations rank first).
"""

from __future__ import annotations

import abc
import random
from typing import Any, Dict, Mapping

from determined.searcher._hparams import sample_hparams

__all__ = ["Sampler", "RandomSampler", "SAMPLERS", "make_sampler"]


class Sampler(abc.ABC):
    """The source of new trials' hyperparameters (see the module docstring)."""

    #: The name used in ``searcher.sampler``.
    name: str = ""

    @abc.abstractmethod
    def suggest(self, space: Mapping[str, Any], rng: random.Random) -> Dict[str, Any]:
        """Hyperparameters for a new trial; ``rng`` is the experiment RNG."""

    def observe(self, hparams: Mapping[str, Any], units: int, metric: float) -> None:
        """A trial with ``hparams`` validated after ``units`` of training; ``metric`` is
        signed (smaller is better; ``inf`` for a trial that exited early)."""

    def state_dict(self) -> Dict[str, Any]:
        """All mutable state, JSON-able."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""


class RandomSampler(Sampler):
    """Independent uniform draws per leaf (the behaviour of every searcher before samplers).

    >>> RandomSampler().suggest({"x": {"type": "int", "minval": 1, "maxval": 1}}, random.Random(0))
    {'x': 1}
    """

    name = "random"

    def suggest(self, space: Mapping[str, Any], rng: random.Random) -> Dict[str, Any]:
        return sample_hparams(space, rng)


def _tpe(space: Mapping[str, Any]) -> Sampler:
    from determined.searcher._tpe import TPESampler

    return TPESampler(space)


#: ``searcher.sampler`` -> factory taking the hyperparameter space.
SAMPLERS = {"random": lambda space: RandomSampler(), "tpe": _tpe}

#: Search methods that accept a sampler other than ``random``.
SAMPLER_METHODS = ("random", "adaptive_asha", "adaptive", "adaptive_simple")


def make_sampler(name: Any, method: str, space: Mapping[str, Any]) -> Sampler:
    """The sampler named by ``searcher.sampler`` for search method ``method``.

    Raises:
        ValueError: an unknown name, or ``tpe`` for a method that does not sample new
            trials from results (``single``, ``grid``, ``pbt``).
    """
    if name not in SAMPLERS:
        raise ValueError(
            f"Expected searcher.sampler to be one of {sorted(SAMPLERS)}. "
            f"Received: searcher.sampler={name!r}"
        )
    if name != "random" and method not in SAMPLER_METHODS:
        raise ValueError(
            f"Expected searcher.sampler 'random' for searcher {method!r} (only "
            f"{', '.join(SAMPLER_METHODS)} take another). Received: searcher.sampler={name!r}"
        )
    return SAMPLERS[name](space)
