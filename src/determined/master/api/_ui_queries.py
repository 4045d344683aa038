"""Read-only queries behind the web UI's routes (``_ui.py``): lists with aggregates,
metric series and the change feed, each one SQL round trip instead of one per row.

They read through the store's read sessions (``Store._read``) and its ORM models; they
never write.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import weakref
from typing import Any, Dict, Iterable, List, Optional, Tuple

import sqlalchemy as sa

from determined.common.log_view import WORKDIR_LIKE, shows
from determined.master.db import Store
from determined.master.db import _models as m
from determined.master.views import iso

__all__ = ["ExperimentRow", "experiment_fingerprints", "experiment_rows", "metric_rows", "new_metric_rows",
           "new_log_lines", "trial_rows", "trial_row", "error_summary", "ERROR_SUMMARY_CHARS",
           "max_ids", "log_lines", "model_fingerprints"]

#: The most characters of a trial's ``error_summary`` (its error is up to 2,000).
ERROR_SUMMARY_CHARS = 200

ExperimentRow = Dict[str, Any]


def searcher_metric(config: Dict[str, Any]) -> Tuple[str, bool]:
    """The searcher's metric name and whether smaller is better."""
    searcher = config.get("searcher") if isinstance(config.get("searcher"), dict) else {}
    return str(searcher.get("metric") or ""), bool(searcher.get("smaller_is_better", True))


def _trial_aggregates(ids: Optional[List[int]]) -> Any:
    t = m.Trial.__table__
    agg = (sa.select(t.c.experiment_id, sa.func.count(t.c.id), sa.func.min(t.c.best_validation),
                     sa.func.max(t.c.best_validation))
           .group_by(t.c.experiment_id))
    return agg.where(t.c.experiment_id.in_(ids)) if ids is not None else agg


def experiment_fingerprints(store: Store) -> Dict[int, Tuple[Any, ...]]:
    """Per experiment, the columns the list shows that change (no config: cheap to poll)."""
    e = m.Experiment.__table__
    query = sa.select(e.c.id, e.c.state, e.c.progress, e.c.archived, e.c.description,
                      sa.type_coerce(e.c.labels, sa.Text), e.c.end_time)
    with store._read() as s:
        counts = {row[0]: tuple(row[1:]) for row in s.execute(_trial_aggregates(None))}
        return {row[0]: tuple(row[1:]) + counts.get(row[0], ()) for row in s.execute(query)}


def model_fingerprints(store: Store) -> Dict[str, Tuple[Any, ...]]:
    """Per registry model name, what an edit or a new version changes: its id (a model
    deleted and created again is another), description, metadata, last update and
    version count. One query, no versions or checkpoints read."""
    r = m.RegistryModel.__table__
    v = m.ModelVersion.__table__
    counts = (sa.select(v.c.model_id, sa.func.count().label("n"))
              .group_by(v.c.model_id).subquery())
    query = (sa.select(r.c.name, r.c.id, r.c.description, sa.type_coerce(r.c.metadata, sa.Text),
                       r.c.last_updated_time, sa.func.coalesce(counts.c.n, 0))
             .outerjoin(counts, counts.c.model_id == r.c.id))
    with store._read() as s:
        return {row[0]: tuple(row[1:]) for row in s.execute(query)}


def experiment_rows(store: Store, ids: Optional[List[int]] = None) -> List[ExperimentRow]:
    """Experiments (all, or those of ``ids``) with owner, trial count and best metric;
    ``duration``: seconds from its start to its end, to now while it runs, to when it
    was paused while it is PAUSED."""
    agg = _trial_aggregates(ids)
    e = m.Experiment.__table__
    u = m.User.__table__
    query = (sa.select(e.c.id, e.c.state, e.c.description, e.c.labels, e.c.archived,
                       e.c.progress, e.c.start_time, e.c.end_time, e.c.paused_at, e.c.parent_id,
                       u.c.username)
             .join(u, e.c.owner_id == u.c.id).order_by(e.c.id))
    if ids is not None:
        query = query.where(e.c.id.in_(ids))
    with store._read() as s:
        counts = {row[0]: row[1:] for row in s.execute(agg)}
        rows = list(s.execute(query))
    searchers = _searchers(store, [(r.id, r.start_time) for r in rows])
    out = []
    for r in rows:
        name, metric, smaller = searchers.get((r.id, r.start_time), (None, "", True))
        n, lo, hi = counts.get(r.id, (0, None, None))
        end = r.end_time or (r.paused_at if r.state == "PAUSED" else None)
        out.append({
            "id": r.id, "state": r.state, "description": r.description or "",
            "labels": list(r.labels or []), "archived": bool(r.archived),
            "progress": r.progress or 0.0, "owner": r.username, "parent_id": r.parent_id,
            "start_time": iso(r.start_time), "end_time": iso(r.end_time),
            "duration": ((end or datetime.datetime.now(datetime.timezone.utc)) - r.start_time
                         ).total_seconds() if r.start_time is not None else None,
            "searcher": name,
            "metric": metric, "smaller_is_better": smaller,
            "best_metric": lo if smaller else hi, "num_trials": n,
        })
    return out


