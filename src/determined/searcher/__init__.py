"""Hyperparameter search: events in, operations out; JSON snapshots (SPEC section 3).

Drivers use :func:`make_searcher` and the :class:`Searcher` it returns::

    searcher = make_searcher(config)
    ops = searcher.start()                      # Create / Train / Validate ...
    ops = searcher.on_validation_completed(request_id, {"validation_error": 0.1})
    state = searcher.snapshot()                 # JSON-able
    searcher = Searcher.restore(config, state)  # continues identically

:func:`simulate` plays the driver with synthetic trials.
"""

from determined.searcher._adaptive import AdaptiveSearch
from determined.searcher._adaptive_simple import AdaptiveSimpleSearch
from determined.searcher._asha import AdaptiveASHASearch
from determined.searcher._base import SearchContext, SearchMethod
from determined.searcher._errors import SearcherError
from determined.searcher._grid import GridSearch
from determined.searcher._hparams import grid_points, sample_hparams
from determined.searcher._operations import (
    Checkpoint,
    Close,
    Create,
    ExitedReason,
    Operation,
    Shutdown,
    Train,
    Validate,
    operation_from_dict,
)
from determined.searcher._pbt import PBTSearch, explore
from determined.searcher._random import RandomSearch
from determined.searcher._rungs import BracketRungs, RungResult
from determined.searcher._sampler import RandomSampler, Sampler
from determined.searcher._searcher import SEARCH_METHODS, Searcher, make_searcher
from determined.searcher._sha import SyncHalvingSearch
from determined.searcher._simulate import SimulatedTrial, SimulationResult, simulate
from determined.searcher._single import SingleSearch
from determined.searcher._tpe import TPESampler

__all__ = [
    "AdaptiveASHASearch",
    "AdaptiveSearch",
    "AdaptiveSimpleSearch",
    "BracketRungs",
    "Checkpoint",
    "Close",
    "Create",
    "ExitedReason",
    "GridSearch",
    "Operation",
    "PBTSearch",
    "RandomSampler",
    "RandomSearch",
    "RungResult",
    "SEARCH_METHODS",
    "Sampler",
    "SearchContext",
    "SearchMethod",
    "Searcher",
    "SearcherError",
    "Shutdown",
    "SimulatedTrial",
    "SimulationResult",
    "SingleSearch",
    "SyncHalvingSearch",
    "TPESampler",
    "Train",
    "Validate",
    "explore",
    "grid_points",
    "make_searcher",
    "operation_from_dict",
    "sample_hparams",
    "simulate",
]
