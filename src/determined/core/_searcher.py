"""``core.searcher``: the searcher's operations for the trial (Determined 0.38's
``SearcherContext``).

The host hands the trial TRAIN(length), VALIDATE, CHECKPOINT and CLOSE operations.
``operations()`` yields one :class:`SearcherOperation` per TRAIN with ``length``
the cumulative length in the searcher's unit; ``op.report_completed(metric)``
answers the VALIDATE that follows; CLOSE ends the iteration. The chief asks the host
and broadcasts each length to the other ranks (``SearcherMode.WorkersAskChief``).
"""

from __future__ import annotations

import enum
import logging
import math
from typing import Any, Iterator, Optional

from determined.core._distributed import DistributedContext
from determined.core._session import Session, searcher_max_length
from determined.harness._host import OpKind, TrialOp

__all__ = ["SearcherContext", "DummySearcherContext", "SearcherOperation", "SearcherMode",
           "Unit"]

logger = logging.getLogger("determined.core")


class Unit(enum.Enum):
    EPOCHS = "EPOCHS"
    RECORDS = "RECORDS"
    BATCHES = "BATCHES"


class SearcherMode(enum.Enum):
    """``WorkersAskChief``: every rank iterates ``operations()`` in step (the chief
    shares each operation). ``ChiefOnly``: only the chief iterates."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHEIF_ONLY"  # upstream's spelling of the value


def _units(config: dict) -> Optional[Unit]:
    searcher = config.get("searcher") or {}
    names = {"records": Unit.RECORDS, "epochs": Unit.EPOCHS, "batches": Unit.BATCHES}
    if "unit" in searcher:
        return names.get(searcher["unit"])
    raw = searcher.get("max_length")
    if isinstance(raw, dict) and len(raw) == 1:
        return names.get(next(iter(raw)))
    return None


class SearcherOperation:
    """Train until ``length`` (cumulative, in the searcher's unit), validate, then
    ``report_completed(searcher_metric)``."""

    def __init__(self, searcher: Optional["SearcherContext"], length: int, is_chief: bool):
        self._searcher = searcher
        self._length = length
        self._is_chief = is_chief
        self._completed = False

    @property
    def length(self) -> int:
        return self._length

    def report_progress(self, length: float) -> None:
        """Progress towards ``length``, in the same unit (chief only)."""
        if not self._is_chief:
            raise RuntimeError("only the chief (rank 0) may call op.report_progress()")
        if self._completed and length != self._length:
            raise RuntimeError("op.report_progress() after op.report_completed()")
        try:
            units = float(length)
        except (TypeError, ValueError):
            raise TypeError(f"Expected op.report_progress length to be a number. "
                            f"Received: {length!r}") from None
        if self._searcher is not None:
            self._searcher._report_progress(units)

    def report_completed(self, searcher_metric: Any) -> None:
        """The validation this operation asked for is done, with the value of the
        searcher's metric (chief only, once)."""
        if not self._is_chief:
            raise RuntimeError("only the chief (rank 0) may call op.report_completed()")
        if self._completed:
            raise RuntimeError("op.report_completed() may be called once per operation")
        if self._searcher is not None:
            self._searcher._complete(self, searcher_metric)
        self._completed = True


class SearcherContext:
    """The searcher's operations for this trial."""

    def __init__(self, session: Session, distributed: DistributedContext) -> None:
        self._session = session
        self._dist = distributed
        self._pending: Optional[TrialOp] = None

    # -- chief side, talking to the host

    def _next_op(self) -> TrialOp:
        if self._pending is not None:
            op, self._pending = self._pending, None
            return op
        assert self._session.host is not None
        return self._session.host.next_operation()

    def _report_progress(self, units: float) -> None:
        report = getattr(self._session.host, "report_progress", None)
        if callable(report):
            report(units)

    def _complete(self, op: SearcherOperation, metric: Any) -> None:
        host = self._session.host
        assert host is not None
        nxt = self._next_op()
        if nxt.kind is not OpKind.VALIDATE:
            # The searcher wants no validation here (e.g. a stop): keep what it said.
            self._pending = nxt
            return
        name = self._session.searcher_metric or "searcher_metric"
        value = _metric_value(metric)
        steps = self._session.steps_completed or op.length
        last = self._session.last_validation
        if last is not None and last[0] == steps:
            metrics = dict(last[1])
            metrics[name] = value
            host.validate_op_completed(steps, {"validation_metrics": metrics})
        else:
            host.report_validation_completing_op(
                steps, {"validation_metrics": {name: value}, "num_inputs": 0})
            self._session.last_validation = (steps, {name: value})

    def _resume_length(self) -> int:
        """Length of an operation to answer a VALIDATE the trial gets first (it was
        restarted after training but before validating): the steps it resumes at."""
        if self._session.steps_completed:
            return self._session.steps_completed
        env = self._session.env
        if env is not None and env.latest_checkpoint:
            from determined.storage import checkpoint_ref_uuid

            meta = self._session.storage.checkpoint_metadata(
                checkpoint_ref_uuid(env.latest_checkpoint)) or {}
            steps = meta.get("steps_completed", meta.get("batch_number"))
            if isinstance(steps, int):
                return steps
        return 0

    def _chief_ops(self) -> Iterator[SearcherOperation]:
        while True:
            op = self._next_op()
            if op.kind is OpKind.CLOSE:
                return
            if op.kind is OpKind.CHECKPOINT:
                if self._session.latest_checkpoint is None:
                    logger.warning("the searcher asked for a checkpoint; this script has "
                                   "stored none yet")
                continue
            if op.kind is OpKind.TRAIN:
                assert op.length is not None
                length = op.length.units
            else:  # VALIDATE first: the operation's training is done already
                self._pending = op
                length = self._resume_length()
            yield SearcherOperation(self, int(length), True)

    # -- every rank

    def operations(self, searcher_mode: SearcherMode = SearcherMode.WorkersAskChief,
                   auto_ack: bool = True) -> Iterator[SearcherOperation]:
        """The trial's operations, until the searcher closes the trial (or stops it: then
        ``core.preempt.should_preempt()`` is true)."""
        mode = SearcherMode(searcher_mode)
        share = mode is SearcherMode.WorkersAskChief and self._dist.size > 1
        if self._dist.rank != 0:
            if not share:
                raise RuntimeError("searcher.operations(searcher_mode=ChiefOnly) may be "
                                   "called only on the chief (rank 0)")
            while True:
                length = self._dist.broadcast(None)
                if length is None:
                    return
                yield SearcherOperation(None, length, False)
        for op in self._chief_ops():
            if share:
                self._dist.broadcast(op.length)
            yield op
            if not op._completed:
                raise RuntimeError("call op.report_completed(metric) on each searcher "
                                   "operation before asking for the next one")
        if share:
            self._dist.broadcast(None)

    def acknowledge_out_of_ops(self) -> None:
        """Accepted for compatibility; nothing to acknowledge here."""

    def get_configured_units(self) -> Optional[Unit]:
        """The unit of ``searcher.max_length`` (None for a bare number or none)."""
        return _units(self._session.config)

    def get_configured_length(self) -> Optional[float]:
        length = searcher_max_length(self._session.config)
        return None if length is None else length[1]


def _metric_value(metric: Any) -> Any:
    try:
        value = float(metric)
    except (TypeError, ValueError):
        return metric  # custom searchers may take any JSON value
    if math.isnan(value):
        raise ValueError("op.report_completed(): the searcher metric is NaN")
    return value


DummySearcherContext = SearcherContext