_searcher_cache: "weakref.WeakKeyDictionary[Store, Dict[Any, Tuple[Any, str, bool]]]" = (
    weakref.WeakKeyDictionary())


def _searchers(store: Store, keys: List[Tuple[int, Any]]) -> Dict[Any, Tuple[Any, str, bool]]:
    """Searcher name, metric and direction per ``(id, start_time)`` (start time too, as
    SQLite may reuse a deleted experiment's id). They never change after creation, so
    each config (large JSON) is read once, not at every list."""
    cache = _searcher_cache.setdefault(store, {})
    missing = {k[0]: k for k in keys if k not in cache}
    e = m.Experiment.__table__
    ids = list(missing)
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        with store._read() as s:
            for id, config in s.execute(sa.select(e.c.id, e.c.config).where(e.c.id.in_(chunk))):
                config = config if isinstance(config, dict) else {}
                searcher = config.get("searcher")
                name = searcher.get("name") if isinstance(searcher, dict) else None
                cache[missing[id]] = (name,) + searcher_metric(config)
    return {k: cache[k] for k in keys if k in cache}


def error_summary(error: Optional[str]) -> Optional[str]:
    """A trial's error in one line of at most :data:`ERROR_SUMMARY_CHARS`: its head and
    its last line (a traceback's exception, a process's last output), as the trial's log
    line says it (``engine.trial_error``); None without an error.

    Example:
        >>> error_summary("Trial failed (exit code 1): Traceback (most recent call last):\\n"
        ...               '  File "a.py", line 1\\nValueError: no rows')
        'Trial failed (exit code 1): ValueError: no rows'
    """
    if not error:
        return None
    lines = [line.strip() for line in error.strip().splitlines()]
    lines = [line for line in lines if line and line != "…"]
    head, _, first = lines[0].partition(": ") if lines else ("", "", "")
    last = lines[-1] if len(lines) > 1 else first
    text = f"{head}: {last}" if head.startswith("Trial failed") and last else lines[0]
    return text if len(text) <= ERROR_SUMMARY_CHARS else text[:ERROR_SUMMARY_CHARS - 1] + "…"


def _trial_row(tr: Any) -> Dict[str, Any]:
    return {
        "id": tr.id, "experiment_id": tr.experiment_id, "request_id": tr.request_id,
        "state": tr.state, "hparams": tr.hparams, "seed": tr.seed,
        "restarts": tr.restarts, "total_batches": tr.total_batches,
        "best_validation": tr.best_validation, "latest_checkpoint": tr.latest_checkpoint,
        "start_time": iso(tr.start_time), "end_time": iso(tr.end_time),
        "error_summary": error_summary(tr.error),
    }


def trial_rows(store: Store, experiment_id: int) -> List[Dict[str, Any]]:
    """The experiment's trials as JSON rows (by id), with ``error_summary``
    (:func:`error_summary`), not the whole error (up to 2,000 characters a trial): the
    trial's own page reads that (:func:`trial_row`)."""
    return [_trial_row(tr) for tr in store.list_trials(experiment_id)]


def trial_row(store: Store, id: int) -> Dict[str, Any]:
    """Trial ``id``'s row with ``error`` too: why its process last failed, whole (bounded:
    ``engine.ERROR_CHARS``), or None. Raises NotFoundError."""
    tr = store.get_trial(id)
    return dict(_trial_row(tr), error=tr.error)


def _metric_query(trial_ids: Iterable[int], kind: Optional[str]) -> Any:
    t = m.Metrics.__table__
    query = sa.select(t.c.id, t.c.trial_id, t.c.kind, t.c.total_batches, t.c.end_time,
                      t.c.metrics).where(t.c.trial_id.in_(list(trial_ids)))
    if kind is not None:
        query = query.where(t.c.kind == kind)
    return query


def metric_rows(store: Store, trial_ids: List[int], kind: Optional[str],
                with_batches: bool = False) -> List[Any]:
    """Metric rows ``(id, trial_id, kind, total_batches, end_time, metrics[,
    batch_json])`` of the trials (of every kind for ``kind`` None), by trial and
    batches; one query, so one snapshot of the table."""
    t = m.Metrics.__table__
    query = _metric_query(trial_ids, kind)
    if with_batches:  # the raw JSON text: per_batch_values parses only what it needs
        query = query.add_columns(sa.type_coerce(t.c.batch_metrics, sa.Text).label("batch_json"))
    query = query.order_by(t.c.trial_id, t.c.total_batches)
    with store._read() as s:
        return list(s.execute(query))


