"""Metrics and trial logs: the high-rate writes, group-committed (see ``_writer.py``)."""

import datetime
import functools
from collections.abc import Mapping, Sequence  # not typing's: isinstance per row is hot
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import sqlalchemy as sa

from determined.master.db import _models as m
from determined.master.db._base import StoreBase
from determined.master.db._checks import check_dict, check_int
from determined.master.db._errors import NotFoundError, StoreError
from determined.master.db._logs import insert_log_rows, log_rows, read_log_lines
from determined.master.db._records import (
    METRIC_KINDS,
    TRAINING,
    VALIDATION,
    LogLine,
    MetricsRecord,
    MetricsRowLike,
)
from determined.master.db._types import encode_json, utcnow
from determined.master.db._writer import Handler

__all__ = ["MetricsMixin"]

_METRICS = "metrics"
_TRAINING_PROGRESS = "metrics+progress"  # training rows that also set trials.total_batches
_LOGS = "logs"


_ROW_KEYS = frozenset({"trial_id", "kind", "total_batches", "metrics", "batch_metrics",
                       "num_inputs"})
#: The columns of a checked metrics row, in the order of its tuple (see _metrics_row).
_COLUMNS = ("trial_id", "kind", "total_batches", "end_time", "metrics", "batch_metrics",
            "num_inputs")
_TRIAL, _KIND, _BATCHES = 0, 1, 2
# A checked row: its column values, bound as the driver takes them (JSON as text, the
# time as the dialect stores it), so the writer hands them to executemany untouched.
_Row = Tuple[int, str, int, Any, str, Optional[str], Optional[int]]


def _json(where: str, value: Any) -> str:
    """``value`` as compact JSON text (NaN and infinities kept, as JSONText stores them)."""
    try:
        return encode_json(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"Expected {where} to be JSON-serializable ({exc}). "
                         f"Received: {where}={value!r}"[:2000]) from None


def _plain_row(tid: Any, kind: Any, batches: Any, now: Any, metrics: Any, per_batch: Any,
               inputs: Any) -> Optional[_Row]:
    """The row of values of the plain types a trial runner reports (the hot path), or
    None for anything else (then :func:`_metrics_row` checks it and says what is wrong)."""
    if type(tid) is int and type(batches) is int and batches >= 0 \
            and kind in METRIC_KINDS and type(metrics) is dict \
            and (per_batch is None or (type(per_batch) is list
                                       and all(type(b) is dict for b in per_batch))) \
            and (inputs is None or (type(inputs) is int and inputs >= 0)):
        try:
            return (tid, kind, batches, now, encode_json(metrics),
                    None if per_batch is None else encode_json(per_batch), inputs)
        except (TypeError, ValueError, RecursionError):
            return None
    return None


def _metrics_row(row: MetricsRowLike, now: Any, where: str) -> _Row:
    """Check one metrics row (tuple, NamedTuple or mapping) and return its column values;
    ``now`` is the end time, already bound for the dialect."""
    if type(row) is dict and _ROW_KEYS.issuperset(row):  # the trial runners' rows: fast path
        plain = _plain_row(row.get("trial_id"), row.get("kind"), row.get("total_batches"), now,
                           row.get("metrics"), row.get("batch_metrics"), row.get("num_inputs"))
        if plain is not None:
            return plain
    if isinstance(row, Mapping):
        unknown = set(row) - _ROW_KEYS
        if unknown:
            raise ValueError(f"Unexpected keys {sorted(unknown)} in {where}. Received: {row!r}")
        values = dict(row)
    else:
        fields = ("trial_id", "kind", "total_batches", "metrics", "batch_metrics")
        if not 4 <= len(row) <= 5:
            raise ValueError(
                f"Expected {where} to be (trial_id, kind, total_batches, metrics"
                f"[, batch_metrics]). Received: {row!r}"
            )
        values = dict(zip(fields, row))
    kind = values.get("kind")
    if kind not in METRIC_KINDS:
        raise ValueError(
            f"Expected {where}.kind to be one of {', '.join(METRIC_KINDS)}. Received: kind={kind!r}"
        )
    batch_metrics = values.get("batch_metrics")
    if batch_metrics is not None:
        if isinstance(batch_metrics, (str, bytes, Mapping)) or not isinstance(
            batch_metrics, Sequence
        ):
            raise ValueError(
                f"Expected {where}.batch_metrics to be a list of dicts or None. "
                f"Received: batch_metrics={batch_metrics!r}"
            )
        batch_metrics = [dict(b) for b in batch_metrics]
    return (
        check_int(f"{where}.trial_id", values.get("trial_id")),
        kind,
        check_int(f"{where}.total_batches", values.get("total_batches"), minimum=0),
        now,
        _json(f"{where}.metrics", check_dict(f"{where}.metrics", values.get("metrics"))),
        None if batch_metrics is None else _json(f"{where}.batch_metrics", batch_metrics),
        check_int(f"{where}.num_inputs", values.get("num_inputs"), minimum=0, optional=True),
    )