def new_metric_rows(store: Store, trial_ids: List[int], after_id: int,
                    limit: int = 5000) -> List[Any]:
    """Rows stored after id ``after_id`` for the trials, oldest first.

    Following by id is safe: the store's group-commit writer is the only writer of
    metrics and log lines, and its rows become visible in id order (see
    ``Engines.order_commits``), so no row with an id at or below one already read can
    appear later. Metrics ids are never reused either (migration 0011)."""
    if not trial_ids:
        return []
    t = m.Metrics.__table__
    query = (_metric_query(trial_ids, None).where(t.c.id > after_id)
             .order_by(t.c.id).limit(limit))
    with store._read() as s:
        return list(s.execute(query))


def max_ids(store: Store, trial_ids: List[int]) -> Tuple[int, int]:
    """The newest metrics id and log id among the trials (0 when none)."""
    if not trial_ids:
        return 0, 0
    mt = m.Metrics.__table__
    lt = m.TrialLog.__table__
    with store._read() as s:
        return (_max_id(s, mt, mt.c.trial_id.in_(trial_ids)),
                _max_id(s, lt, lt.c.trial_id.in_(trial_ids)))


def _max_id(session: Any, table: sa.Table, *where: Any) -> int:
    """The largest id of ``table``'s rows that match ``where`` (0 when none)."""
    return int(session.scalar(sa.select(sa.func.max(table.c.id)).where(*where)) or 0)


def newest_ids(store: Store, trial_id: Optional[int] = None,
               task_id: Optional[str] = None) -> Tuple[int, int, int]:
    """Where tails without a start id start: the newest metrics row of all, and the
    newest log line of ``trial_id`` and of ``task_id`` (0 when none or not given).

    A row stored later has a larger id, also on PostgreSQL (see :func:`new_metric_rows`).
    The log tails start at their owner's newest line, not the newest of all: SQLite
    gives a new line the largest id in the table plus one, which is not larger than an
    id already handed out once the newest lines were deleted (with their experiment).
    Metrics ids never come back (migration 0011)."""
    from determined.master.db._tasks import TaskLogRow

    lt, tt = m.TrialLog.__table__, TaskLogRow.__table__
    with store._read() as s:
        return (_max_id(s, m.Metrics.__table__),
                _max_id(s, lt, lt.c.trial_id == trial_id) if trial_id is not None else 0,
                _max_id(s, tt, tt.c.task_id == task_id) if task_id is not None else 0)


def new_log_lines(store: Store, trial_id: int, after_id: int, limit: int = 2000) -> List[Any]:
    lt = m.TrialLog.__table__
    query = (sa.select(lt.c.id, lt.c.timestamp, lt.c.line)
             .where(lt.c.trial_id == trial_id, lt.c.id > after_id).order_by(lt.c.id).limit(limit))
    with store._read() as s:
        return list(s.execute(query))


def log_lines(store: Store, trial_id: int, search: str, after_id: int,
              limit: int) -> List[Any]:
    """Log lines containing ``search`` (case-insensitive) as the web UI shows them
    (a traceback's paths relative to the model directory: ``common.log_view``), oldest first."""
    lt = m.TrialLog.__table__
    query = sa.select(lt.c.id, lt.c.timestamp, lt.c.line).where(lt.c.trial_id == trial_id)
    if not search:
        with store._read() as s:
            return list(s.execute(query.where(lt.c.id > after_id).order_by(lt.c.id)
                                  .limit(limit)))
    escaped = search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    # The raw line has the text, or names a working directory that the view shortens
    # (a frame's path): both are read, and matched as shown.
    query = query.where(sa.or_(lt.c.line.ilike(f"%{escaped}%", escape="\\"),
                               lt.c.line.like(WORKDIR_LIKE))).order_by(lt.c.id)
    found: List[Any] = []
    while len(found) < limit:
        with store._read() as s:
            page = list(s.execute(query.where(lt.c.id > after_id).limit(limit)))
        found += [row for row in page if shows(row.line, search)]
        if len(page) < limit:
            break
        after_id = page[-1].id
    return found[:limit]


def per_batch_values(batch_json: Optional[str], metric: str) -> List[float]:
    """One workload's per-batch values of ``metric`` (NaN where missing) from the stored
    JSON list of flat dicts. A regular expression finds the values without building a
    million dicts; rows it cannot read exactly (nested values) are parsed as JSON."""
    if not batch_json:
        return []
    pattern = _patterns.get(metric)
    if pattern is None:
        pattern = _patterns[metric] = re.compile(
            '"' + re.escape(json.dumps(metric)[1:-1]) + '":(-?Infinity|NaN|-?[0-9][0-9.eE+-]*)')
    found = pattern.findall(batch_json)
    if len(found) == batch_json.count("{"):
        return list(map(float, found))
    values = [b.get(metric) if isinstance(b, dict) else None for b in json.loads(batch_json)]
    return [float(v) if type(v) in (float, int) else math.nan for v in values]


_patterns: Dict[str, Any] = {}