def _mark(paramstyle: str) -> str:
    """The driver's positional parameter marker: sqlite3's ``?``, psycopg's ``%s``."""
    return "?" if paramstyle == "qmark" else "%s"


def _iso(value: Any) -> Any:
    return value.isoformat(" ") if isinstance(value, datetime.datetime) else value


def _metrics_record(row: m.Metrics) -> MetricsRecord:
    return MetricsRecord(
        id=row.id,
        trial_id=row.trial_id,
        kind=row.kind,
        total_batches=row.total_batches,
        end_time=row.end_time,
        metrics=row.metrics,
        batch_metrics=row.batch_metrics,
    )


class MetricsMixin(StoreBase):
    # -- writes (group-committed: each returns once its rows are committed) ------------

    def add_training_metrics(
        self,
        trial_id: int,
        total_batches: int,
        metrics: Dict[str, Any],
        batch_metrics: Optional[List[Dict[str, Any]]] = None,
        set_progress: bool = False,
        num_inputs: Optional[int] = None,
    ) -> bool:
        """Store a training workload's metrics (SPEC 8: ``avg_metrics`` etc.).

        With ``set_progress``, the trial's ``total_batches`` becomes ``total_batches``
        in the same (group-committed) transaction, which saves a write per report.

        Idempotent per ``(trial_id, total_batches)``: reporting the same workload again
        (a retried request) keeps the first row.

        Returns:
            True if stored, False if that workload was already stored.
        """
        row = _metrics_row(
            {"trial_id": trial_id, "kind": TRAINING, "total_batches": total_batches,
             "metrics": metrics, "batch_metrics": batch_metrics, "num_inputs": num_inputs},
            self._bound_now(), "row",
        )
        return bool(self._submit(_TRAINING_PROGRESS if set_progress else _METRICS, [row]))

    def add_training_metrics_many(
        self,
        trial_id: int,
        reports: Sequence[Tuple[Any, ...]],
    ) -> int:
        """Store several training workloads of one trial, ``(total_batches, metrics,
        batch_metrics[, num_inputs])`` each, and set its ``total_batches`` to the last one's, in one
        group-committed job; idempotent per workload like :meth:`add_training_metrics`.

        Returns:
            How many rows were new.
        """
        now = self._bound_now()
        rows = []
        for report in reports:
            try:
                batches, metrics, per_batch = report[0], report[1], report[2]
                inputs = report[3] if len(report) > 3 else None
            except (TypeError, IndexError, KeyError):
                break
            row = _plain_row(trial_id, TRAINING, batches, now, metrics, per_batch, inputs)
            if row is None:
                break
            rows.append(row)
        else:
            return int(self._submit(_TRAINING_PROGRESS, rows)) if rows else 0
        # Not plain values: check every report to say what is wrong.
        for i, report in enumerate(reports):
            if not isinstance(report, Sequence) or not 3 <= len(report) <= 4:
                raise ValueError(f"Expected reports[{i}] to be (total_batches, metrics, "
                                 f"batch_metrics[, num_inputs]). Received: {report!r}"[:2000])
        rows = [
            _metrics_row({"trial_id": trial_id, "kind": TRAINING, "total_batches": report[0],
                          "metrics": report[1], "batch_metrics": report[2],
                          "num_inputs": report[3] if len(report) > 3 else None},
                         now, f"reports[{i}]")
            for i, report in enumerate(reports)
        ]
        return int(self._submit(_TRAINING_PROGRESS, rows))

    def add_validation_metrics(
        self, trial_id: int, total_batches: int, metrics: Dict[str, Any],
        num_inputs: Optional[int] = None,
    ) -> bool:
        """Store a validation's metrics; idempotent like :meth:`add_training_metrics`."""
        row = _metrics_row({"trial_id": trial_id, "kind": VALIDATION,
                            "total_batches": total_batches, "metrics": metrics,
                            "num_inputs": num_inputs}, self._bound_now(), "row")
        return bool(self._submit(_METRICS, [row]))

    def add_metrics_bulk(self, rows: Iterable[MetricsRowLike]) -> int:
        """Store many workloads' metrics in one transaction (all or nothing).

        Args:
            rows: :class:`MetricsRow` s, or tuples ``(trial_id, kind, total_batches,
                metrics[, batch_metrics])``, or mappings with those keys; ``kind`` is
                ``"training"`` or ``"validation"``.

        Returns:
            How many rows were new (duplicates of stored workloads are skipped).

        Example:
            >>> store.add_metrics_bulk([(7, "training", 100, {"loss": 0.5}),
            ...                         (7, "validation", 100, {"error": 0.1})])
            2
        """
        now = self._bound_now()
        checked = [_metrics_row(row, now, f"rows[{i}]") for i, row in enumerate(rows)]
        if not checked:
            return 0
        return int(self._submit(_METRICS, checked))

    def add_logs(self, trial_id: int, lines: Sequence[str]) -> int:
        """Append log lines of a trial (one transaction); returns how many."""
        rows = log_rows("trial_id", check_int("trial_id", trial_id), lines)
        if not rows:
            return 0
        return int(self._submit(_LOGS, rows))

    # -- reads ------------------------------------------------------------------------------

    def list_metrics(self, trial_id: int, kind: Optional[str] = None) -> List[MetricsRecord]:
        """The trial's metrics by ascending ``total_batches`` (training before validation)."""
        if kind is not None and kind not in METRIC_KINDS:
            raise ValueError(
                f"Expected kind to be one of {', '.join(METRIC_KINDS)} or None. "
                f"Received: kind={kind!r}"
            )
        query = sa.select(m.Metrics).where(m.Metrics.trial_id == trial_id)
        if kind is not None:
            query = query.where(m.Metrics.kind == kind)
        query = query.order_by(m.Metrics.total_batches, m.Metrics.kind)
        with self._read() as s:
            return [_metrics_record(row) for row in s.scalars(query)]

    def get_logs(
        self, trial_id: int, after_id: int = 0, limit: int = 1000, tail: Optional[int] = None
    ) -> List[LogLine]:
        """Log lines with ``id > after_id``, oldest first.

        Args:
            limit: at most this many, from the oldest (``--head N``).
            tail: if given, the newest ``tail`` lines instead (``--tail N``).

        Follow a log by passing the last id seen as ``after_id``.
        """
        with self._read() as s:
            return read_log_lines(s, m.TrialLog.__table__.c.trial_id, trial_id, after_id, limit,
                                  tail)

    # -- group-commit handlers (run on the writer thread) -------------------------------

    def _writer_handlers(self) -> Dict[str, Handler]:
        return {**super()._writer_handlers(), _METRICS: self._insert_metrics,
                _LOGS: functools.partial(insert_log_rows, m.TrialLog.__table__),
                _TRAINING_PROGRESS: self._insert_training_progress}

    @functools.cached_property
    def _bind_end_time(self) -> Callable[[Any], Any]:
        column = m.Metrics.__table__.c.end_time
        bind = column.type.bind_processor(self._engines.write.dialect) or (lambda v: v)
        if self.backend != "sqlite":
            return bind
        # SQLAlchemy leaves datetimes to sqlite3, whose default adapter writes
        # isoformat(" ") (a Python call per row inside executemany): do it once.
        return lambda v: _iso(bind(v))

    def _bound_now(self) -> Any:
        """The current time as the dialect stores ``metrics.end_time`` (one conversion
        per call, not per row)."""
        return self._bind_end_time(utcnow())

    def _insert_training_progress(self, conn: sa.Connection, jobs: List[List[_Row]]) -> List[int]:
        counts = self._insert_metrics(conn, jobs)
        latest: Dict[int, int] = {}
        for rows in jobs:  # in submission order: the last report of a trial wins
            for row in rows:
                latest[row[_TRIAL]] = row[_BATCHES]
        mark = _mark(conn.dialect.paramstyle)
        conn.exec_driver_sql(f"UPDATE trials SET total_batches = {mark} WHERE id = {mark}",
                             [(tb, tid) for tid, tb in latest.items()])
        return counts

    def _insert_metrics(self, conn: sa.Connection, jobs: List[List[_Row]]) -> List[int]:
        # The rows are bound already: the driver's executemany takes them as they are
        # (SQLAlchemy's per-row parameter processing cost more than the INSERT; building
        # and compiling its statements cost more per commit than the writes). One
        # executemany per job: its row count is how many of the job's rows were new
        # (a duplicate key, also of an earlier job in this group, inserts nothing).
        sql = self._metrics_insert_sql(conn.dialect.paramstyle)
        return [conn.exec_driver_sql(sql, rows).rowcount for rows in jobs]

    @staticmethod
    def _metrics_insert_sql(paramstyle: str) -> str:
        mark = _mark(paramstyle)
        return (f"INSERT INTO metrics ({', '.join(_COLUMNS)}) "
                f"VALUES ({', '.join([mark] * len(_COLUMNS))}) "
                "ON CONFLICT (trial_id, kind, total_batches) DO NOTHING")

    def _explain_write_error(
        self, conn: sa.Connection, kind: str, rows: List[Any], exc: Exception
    ) -> Exception:
        if kind not in (_METRICS, _TRAINING_PROGRESS, _LOGS):
            return super()._explain_write_error(conn, kind, rows, exc)
        trial_ids = sorted({row["trial_id"] if isinstance(row, dict) else row[_TRIAL]
                            for row in rows})
        known = set(conn.scalars(sa.select(m.Trial.id).where(m.Trial.id.in_(trial_ids))))
        missing = [t for t in trial_ids if t not in known]
        if missing:
            return NotFoundError("trial", missing[0] if len(missing) == 1 else missing)
        return StoreError(f"Could not store {kind} rows: {exc}")
